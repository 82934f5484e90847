"""Images pulled from a real registry through the client, sync and async: Debian's
docker-registry on loopback with the images users bring (tests/lib/images), plain and behind
Basic auth. The progress arrives as the pull goes (the callback runs before the template
exists), the pulled template starts sandboxes, failures come typed, and a pull stopped by the
client (an exception in its callback, a cancelled task, a closed stream) stops on the server:
the blob transfer through a slowed proxy is abandoned, no template appears, sbxd says so."""

import asyncio
import gzip
import os
import shutil
import subprocess

import pytest

from conftest import sbxd_log, wait_for
from registry import (TOP, Registry, SlowProxy, layout_digests, push, user_images)
from sbx import (AsyncImages, BadRequestError, ForbiddenError, Images, NotFoundError,
                 ServiceUnavailableError, Sbx, Templates, UnavailableError)

MKOCI = os.path.join(TOP, "tests", "lib", "images", "mkoci.py")
DATA_MB = 48  # the cancelled image's own layer: random, so never in the layer store
SLOW = 4 << 20  # bytes a second through the slowed proxy: ~12 s for that layer


def tid(host, path):
    """The template a pull of host/path:tag is named after."""
    return f"{host.replace(':', '-')}-{path.replace('/', '-')}"


def data_image(out, tmp):
    """busybox's layer plus a layer of random data (an image carrying a model or a data set)."""
    bb = user_images()["busybox"]
    base = os.path.join(tmp, "busybox.tar")
    with gzip.open(os.path.join(bb, "blobs", "sha256",
                                layout_digests(bb)["layers"][0][7:]), "rb") as fi, \
            open(base, "wb") as fo:
        shutil.copyfileobj(fi, fo)
    tree = os.path.join(tmp, "data")
    os.makedirs(os.path.join(tree, "data"))
    with open(os.path.join(tree, "data", "weights.bin"), "wb") as f:
        f.write(os.urandom(DATA_MB << 20))
    subprocess.run(["python3", MKOCI, out, "--layer", base, "--layer", tree, "--cmd", '["sh"]',
                    "--workdir", "/data"], check=True)
    return out


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    imgs = user_images()
    r = Registry()
    basic = Registry(basic=("bob", "pw-of-bob"))
    proxy = SlowProxy(r.host, SLOW)
    try:
        push(imgs["minbase-app"], f"{r.host}/py/minbase-app:v1")
        push(imgs["busybox"], f"{r.host}/py/busybox:v1", fmt="v2s2")
        push(imgs["musl"], f"{r.host}/py/musl:v1")
        push(imgs["busybox"], f"{basic.host}/team/busybox:v1", creds="bob:pw-of-bob")
        tmp = str(tmp_path_factory.mktemp("data-image"))
        data = data_image(os.path.join(tmp, "layout"), tmp)
        push(data, f"{r.host}/py/data:v1")
        yield {"host": r.host, "basic": basic.host, "proxy": proxy, "imgs": imgs,
               "data_layer": layout_digests(data)["layers"][1]}
    finally:
        proxy.stop()
        basic.stop()
        r.stop()


def _cleanup(*templates):
    for t in templates:
        try:
            Images.delete(t)
        except NotFoundError:
            pass


def test_pull_progress_as_it_goes_then_start_sandboxes(reg):
    ref = f"{reg['host']}/py/minbase-app:v1"
    want = layout_digests(reg["imgs"]["minbase-app"])
    events, early = [], []

    def on_progress(ev):
        if not events:  # the first event: the pull has not made its template yet
            try:
                Images.get("py-live")
                early.append("template already there")
            except NotFoundError:
                early.append("not yet")
        events.append(ev)

    img = Images.pull(ref, name="py-live", on_progress=on_progress)
    try:
        assert early == ["not yet"]
        assert (img.template, img.name, img.tag, img.format) == ("py-live", "py-live", "latest",
                                                                  "oci")
        assert img.digest == want["manifest"]
        assert [x.digest for x in img.layers] == want["layers"]
        assert (img.source.reference, img.source.registry) == (ref, reg["host"])
        assert (img.user, img.working_dir) == ("", "/app")
        assert img.cmd == ["python3", "/app/hello.py"]
        st = [e.status for e in events]
        assert st[0] == "resolving" and st[-1] == "template", st
        assert "resolved" in st and f"pulling {ref}" in events[0].message
        done = [e.layer for e in events if e.status == "layer-done"]
        assert sorted((x.index, x.count, x.digest) for x in done) == [
            (i + 1, 2, d) for i, d in enumerate(want["layers"])]
        assert all(x.bytes == x.total > 0 for x in done if not x.reused)
        with Sbx.create(template="py-live") as sb:
            assert sb.exec(["python3", "/app/hello.py"]).check().stdout == "app on python 3\n"
            assert sb.exec(["id", "-un"]).stdout == "user\n"
            assert sb.sh("pwd").stdout == "/home/user\n"
        listed = {t.name: t for t in Templates.list()}
        assert (listed["py-live"].kind, listed["py-live"].layers) == ("image", 2)
        # the same reference again, as another template: nothing transferred, all reused
        again = Images.pull(ref, name="py-live:v2")
        assert again.template == "py-live:v2" and all(x.reused for x in again.layers)
        assert again.digest == img.digest
    finally:
        _cleanup("py-live", "py-live:v2")


