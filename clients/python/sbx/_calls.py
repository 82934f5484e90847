"""Every operation of the /v1 API (api/openapi/sbx-v1.yaml) and how a call to it is built and
its answer read. The sync and async clients share all of it: they differ only in how bytes move.

``OPERATIONS`` lists the operations by their ``operationId`` with method, path and whether the
spec marks them ``x-sbx-idempotent``; a test compares it with the spec, so an operation added to
the API without a client method fails the build.
"""

from __future__ import annotations

import json as _json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from .errors import SbxTimeoutError
from .models import (Entry, ExecResult, ImageInfo, ProcessInfo, RunCodeResult, SandboxInfo,
                     SearchResult, StorageInfo, TemplateInfo)

# operationId → (method, path, idempotent)
OPERATIONS: Dict[str, tuple] = {
    "listSandboxes": ("GET", "/v1/sandboxes", True),
    "createSandbox": ("POST", "/v1/sandboxes", False),
    "getSandbox": ("GET", "/v1/sandboxes/{id}", True),
    "killSandbox": ("DELETE", "/v1/sandboxes/{id}", False),
    "pauseSandbox": ("POST", "/v1/sandboxes/{id}/pause", False),
    "resumeSandbox": ("POST", "/v1/sandboxes/{id}/resume", False),
    "exec": ("POST", "/v1/sandboxes/{id}/exec", False),
    "runCode": ("POST", "/v1/sandboxes/{id}/run-code", False),
    "listProcesses": ("GET", "/v1/sandboxes/{id}/processes", True),
    "startProcess": ("POST", "/v1/sandboxes/{id}/processes", False),
    "getProcess": ("GET", "/v1/sandboxes/{id}/processes/{pid}", True),
    "killProcess": ("DELETE", "/v1/sandboxes/{id}/processes/{pid}", False),
    "processLogs": ("GET", "/v1/sandboxes/{id}/processes/{pid}/logs", True),
    "signalProcess": ("POST", "/v1/sandboxes/{id}/processes/{pid}/signal", False),
    "writeStdin": ("POST", "/v1/sandboxes/{id}/processes/{pid}/stdin", False),
    "readFile": ("GET", "/v1/sandboxes/{id}/files", True),
    "writeFile": ("PUT", "/v1/sandboxes/{id}/files", True),
    "listDir": ("GET", "/v1/sandboxes/{id}/fs/list", True),
    "stat": ("GET", "/v1/sandboxes/{id}/fs/stat", True),
    "mkdir": ("POST", "/v1/sandboxes/{id}/fs/mkdir", False),
    "move": ("POST", "/v1/sandboxes/{id}/fs/move", False),
    "remove": ("DELETE", "/v1/sandboxes/{id}/fs", False),
    "search": ("GET", "/v1/sandboxes/{id}/fs/search", True),
    "watch": ("GET", "/v1/sandboxes/{id}/fs/watch", True),
    "terminal": ("GET", "/v1/sandboxes/{id}/terminal", False),
    "importImage": ("POST", "/v1/images", False),
    "listImages": ("GET", "/v1/images", True),
    "getImage": ("GET", "/v1/images/{id}", True),
    "deleteImage": ("DELETE", "/v1/images/{id}", False),
    "pullImage": ("POST", "/v1/images/pull", True),
    "listTemplates": ("GET", "/v1/templates", True),
    "getStorage": ("GET", "/v1/storage", True),
    "growStorage": ("POST", "/v1/storage/grow", False),
}

EXEC_TIMEOUT_MAX_MS = 300_000  # the API's maximum timeout_ms for exec and run-code
WAIT_SLICE_MS = 50_000  # longest wait_ms of one getProcess call (the API's maximum)
LANGS = ("python", "node", "bash", "sh")


