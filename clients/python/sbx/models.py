"""What the API answers, as typed values. Unknown fields the server may add are ignored."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional, Sequence, TypeVar, Union

from .errors import CommandError, CommandTimeoutError


def _time(v: Optional[str]) -> Optional[datetime]:
    if not v:
        return None
    return datetime.fromisoformat(v.replace("Z", "+00:00"))


_R = TypeVar("_R", bound="_CommandResult")


class _CommandResult:
    """``check()`` of a finished command (:class:`ExecResult`, :class:`RunCodeResult`)."""

    exit_code: int
    timed_out: bool

    def check(self: _R) -> _R:
        """Return self when the command exited 0; raise :class:`CommandError` (or
        :class:`CommandTimeoutError` when it timed out) with its exit code and output."""
        if self.timed_out:
            raise CommandTimeoutError(self)  # type: ignore[arg-type]
        if self.exit_code != 0:
            raise CommandError(self)  # type: ignore[arg-type]
        return self


@dataclass(frozen=True)
class SandboxInfo:
    """A sandbox as ``GET /v1/sandboxes/{id}`` describes it."""

    id: str
    template: str
    state: str  # "running" or "paused"
    started_at: Optional[datetime]
    end_at: Optional[datetime]
    cpu_count: int
    memory_mb: int
    metadata: Dict[str, str]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SandboxInfo":
        return cls(id=d["id"], template=d.get("template", ""), state=d.get("state", ""),
                   started_at=_time(d.get("started_at")), end_at=_time(d.get("end_at")),
                   cpu_count=int(d.get("cpu_count", 0)), memory_mb=int(d.get("memory_mb", 0)),
                   metadata=dict(d.get("metadata") or {}))


@dataclass(frozen=True)
class ExecResult(_CommandResult):
    """What ``exec`` and ``sh`` return: the process's output and how it ended.

    ``ok`` is true when it exited 0 within its timeout; ``check()`` raises otherwise.
    """

    ok: bool
    stdout: str
    stderr: str
    exit_code: int  # -1 when it timed out or was killed by a signal
    duration_ms: int
    timed_out: bool

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ExecResult":
        return cls(ok=bool(d.get("ok")), stdout=d.get("stdout", ""), stderr=d.get("stderr", ""),
                   exit_code=int(d.get("exit_code", -1)), duration_ms=int(d.get("duration_ms", 0)),
                   timed_out=bool(d.get("timed_out")))


@dataclass(frozen=True)
class RunCodeResult(_CommandResult):
    """What ``run_code`` returns. A missing interpreter exits 127 with empty output."""

    stdout: str
    stderr: str
    exit_code: int
    duration_ms: int
    lang: str
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RunCodeResult":
        return cls(stdout=d.get("stdout", ""), stderr=d.get("stderr", ""),
                   exit_code=int(d.get("exit_code", -1)), duration_ms=int(d.get("duration_ms", 0)),
                   lang=d.get("lang", ""), timed_out=bool(d.get("timed_out")))


@dataclass(frozen=True)
class ProcessInfo:
    """A managed process: running, or exited with its code."""

    pid: int
    cmd: Union[str, List[str]]
    status: str  # "running" or "exited"
    exit_code: Optional[int]
    started_at_ms: int
    ended_at_ms: Optional[int]
    log_bytes: int  # bytes logged so far: the offset the next output starts at
    stdin: bool

    @property
    def running(self) -> bool:
        return self.status == "running"

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ProcessInfo":
        return cls(pid=int(d["pid"]), cmd=d.get("cmd", ""), status=d.get("status", ""),
                   exit_code=d.get("exit_code"), started_at_ms=int(d.get("started_at_ms", 0)),
                   ended_at_ms=d.get("ended_at_ms"), log_bytes=int(d.get("log_bytes", 0)),
                   stdin=bool(d.get("stdin")))


@dataclass(frozen=True)
class Entry:
    """A file-system entry (symlinks are not followed)."""

    name: str
    path: str
    type: str  # "file", "dir", "symlink" or "other"
    size: int
    mode: str  # octal, "0644"
    mtime: int  # unix seconds

    @property
    def is_dir(self) -> bool:
        return self.type == "dir"

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Entry":
        return cls(name=d.get("name", ""), path=d.get("path", ""), type=d.get("type", ""),
                   size=int(d.get("size", 0)), mode=d.get("mode", ""), mtime=int(d.get("mtime", 0)))


@dataclass(frozen=True)
class SearchMatch:
    """A name match (``line`` None) or a content match (its line number and text)."""

    path: str
    type: str
    line: Optional[int] = None
    text: Optional[str] = None


@dataclass(frozen=True)
class SearchResult:
    matches: List[SearchMatch]
    truncated: bool  # a bound (max_results, entries visited, depth) cut the walk short
    visited: int

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SearchResult":
        ms = [SearchMatch(path=m.get("path", ""), type=m.get("type", ""), line=m.get("line"),
                          text=m.get("text")) for m in d.get("matches", [])]
        return cls(matches=ms, truncated=bool(d.get("truncated")), visited=int(d.get("visited", 0)))


@dataclass(frozen=True)
class FsEvent:
    """One change seen by a watch: create, modify, delete, move_from, move_to or attrib."""

    type: str
    path: str
    is_dir: bool

    @classmethod
    def from_data(cls, data: str) -> "FsEvent":
        d = json.loads(data)
        return cls(type=d.get("type", ""), path=d.get("path", ""), is_dir=bool(d.get("is_dir")))


@dataclass(frozen=True)
class ImageSource:
    """Where a pulled image came from."""

    reference: str  # canonical: docker.io/library/python:3.12
    registry: str  # the registry (or mirror) that served it
    index_digest: Optional[str] = None  # the index it was picked from, if any

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> Optional["ImageSource"]:
        if not isinstance(d, dict):
            return None
        return cls(reference=d.get("reference", ""), registry=d.get("registry", ""),
                   index_digest=d.get("indexDigest"))


@dataclass(frozen=True)
class ImageLayer:
    digest: str
    layer: str
    reused: bool


@dataclass(frozen=True)
class ImageInfo:
    """An imported image and the template it became."""

    name: str
    tag: str
    template: str
    digest: str
    format: str
    imported_at: Optional[datetime]
    layers: List[ImageLayer]
    env: List[str]
    user: str = ""
    working_dir: str = ""
    entrypoint: List[str] = field(default_factory=list)
    cmd: List[str] = field(default_factory=list)
    written_bytes: int = 0
    warnings: List[str] = field(default_factory=list)
    source: Optional[ImageSource] = None  # a pulled image's: where it came from

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ImageInfo":
        layers = [ImageLayer(digest=x.get("digest", ""), layer=x.get("layer", ""),
                             reused=bool(x.get("reused"))) for x in d.get("layers", [])]
        return cls(name=d.get("name", ""), tag=d.get("tag", ""), template=d.get("template", ""),
                   digest=d.get("digest", ""), format=d.get("format", ""),
                   imported_at=_time(d.get("importedAt")), layers=layers,
                   env=list(d.get("env") or []), user=d.get("user") or "",
                   working_dir=d.get("workingDir") or "", entrypoint=list(d.get("entrypoint") or []),
                   cmd=list(d.get("cmd") or []), written_bytes=int(d.get("writtenBytes") or 0),
                   warnings=list(d.get("warnings") or []),
                   source=ImageSource.from_json(d.get("source")))


@dataclass(frozen=True)
class PullLayer:
    """Which layer a pull's progress event is about, and how far it is."""

    digest: str
    index: int  # 1-based, in the image's order
    count: int  # the image's layers
    bytes: int  # transferred so far (layer-done: all of it, 0 when reused)
    total: int  # the blob's size
    reused: bool = False  # layer-done: found in the layer store, not transferred


