"""Templates and storage through the client, sync and async: the templates a create takes
(built-in, then a snapshot), the run's storage pool with what a sandbox's disk holds, and a
pool of a test's own grown while a sandbox on it writes; what cannot be grown is refused."""

import asyncio
import json
import os
import urllib.request

import pytest

from conftest import Sbxd, wait_for
from sbx import (AsyncStorage, AsyncTemplates, BadRequestError, ConflictError, Sbx, Storage,
                 Templates)

MiB = 1 << 20


def test_templates_list_what_a_create_takes(sb):
    ts = Templates.list()
    names = [t.name for t in ts]
    assert names == sorted(names)
    base = next(t for t in ts if t.name == "base")
    assert (base.kind, base.cpu_count, base.memory_mb, base.disk_size_mb) == ("builtin", 2, 1024,
                                                                             1024)
    assert base.layers >= 1 and base.template_id is None
    assert "code-interpreter-v1" in names
    # a snapshot (E2B's API makes one) is listed, and its name starts a sandbox
    req = urllib.request.Request(
        f"{os.environ['E2B_API_URL']}/sandboxes/{sb.id}/snapshots", method="POST",
        data=b'{"name": "py-snap"}', headers={"X-API-KEY": os.environ["E2B_API_KEY"],
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        snap_id = json.load(r)["snapshotID"]
    try:
        snap = next(t for t in asyncio.run(AsyncTemplates.list()) if t.name == "py-snap")
        assert snap.kind == "snapshot"
        with Sbx.create(template="py-snap") as s:
            assert s.exec(["true"]).ok
    finally:
        req = urllib.request.Request(f"{os.environ['E2B_API_URL']}/templates/{snap_id}",
                                     method="DELETE",
                                     headers={"X-API-KEY": os.environ["E2B_API_KEY"]})
        urllib.request.urlopen(req).close()
    assert "py-snap" not in [t.name for t in Templates.list()]


def test_storage_pool_and_what_a_disk_holds(sb):
    st = Storage.get()
    assert st.backend == "pool" and st.pool is not None
    p = st.pool
    assert p.kind == "image" and p.root.endswith("/pool")
    assert p.image_bytes == 4 << 30  # scripts/test-node.sh's --storage-pool 4G
    assert 0 < p.used < p.size and p.used + p.free == p.size and p.reserve >= 0
    mine = next(d for d in st.sandboxes if d.id == sb.id)
    assert (mine.state, mine.disk_mb, mine.limit) == ("running", 1024, 1024 * MiB)
    sb.sh("head -c 24M /dev/urandom > /home/user/blob && sync").check()

    def holds():
        d = next(d for d in Storage.get().sandboxes if d.id == sb.id)
        return d if d.referenced >= 24 * MiB else None

    d = wait_for(holds, 40, "the pool's figures to show the 24 MiB")
    assert d.exclusive >= 24 * MiB and d.referenced <= 1024 * MiB
    sb.sh("rm /home/user/blob").check()
    a = asyncio.run(AsyncStorage.get())
    assert a.backend == "pool" and any(x.id == sb.id for x in a.sandboxes)


def test_grow_the_pool_while_a_sandbox_writes():
    d = Sbxd("--storage-pool", "512M")
    try:
        cfg = d.config(0)
        before = Storage.get(config=cfg)
        assert (before.backend, before.pool.kind, before.pool.image_bytes) == ("pool", "image",
                                                                               512 * MiB)
        with Sbx.create(template="base", config=cfg) as s:
            s.sh("head -c 8M /dev/urandom > /home/user/a && sync").check()
            after = Storage.grow("768M", config=cfg)
            assert after.pool.image_bytes == 768 * MiB
            assert after.pool.size >= before.pool.size + 200 * MiB, (before.pool, after.pool)
            assert any(x.id == s.id for x in after.sandboxes)
            assert s.sh("head -c 8M /dev/urandom > /home/user/b && echo still").stdout == \
                "still\n"
            # bytes, from the async client
            grown = asyncio.run(AsyncStorage.grow(1 << 30, config=cfg))
            assert grown.pool.image_bytes == 1 << 30
            assert Storage.get(config=cfg).pool.image_bytes == 1 << 30
        with pytest.raises(BadRequestError, match="that large already"):  # it only grows
            Storage.grow("512M", config=cfg)
        with pytest.raises(BadRequestError):
            Storage.grow("lots", config=cfg)
        with pytest.raises(TypeError):
            Storage.grow(1.5, config=cfg)  # type: ignore[arg-type]
    finally:
        d.close()


def test_no_pool_to_grow():
    d = Sbxd("--disk", "tmpfs")
    try:
        st = Storage.get(config=d.config(0))
        assert (st.backend, st.pool, st.sandboxes) == ("tmpfs", None, [])
        with pytest.raises(ConflictError, match="without a storage pool"):
            Storage.grow("1G", config=d.config(0))
    finally:
        d.close()