@dataclass
class Call:
    """One request: the operation, its path parameters, query, body, and the reader of its
    answer. ``extra_timeout`` seconds are added to the configured request timeout for calls that
    wait on purpose (exec with a long timeout_ms, a long wait); ``stream`` calls are read as
    they arrive, without a read timeout."""

    op: str
    params: Dict[str, Any] = field(default_factory=dict)
    query: Dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: Optional[bytes] = None
    parse: Callable[[int, bytes], Any] = lambda status, body: None
    extra_timeout: float = 0.0
    stream: bool = False
    upload: Any = None  # a file object or an iterator of bytes, streamed (not retried)
    headers: Dict[str, str] = field(default_factory=dict)

    @property
    def method(self) -> str:
        return OPERATIONS[self.op][0]

    @property
    def idempotent(self) -> bool:
        return OPERATIONS[self.op][2]

    def path(self) -> str:
        p = OPERATIONS[self.op][1]
        for k, v in self.params.items():
            p = p.replace("{" + k + "}", quote(str(v), safe=""))
        return p

    def query_items(self) -> Dict[str, str]:
        out = {}
        for k, v in self.query.items():
            if v is None:
                continue
            out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        return out


def _json_body(body: bytes) -> Any:
    return _json.loads(body) if body else None


def _drop_none(d: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _cmd(cmd: Union[str, Sequence[str]]) -> Union[str, list]:
    if isinstance(cmd, str):
        return cmd
    argv = list(cmd)
    if not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError("cmd must be a string (run by sh -c) or a non-empty list of strings")
    return argv


def _timeout_ms(timeout_ms: Optional[int]) -> float:
    return (timeout_ms or 30_000) / 1000.0


def _user(user: Optional[str]) -> Optional[str]:
    if user not in (None, "user", "root"):
        raise ValueError('user must be "user" or "root"')
    return user


# ---- sandboxes ----

def create_sandbox(template: str, timeout: Optional[int], env: Optional[Mapping[str, str]],
                   metadata: Optional[Mapping[str, str]], cpu_count: Optional[int],
                   memory_mb: Optional[int], disk_mb: Optional[int]) -> Call:
    body = _drop_none({"template": template, "timeout": timeout,
                       "env": dict(env) if env is not None else None,
                       "metadata": dict(metadata) if metadata is not None else None,
                       "cpu_count": cpu_count, "memory_mb": memory_mb, "disk_mb": disk_mb})
    return Call("createSandbox", json=body, extra_timeout=60.0,
                parse=lambda s, b: SandboxInfo.from_json(_json_body(b)))


def list_sandboxes() -> Call:
    return Call("listSandboxes", parse=lambda s, b: [SandboxInfo.from_json(x) for x in
                                                     _json_body(b).get("sandboxes", [])])


def get_sandbox(sid: str) -> Call:
    return Call("getSandbox", {"id": sid}, parse=lambda s, b: SandboxInfo.from_json(_json_body(b)))


def kill_sandbox(sid: str) -> Call:
    return Call("killSandbox", {"id": sid})


def pause_sandbox(sid: str, keep_memory: bool) -> Call:
    return Call("pauseSandbox", {"id": sid}, json={"keep_memory": keep_memory},
                extra_timeout=60.0, parse=lambda s, b: SandboxInfo.from_json(_json_body(b)))


def resume_sandbox(sid: str, timeout: Optional[int]) -> Call:
    return Call("resumeSandbox", {"id": sid}, json=_drop_none({"timeout": timeout}),
                extra_timeout=60.0, parse=lambda s, b: SandboxInfo.from_json(_json_body(b)))


# ---- exec and run-code ----

def exec_(sid: str, cmd: Union[str, Sequence[str]], timeout_ms: Optional[int],
          user: Optional[str]) -> Call:
    body = _drop_none({"cmd": _cmd(cmd), "timeout_ms": timeout_ms, "user": _user(user)})
    return Call("exec", {"id": sid}, json=body, extra_timeout=_timeout_ms(timeout_ms),
                parse=lambda s, b: ExecResult.from_json(_json_body(b)["result"]))


def run_code(sid: str, code: str, lang: str, timeout_ms: Optional[int],
             user: Optional[str]) -> Call:
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}")
    body = _drop_none({"code": code, "lang": lang, "timeout_ms": timeout_ms,
                       "user": _user(user)})
    return Call("runCode", {"id": sid}, json=body, extra_timeout=_timeout_ms(timeout_ms),
                parse=lambda s, b: RunCodeResult.from_json(_json_body(b)))