@dataclass(frozen=True)
class PullProgress:
    """One event of a pull: ``status`` is resolving, resolved, layer (bytes of a layer so far,
    at most once a second per layer), layer-done or template; ``message`` says it for people."""

    status: str
    message: str
    layer: Optional[PullLayer] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "PullProgress":
        lj = d.get("layer")
        layer = None
        if isinstance(lj, dict):
            layer = PullLayer(digest=lj.get("digest", ""), index=int(lj.get("index") or 0),
                              count=int(lj.get("count") or 0), bytes=int(lj.get("bytes") or 0),
                              total=int(lj.get("total") or 0), reused=bool(lj.get("reused")))
        return cls(status=str(d.get("status", "")), message=str(d.get("message", "")),
                   layer=layer)


@dataclass(frozen=True)
class TemplateInfo:
    """A template a sandbox can start from (``GET /v1/templates``)."""

    name: str  # what Sbx.create(template=...) takes
    kind: str  # builtin, built, image or snapshot
    cpu_count: int
    memory_mb: int
    disk_size_mb: int
    layers: int
    template_id: Optional[str] = None  # built: the template API's id
    build_id: Optional[str] = None  # built: the build that made it
    base: Optional[str] = None  # built: the template it was built on

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "TemplateInfo":
        return cls(name=d.get("name", ""), kind=d.get("kind", ""),
                   cpu_count=int(d.get("cpuCount") or 0), memory_mb=int(d.get("memoryMB") or 0),
                   disk_size_mb=int(d.get("diskSizeMB") or 0), layers=int(d.get("layers") or 0),
                   template_id=d.get("templateID"), build_id=d.get("buildID"),
                   base=d.get("base"))