def test_pull_stream_and_named_after_the_image(reg):
    ref = f"{reg['host']}/py/busybox:v1"
    with Images.pull_stream(ref) as p:
        seen = [ev.status for ev in p]
    assert p.closed and seen[0] == "resolving" and seen[-1] == "template"
    img = p.image
    try:
        assert img.template == tid(reg["host"], "py/busybox:v1")
        assert img.format == "docker"  # pushed as a Docker v2 schema 2 manifest
        assert Images.get(img.template).digest == img.digest
        with Sbx.create(template=img.template) as sb:  # no libc at all, and no user "user"
            assert sb.exec(["id", "-un"]).stdout == "user\n"
            assert sb.exec(["busybox", "echo", "static"]).stdout == "static\n"
    finally:
        _cleanup(img.template)


def test_pull_failures_are_typed(reg):
    host, basic = reg["host"], reg["basic"]
    with pytest.raises(NotFoundError) as e:
        Images.pull(f"{host}/py/busybox:nosuchtag")
    assert "nosuchtag" in e.value.message
    with pytest.raises(BadRequestError):
        Images.pull("Not/A:Valid:Ref")
    with pytest.raises(ForbiddenError) as e:
        Images.pull(f"{basic}/team/busybox:v1")
    assert e.value.code == "registry_denied" and "wants credentials" in e.value.message
    with pytest.raises(ForbiddenError, match="refused the credentials"):
        Images.pull(f"{basic}/team/busybox:v1", username="bob", password="wrong")
    img = Images.pull(f"{basic}/team/busybox:v1", name="py-basic", username="bob",
                      password="pw-of-bob")
    assert img.template == "py-basic"
    _cleanup("py-basic")
    with pytest.raises(ServiceUnavailableError) as e:  # nothing listens there
        Images.pull("127.0.0.1:1/py/busybox:v1")
    assert e.value.code == "unreachable" and isinstance(e.value, UnavailableError)
    with pytest.raises(ValueError):  # the client sees these itself
        Images.pull(f"{basic}/team/busybox:v1", username="bob")
    with pytest.raises(ValueError):
        Images.pull("", name="x")


class Stop(Exception):
    pass


def _cancelled(ref):
    """How many pulls of ref sbxd logged as cancelled."""
    return sum(1 for line in sbxd_log().splitlines()
               if f"pull of '{ref}' failed" in line and "cancelled" in line)


def _assert_stopped_on_server(reg, ref, before, template):
    """The data layer's transfer was abandoned by sbxd before its end, no template came of it,
    and sbxd's log says the pull was cancelled (once more than ``before``)."""
    def ended():
        ts = reg["proxy"].transfers.get(reg["data_layer"]) or []
        return ts[-1] if ts and (ts[-1].aborted or ts[-1].done) else None

    t = wait_for(ended, 20, "the blob transfer to end")
    assert t.aborted and t.sent < t.size, (t.sent, t.size)
    wait_for(lambda: _cancelled(ref) > before, 10, "sbxd to log the cancelled pull")
    with pytest.raises(NotFoundError):
        Images.get(template)


def _moving(reg, ev):
    """Whether ev says the data layer's transfer is under way."""
    return ev.status == "layer" and ev.layer.digest == reg["data_layer"] and ev.layer.bytes > 0


def test_an_exception_in_the_callback_cancels_the_pull_on_the_server(reg):
    ref = f"{reg['proxy'].host}/py/data:v1"
    before = _cancelled(ref)

    def on_progress(ev):
        if _moving(reg, ev):
            raise Stop()

    with pytest.raises(Stop):
        Images.pull(ref, on_progress=on_progress)
    _assert_stopped_on_server(reg, ref, before, tid(reg["proxy"].host, "py/data:v1"))


def test_closing_a_pull_stream_cancels_it(reg):
    ref = f"{reg['proxy'].host}/py/data:v1"
    before = _cancelled(ref)
    p = Images.pull_stream(ref, name="py-closed")
    for ev in p:
        if _moving(reg, ev):
            p.close()
    assert p.closed and p.image is None
    _assert_stopped_on_server(reg, ref, before, "py-closed")


def test_async_pull_and_cancelling_the_task(reg):
    ref = f"{reg['proxy'].host}/py/data:v1"
    before = _cancelled(ref)

    async def main():
        seen = []

        async def note(ev):  # a coroutine callback is awaited
            seen.append(ev.status)

        img = await AsyncImages.pull(f"{reg['host']}/py/musl:v1", name="py-amusl",
                                     on_progress=note)
        assert img.template == "py-amusl" and seen[-1] == "template"
        async with AsyncImages.pull_stream(f"{reg['host']}/py/musl:v1", name="py-amusl",
                                           tag="v2") as p:
            statuses = [ev.status async for ev in p]
        assert p.image.template == "py-amusl:v2" and statuses[0] == "resolving"
        assert all(x.reused for x in p.image.layers)
        for t in ("py-amusl", "py-amusl:v2"):
            await AsyncImages.delete(t)

        moving = asyncio.Event()
        task = asyncio.create_task(AsyncImages.pull(
            ref, name="py-acancel", on_progress=lambda ev: _moving(reg, ev) and moving.set()))
        await asyncio.wait_for(moving.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    _assert_stopped_on_server(reg, ref, before, "py-acancel")