# ---- managed processes ----

def start_process(sid: str, cmd: Union[str, Sequence[str]], cwd: Optional[str],
                  env: Optional[Mapping[str, str]], user: Optional[str], stdin: bool) -> Call:
    body = _drop_none({"cmd": _cmd(cmd), "cwd": cwd, "env": dict(env) if env else None,
                       "user": _user(user), "stdin": stdin or None})
    return Call("startProcess", {"id": sid}, json=body,
                parse=lambda s, b: ProcessInfo.from_json(_json_body(b)))


def list_processes(sid: str) -> Call:
    return Call("listProcesses", {"id": sid}, parse=lambda s, b: [
        ProcessInfo.from_json(x) for x in _json_body(b).get("processes", [])])


def get_process(sid: str, pid: int, wait_ms: int = 0) -> Call:
    return Call("getProcess", {"id": sid, "pid": pid}, query={"wait_ms": wait_ms or None},
                extra_timeout=wait_ms / 1000.0,
                parse=lambda s, b: ProcessInfo.from_json(_json_body(b)))


def wait_slice_ms(deadline: Optional[float]) -> int:
    """wait_ms of the next getProcess call of a wait ending at the monotonic deadline."""
    if deadline is None:
        return WAIT_SLICE_MS
    return max(0, min(int((deadline - time.monotonic()) * 1000), WAIT_SLICE_MS))


def wait_deadline(timeout: Optional[float]) -> Optional[float]:
    """The monotonic deadline of a wait of timeout seconds (None: no limit)."""
    return None if timeout is None else time.monotonic() + timeout


def process_waited(info: ProcessInfo, deadline: Optional[float], timeout: Optional[float]) -> bool:
    """One step of a process wait, after a getProcess answered info: True once the process
    has exited; SbxTimeoutError when the deadline passed first; False to ask again."""
    if not info.running:
        return True
    if deadline is not None and time.monotonic() >= deadline:
        raise SbxTimeoutError(f"process {info.pid} still runs after {timeout} s")
    return False


def kill_process(sid: str, pid: int) -> Call:
    return Call("killProcess", {"id": sid, "pid": pid})


def process_logs(sid: str, pid: int, offset: int, follow: bool) -> Call:
    return Call("processLogs", {"id": sid, "pid": pid},
                query={"offset": offset or None, "follow": follow or None}, stream=follow,
                parse=lambda s, b: b)


def signal_process(sid: str, pid: int, signal: Union[str, int]) -> Call:
    return Call("signalProcess", {"id": sid, "pid": pid}, json={"signal": signal})


def write_stdin(sid: str, pid: int, data: Union[bytes, str], close: bool) -> Call:
    raw = data.encode() if isinstance(data, str) else bytes(data)
    return Call("writeStdin", {"id": sid, "pid": pid}, query={"close": close or None},
                content=raw, extra_timeout=30.0)


# ---- files ----

def read_file(sid: str, path: str, user: Optional[str]) -> Call:
    return Call("readFile", {"id": sid}, query={"path": path, "user": _user(user)},
                parse=lambda s, b: b)


def write_file(sid: str, path: str, data: Union[bytes, str], user: Optional[str]) -> Call:
    raw = data.encode() if isinstance(data, str) else bytes(data)
    return Call("writeFile", {"id": sid}, query={"path": path, "user": _user(user)},
                content=raw, parse=lambda s, b: None)


def list_dir(sid: str, path: str, user: Optional[str]) -> Call:
    return Call("listDir", {"id": sid}, query={"path": path, "user": _user(user)},
                parse=lambda s, b: [Entry.from_json(x) for x in _json_body(b).get("entries", [])])


def stat(sid: str, path: str, user: Optional[str]) -> Call:
    return Call("stat", {"id": sid}, query={"path": path, "user": _user(user)},
                parse=lambda s, b: Entry.from_json(_json_body(b)))