@dataclass(frozen=True)
class StoragePool:
    """The storage pool's figures, in bytes."""

    kind: str  # "image" (a pool.img of its own: it can grow) or "state-dir"
    root: str  # where it is mounted on the host
    size: int
    used: int
    free: int  # what new data can still take
    reserve: int  # free space kept: no sandbox is created below it
    image_bytes: int  # the image file's size (0 for a state-dir pool)


@dataclass(frozen=True)
class SandboxDisk:
    """A sandbox's disk on the pool. ``referenced`` is what it holds, shared extents included
    (what its limit counts); ``exclusive`` what deleting it frees; both None when its disk is
    not on the pool. Figures are as of the pool's last commit (at most 30 s old)."""

    id: str
    state: str
    disk_mb: int
    referenced: Optional[int] = None
    exclusive: Optional[int] = None
    limit: Optional[int] = None  # bytes; 0: none


@dataclass(frozen=True)
class StorageInfo:
    """What holds sandbox disks: ``backend`` is "pool" (btrfs subvolumes with qgroup limits),
    "image" (a preallocated ext4 image each) or "tmpfs"; ``pool`` and ``sandboxes`` are filled
    for the pool only."""

    backend: str
    pool: Optional[StoragePool]
    sandboxes: List[SandboxDisk]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "StorageInfo":
        p = d.get("pool")
        pool = None
        if isinstance(p, dict):
            pool = StoragePool(kind=p.get("kind", ""), root=p.get("root", ""),
                               size=int(p.get("size") or 0), used=int(p.get("used") or 0),
                               free=int(p.get("free") or 0), reserve=int(p.get("reserve") or 0),
                               image_bytes=int(p.get("imageBytes") or 0))

        def opt(x: Any) -> Optional[int]:
            return None if x is None else int(x)

        disks = [SandboxDisk(id=x.get("id", ""), state=x.get("state", ""),
                             disk_mb=int(x.get("diskMB") or 0), referenced=opt(x.get("referenced")),
                             exclusive=opt(x.get("exclusive")), limit=opt(x.get("limit")))
                 for x in d.get("sandboxes") or []]
        return cls(backend=d.get("backend", ""), pool=pool, sandboxes=disks)


Cmd = Union[str, Sequence[str]]
