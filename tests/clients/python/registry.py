"""Images and a registry for the Python client's image tests, as tests/lib/images.mjs and
tests/lib/registry.mjs give them to the node suites: the images users bring
(tests/lib/images/build.sh: busybox with no libc, a musl image with a zstd layer, Debian minbase
with python3 and an app image on it; none holds anything of sbx's), Debian's docker-registry
(the CNCF distribution) on loopback, plain or with Basic auth, skopeo to push them, and a proxy
in front of a registry that slows blob transfers down and tells how far each one went."""

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.path.join(TOP, "tests", "lib", "images", "build.sh")
BLOB = re.compile(r"/blobs/(sha256:[0-9a-f]{64})")


def user_images():
    """The four OCI layouts, built once per test run into the run's state dir (where the node
    suites' userImages() puts them too): busybox, musl, minbase, minbase-app."""
    out = os.path.join(os.environ["SBX_TEST_STATE"], "user-images")
    if not os.path.exists(os.path.join(out, "minbase-app", "index.json")):
        subprocess.run(["bash", BUILD, out], check=True, stdout=subprocess.DEVNULL)
    return {n: os.path.join(out, n) for n in ("busybox", "musl", "minbase", "minbase-app")}


def layout_digests(layout):
    """An OCI layout's image (one manifest): its manifest digest, its layers' blob digests and
    their uncompressed digests (diff_ids: a ``docker save`` archive's layers)."""
    def blob(digest):
        with open(os.path.join(layout, "blobs", "sha256", digest[7:])) as f:
            return json.load(f)

    with open(os.path.join(layout, "index.json")) as f:
        md = json.load(f)["manifests"][0]["digest"]
    man = blob(md)
    return {"manifest": md, "layers": [x["digest"] for x in man["layers"]],
            "diff_ids": blob(man["config"]["digest"])["rootfs"]["diff_ids"]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def push(layout, ref, creds=None, fmt=None):
    """skopeo copy of an OCI layout's latest to HOST/NAME:TAG (plain HTTP on loopback)."""
    args = ["skopeo", "copy", "-q", "--dest-tls-verify=false"]
    if creds:
        args += ["--dest-creds", creds]
    if fmt:
        args += ["--format", fmt]
    subprocess.run(args + [f"oci:{layout}:latest", f"docker://{ref}"], check=True,
                   stdout=subprocess.DEVNULL)


def docker_archive(layout, path, ref):
    """The image as a ``docker save`` archive at path, tagged ref."""
    if os.path.exists(path):
        os.unlink(path)
    subprocess.run(["skopeo", "copy", "-q", f"oci:{layout}:latest",
                    f"docker-archive:{path}:{ref}"], check=True, stdout=subprocess.DEVNULL)
    return path


def _bcrypt(password):
    with warnings.catch_warnings():  # crypt is deprecated, and the registry wants bcrypt
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))


class Registry:
    """docker-registry on 127.0.0.1 with its storage in a temp dir; ``basic``: (user, password)
    for htpasswd (Basic) auth."""

    def __init__(self, basic=None):
        self.dir = tempfile.mkdtemp(prefix="sbx-pyregistry-")
        self.host = f"127.0.0.1:{free_port()}"
        conf = ["version: 0.1", "log:", "  level: warn", "storage:", "  filesystem:",
                f"    rootdirectory: {self.dir}/data", "http:", f"  addr: {self.host}"]
        if basic:
            with open(os.path.join(self.dir, "htpasswd"), "w") as f:
                f.write(f"{basic[0]}:{_bcrypt(basic[1])}\n")
            conf += ["auth:", "  htpasswd:", "    realm: sbx-test",
                     f"    path: {self.dir}/htpasswd"]
        cfg = os.path.join(self.dir, "config.yml")
        with open(cfg, "w") as f:
            f.write("\n".join(conf) + "\n")
        self.log = open(os.path.join(self.dir, "registry.log"), "w")
        self.proc = subprocess.Popen(["docker-registry", "serve", cfg], stdout=self.log,
                                     stderr=self.log)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1).close()
                return
            except urllib.error.HTTPError as e:
                if e.code == 401:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("docker-registry did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Transfer:
    """One blob GET through the proxy: bytes sent of size, and how it ended."""

    def __init__(self, size):
        self.size = size
        self.sent = 0
        self.done = False
        self.aborted = False  # the client (sbxd) closed the connection before the end


class SlowProxy:
    """A plain HTTP proxy on 127.0.0.1 in front of a registry: blob bodies go at most
    ``bytes_per_sec`` (0: as fast as they come), and each blob GET is recorded in
    ``transfers[digest]`` (a list of Transfer)."""

    CHUNK = 64 << 10

    def __init__(self, target_host, bytes_per_sec=0):
        self.target = target_host
        self.bytes_per_sec = bytes_per_sec
        self.transfers = {}
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy._relay(self)

            def do_HEAD(self):
                proxy._relay(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _relay(self, h):
        up = http.client.HTTPConnection(self.target, timeout=60)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
        try:
            up.request(h.command, h.path, headers=headers)
            ans = up.getresponse()
            m = BLOB.search(h.path) if h.command == "GET" and ans.status == 200 else None
            length = ans.getheader("content-length")
            body = None if length is not None or h.command == "HEAD" else ans.read()
            h.send_response(ans.status)
            for k, v in ans.getheaders():
                if k.lower() not in ("connection", "keep-alive", "transfer-encoding"):
                    h.send_header(k, v)
            if body is not None:
                h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if h.command == "HEAD":
                return
            if body is not None:
                h.wfile.write(body)
                return
            t = Transfer(int(length))
            if m:
                with self.lock:
                    self.transfers.setdefault(m.group(1), []).append(t)
            self._copy(ans, h, t)
        finally:
            up.close()

    def _copy(self, ans, h, t):
        start = time.monotonic()
        while t.sent < t.size:
            chunk = ans.read(min(self.CHUNK, t.size - t.sent))
            if not chunk:
                break
            try:
                h.wfile.write(chunk)
                h.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                t.aborted = True
                h.close_connection = True
                return
            t.sent += len(chunk)
            if self.bytes_per_sec:
                ahead = t.sent / self.bytes_per_sec - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        t.done = t.sent == t.size

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