def mkdir(sid: str, path: str, user: Optional[str]) -> Call:
    return Call("mkdir", {"id": sid}, query={"user": _user(user)}, json={"path": path})


def move(sid: str, src: str, dst: str, user: Optional[str]) -> Call:
    return Call("move", {"id": sid}, query={"user": _user(user)}, json={"from": src, "to": dst})


def remove(sid: str, path: str, recursive: bool, user: Optional[str]) -> Call:
    return Call("remove", {"id": sid},
                query={"path": path, "recursive": recursive or None, "user": _user(user)})


def search(sid: str, path: str, name: Optional[str], content: Optional[str],
           max_results: Optional[int], user: Optional[str]) -> Call:
    if not name and not content:
        raise ValueError("search needs name (a glob) and/or content (a substring)")
    return Call("search", {"id": sid}, query={"path": path, "name": name, "content": content,
                                              "max_results": max_results, "user": _user(user)},
                parse=lambda s, b: SearchResult.from_json(_json_body(b)))


def watch(sid: str, path: str, recursive: bool, user: Optional[str]) -> Call:
    return Call("watch", {"id": sid}, query={"path": path, "recursive": recursive or None,
                                             "user": _user(user)}, stream=True)


# ---- images ----

def import_image(name: str, upload: Any, tag: Optional[str], ref: Optional[str]) -> Call:
    c = Call("importImage", query={"name": name, "tag": tag, "ref": ref}, extra_timeout=3600.0,
             parse=lambda s, b: ImageInfo.from_json(_json_body(b)))
    if isinstance(upload, (bytes, bytearray)):
        c.content = bytes(upload)
    else:
        c.upload = upload
    return c


def list_images() -> Call:
    return Call("listImages", parse=lambda s, b: [ImageInfo.from_json(x) for x in
                                                  _json_body(b).get("images", [])])


def get_image(image_id: str) -> Call:
    return Call("getImage", {"id": image_id}, parse=lambda s, b: ImageInfo.from_json(_json_body(b)))


def delete_image(image_id: str) -> Call:
    return Call("deleteImage", {"id": image_id})


NDJSON = "application/x-ndjson"


def pull_image(ref: str, name: Optional[str], tag: Optional[str], username: Optional[str],
               password: Optional[str]) -> Call:
    """The pull, always asked as a progress stream: the client reads it as it comes, and
    closing it is what cancels the pull on the server (a pull answered whole cannot be)."""
    if not isinstance(ref, str) or not ref:
        raise ValueError("ref is an image reference: [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST]")
    if (username is None) != (password is None):
        raise ValueError("registry credentials need both username and password")
    if name is not None and ":" in name and tag is None:
        name, tag = name.split(":", 1)
    if tag is not None and not name:
        raise ValueError("a tag needs a name")
    body = _drop_none({"image": ref, "name": name, "tag": tag, "username": username,
                       "password": password})
    return Call("pullImage", json=body, headers={"Accept": NDJSON}, stream=True)


# ---- templates and storage ----

def list_templates() -> Call:
    return Call("listTemplates", parse=lambda s, b: [
        TemplateInfo.from_json(x) for x in _json_body(b).get("templates", [])])


def get_storage() -> Call:
    return Call("getStorage", parse=lambda s, b: StorageInfo.from_json(_json_body(b)))


def grow_storage(size: Union[int, str]) -> Call:
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise TypeError('size is bytes (an int) or a string such as "64G" or "512M"')
    return Call("growStorage", json={"size": size}, extra_timeout=120.0,
                parse=lambda s, b: StorageInfo.from_json(_json_body(b)))


def terminal_path(sid: str, cols: int, rows: int, user: Optional[str]) -> str:
    """The terminal's path and query (the WebSocket is opened by _terminal)."""
    c = Call("terminal", {"id": sid}, query={"cols": cols, "rows": rows, "user": _user(user)})
    q = "&".join(f"{k}={quote(v, safe='')}" for k, v in c.query_items().items())
    return c.path() + ("?" + q if q else "")
