"""Fixtures of the Python client's suites. scripts/test-python.sh runs them against a real sbxd
(started by scripts/test-node.sh with a fresh state dir; E2B_API_URL / E2B_API_KEY exported,
which the client reads when SBX_URL / SBX_API_KEY are unset, as the CLI does)."""

import glob
import os
import sys
import time

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "clients", "python"))

from sbx import Sbx  # noqa: E402

assert os.environ.get("E2B_API_URL") and os.environ.get("E2B_API_KEY"), \
    "run through scripts/test-python.sh (a real sbxd)"


@pytest.fixture(scope="module")
def sb():
    s = Sbx.create(template="base", env={"GREETING": "hi there"}, metadata={"suite": "py"})
    yield s
    s.kill()


def agent_pids(sandbox_id):
    """Host pids in the sandbox's cgroup (its agent among them)."""
    for f in glob.glob(f"/sys/fs/cgroup/*/sbx/{sandbox_id}/cgroup.procs"):
        with open(f) as fh:
            pids = [int(x) for x in fh.read().split()]
        if pids:
            return pids
    return []


def inotify_instances(sandbox_id):
    """inotify instances open in the sandbox's processes, read on the host (root)."""
    n = 0
    for pid in agent_pids(sandbox_id):
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                n += os.readlink(fd) == "anon_inode:inotify"
            except OSError:
                pass
    return n


def wait_for(pred, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def sbxd_log():
    """sbxd's log of this run (one JSON line per finished request)."""
    with open(os.path.join(os.environ["SBX_TEST_STATE"], "sbxd.log"), errors="replace") as f:
        return f.read()
