"""Fixtures of the Python client's suites. scripts/test-python.sh runs them against a real sbxd
(started by scripts/test-node.sh with a fresh state dir; E2B_API_URL / E2B_API_KEY exported,
which the client reads when SBX_URL / SBX_API_KEY are unset, as the CLI does)."""

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "clients", "python"))

from sbx import Config, Sbx  # noqa: E402

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


BUILD = os.environ.get("SBX_TEST_BUILD") or os.path.join(TOP, "build")


TEST_POOL = "1G"  # a test sbxd's storage pool (preallocated: the default is a quarter of the disk)


class Sbxd:
    """An sbxd of a test's own on a fixed port with its own state dir (the run's templates
    linked in); ``tls``: (cert, key, ca) paths, served as https. Its storage pool is TEST_POOL
    unless ``--storage-pool`` or ``--disk`` is given."""

    def __init__(self, *args, tls=None):
        self.state = tempfile.mkdtemp(prefix="sbx-pyretry-")
        os.symlink(os.path.join(os.environ["SBX_TEST_STATE"], "templates"),
                   os.path.join(self.state, "templates"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.verify = tls[2] if tls else True
        self.args = list(args) + (["--tls-cert", tls[0], "--tls-key", tls[1]] if tls else [])
        if "--storage-pool" not in args and "--disk" not in args:
            self.args += ["--storage-pool", TEST_POOL]
        self.proc = None
        self.start()
        with open(os.path.join(self.state, "keys")) as f:
            self.key = f.readline().strip()

    def start(self):
        env = dict(os.environ, SBX_JAILER=os.path.join(BUILD, "jailer", "sbx-jailer"),
                   SBX_AGENT=os.path.join(BUILD, "guest-agent", "sbx-agent"))
        log = open(os.path.join(self.state, "sbxd.log"), "a")
        self.proc = subprocess.Popen([os.path.join(BUILD, "server", "sbxd"), "--listen",
                                      f"127.0.0.1:{self.port}", "--state-dir", self.state,
                                      "--pool-size", "0", *self.args],
                                     stdout=log, stderr=log, env=env)
        def up():
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return True
            except OSError:
                return False
        wait_for(up, 20, "sbxd to listen")

    def crash(self):
        self.proc.send_signal(signal.SIGKILL)  # sandboxes live on, connections break
        self.proc.wait()

    def config(self, retries):
        return Config.resolve(url=self.url, api_key=self.key, max_retries=retries,
                              verify=self.verify)

    def close(self):
        if self.proc.poll() is None:
            for s in Sbx.list(config=self.config(2)):
                Sbx.connect(s.id, config=self.config(2)).kill()
            self.proc.terminate()
            self.proc.wait()
        # sbxd unmounts its pool when no sandbox dir is left; never remove through a mount
        subprocess.run(["umount", "-l", os.path.join(self.state, "pool")],
                       stderr=subprocess.DEVNULL, check=False)
        shutil.rmtree(self.state, ignore_errors=True)
