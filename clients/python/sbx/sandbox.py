"""The synchronous client: :class:`Sbx` (a sandbox), its ``files`` and ``processes``,
:class:`Images`, :class:`Templates` and :class:`Storage`. :mod:`sbx.asandbox` mirrors it method
for method for asyncio."""

from __future__ import annotations

from typing import IO, Any, Callable, Iterable, List, Mapping, Optional, Sequence, Union

from . import _calls as C
from ._config import Config
from ._pull import PullStream
from ._streams import LogStream, Watch
from ._terminal import Terminal
from ._transport import Transport
from .errors import NotFoundError
from .models import (Entry, ExecResult, ImageInfo, ProcessInfo, PullProgress, RunCodeResult,
                     SandboxInfo, SearchResult, StorageInfo, TemplateInfo)

Cmd = Union[str, Sequence[str]]


def _config(config: Optional[Config], url: Optional[str], api_key: Optional[str]) -> Config:
    return config or Config.resolve(url=url, api_key=api_key)


def _once(call: C.Call, config: Optional[Config], url: Optional[str],
          api_key: Optional[str]) -> Any:
    """One call on a connection of its own (the class methods that need no sandbox)."""
    t = Transport(_config(config, url, api_key))
    try:
        return t.call(call)
    finally:
        t.close()


class Sbx:
    """A sandbox. Make one with :meth:`create` or reach a running one with :meth:`connect`;
    ``with Sbx.create() as sb:`` kills it at the end of the block.

    Configuration comes from ``SBX_URL`` / ``SBX_API_KEY`` (see :class:`Config`) unless
    ``url``, ``api_key`` or a whole ``config`` is given. Each Sbx keeps one HTTP connection
    pool; :meth:`kill` and :meth:`close` release it.
    """

    def __init__(self, info: SandboxInfo, transport: Transport) -> None:
        self.id = info.id
        self.info = info
        self._t = transport
        self.files = Files(self)
        self.processes = Processes(self)

    # ---- the sandbox ----

    @classmethod
    def create(cls, template: str = "base", *, timeout: Optional[int] = None,
               env: Optional[Mapping[str, str]] = None,
               metadata: Optional[Mapping[str, str]] = None, cpu_count: Optional[int] = None,
               memory_mb: Optional[int] = None, disk_mb: Optional[int] = None,
               config: Optional[Config] = None, url: Optional[str] = None,
               api_key: Optional[str] = None) -> "Sbx":
        """Create a sandbox from ``template`` and return it running.

        Args:
            timeout: seconds until it is killed (1..86400, default 300).
            env: environment of every exec, run_code, process and terminal in it.
            metadata: string labels, listed with it.
            cpu_count, memory_mb, disk_mb: its sizes (default: the template's).
        """
        t = Transport(_config(config, url, api_key))
        try:
            info = t.call(C.create_sandbox(template, timeout, env, metadata, cpu_count,
                                           memory_mb, disk_mb))
        except BaseException:
            t.close()
            raise
        return cls(info, t)

    @classmethod
    def connect(cls, sandbox_id: str, *, config: Optional[Config] = None,
                url: Optional[str] = None, api_key: Optional[str] = None) -> "Sbx":
        """The sandbox ``sandbox_id`` (running or paused); NotFoundError when there is none."""
        t = Transport(_config(config, url, api_key))
        try:
            info = t.call(C.get_sandbox(sandbox_id))
        except BaseException:
            t.close()
            raise
        return cls(info, t)

    @classmethod
    def list(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
             api_key: Optional[str] = None) -> List[SandboxInfo]:
        """Every sandbox of this sbxd, running and paused."""
        t = Transport(_config(config, url, api_key))
        try:
            return t.call(C.list_sandboxes())
        finally:
            t.close()

    def get_info(self) -> SandboxInfo:
        """The sandbox as sbxd sees it now (also kept in ``self.info``)."""
        self.info = self._t.call(C.get_sandbox(self.id))
        return self.info

    def kill(self) -> None:
        """Kill the sandbox (its files go with it) and release the connection pool."""
        try:
            self._t.call(C.kill_sandbox(self.id))
        finally:
            self.close()

    def pause(self, *, keep_memory: bool = True) -> SandboxInfo:
        """Freeze it: processes and memory stay, no CPU is used, its timeout stops. With
        ``keep_memory=False`` only its files are kept and a resume starts it afresh."""
        self.info = self._t.call(C.pause_sandbox(self.id, keep_memory))
        return self.info

    def resume(self, *, timeout: Optional[int] = None) -> SandboxInfo:
        """Thaw a paused sandbox; its timeout starts again from ``timeout`` seconds."""
        self.info = self._t.call(C.resume_sandbox(self.id, timeout))
        return self.info

    def close(self) -> None:
        """Release the connection pool without killing the sandbox."""
        self._t.close()

    def __enter__(self) -> "Sbx":
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.kill()
        except NotFoundError:
            pass

    def __repr__(self) -> str:
        return f"Sbx(id={self.id!r}, template={self.info.template!r})"

    # ---- running things ----

    def exec(self, cmd: Cmd, *, timeout_ms: Optional[int] = None,
             user: Optional[str] = None) -> ExecResult:
        """Run one process and wait for it. A list runs with execve (PATH search), a string
        with ``sh -c``. ``timeout_ms`` default 30000, at most 300000; past it the process is
        killed and the result says ``timed_out``. No state carries between calls: use
        ``"cd /x && ..."`` for a directory. ``user="root"`` runs as root in the sandbox."""
        return self._t.call(C.exec_(self.id, cmd, timeout_ms, user))

    def sh(self, script: str, *, timeout_ms: Optional[int] = None,
           user: Optional[str] = None) -> ExecResult:
        """``exec`` of a shell string (``sh -c script``)."""
        if not isinstance(script, str):
            raise TypeError("sh() takes a string; use exec() for an argv list")
        return self.exec(script, timeout_ms=timeout_ms, user=user)

    def run_code(self, code: str, *, lang: str = "python", timeout_ms: Optional[int] = None,
                 user: Optional[str] = None) -> RunCodeResult:
        """Run a snippet with ``lang``'s interpreter (python, node, bash or sh). A missing
        interpreter exits 127 with empty output; check ``exit_code`` (or ``check()``)."""
        return self._t.call(C.run_code(self.id, code, lang, timeout_ms, user))

    def terminal(self, *, cols: int = 80, rows: int = 24,
                 user: Optional[str] = None) -> Terminal:
        """An interactive login shell on a PTY (see :class:`Terminal`)."""
        return Terminal(self._t.cfg, C.terminal_path(self.id, cols, rows, user))


class Process:
    """A managed process: it runs on after the call that started it."""

    def __init__(self, sb: Sbx, info: ProcessInfo) -> None:
        self._sb = sb
        self.pid = info.pid
        self.info = info

    def refresh(self) -> ProcessInfo:
        """Its state now (also kept in ``self.info``)."""
        self.info = self._sb._t.call(C.get_process(self._sb.id, self.pid))
        return self.info

    def logs(self, offset: int = 0) -> bytes:
        """Its output so far (stdout and stderr interleaved; the last 1 MiB is kept), from the
        absolute byte ``offset``."""
        return self._sb._t.call(C.process_logs(self._sb.id, self.pid, offset, False))

    def stream(self, offset: int = 0) -> LogStream:
        """Its output as it is written, from ``offset``, until it exits (an iterator of bytes;
        ``close()`` it to stop early)."""
        return LogStream(self._sb._t, lambda o: C.process_logs(self._sb.id, self.pid, o, True),
                         offset)

    def write_stdin(self, data: Union[str, bytes], *, close: bool = False) -> None:
        """Write to its stdin (it must have been started with ``stdin=True``); ``close``
        sends EOF after the data."""
        self._sb._t.call(C.write_stdin(self._sb.id, self.pid, data, close))

    def close_stdin(self) -> None:
        """Send EOF to its stdin."""
        self.write_stdin(b"", close=True)

    def signal(self, signal: Union[str, int] = "SIGTERM") -> None:
        """Send a signal (a name such as "SIGINT" or a number) to its process group."""
        self._sb._t.call(C.signal_process(self._sb.id, self.pid, signal))

    def kill(self) -> None:
        """SIGKILL to its process group; an exited process is forgotten instead."""
        self._sb._t.call(C.kill_process(self._sb.id, self.pid))

    def wait(self, timeout: Optional[float] = None) -> ProcessInfo:
        """Wait until it exits and return its final state (``exit_code``). Raises
        SbxTimeoutError when ``timeout`` seconds pass first."""
        deadline = C.wait_deadline(timeout)
        while True:
            self.info = self._sb._t.call(C.get_process(self._sb.id, self.pid,
                                                       C.wait_slice_ms(deadline)))
            if C.process_waited(self.info, deadline, timeout):
                return self.info

    def __repr__(self) -> str:
        return f"Process(pid={self.pid}, status={self.info.status!r})"


class Processes:
    """``sb.processes``: processes that outlive the call that started them (servers, builds,
    watchers). At most 64 per sandbox; each keeps its last 1 MiB of output."""

    def __init__(self, sb: Sbx) -> None:
        self._sb = sb

    def start(self, cmd: Cmd, *, cwd: Optional[str] = None,
              env: Optional[Mapping[str, str]] = None, user: Optional[str] = None,
              stdin: bool = False) -> Process:
        """Start cmd (a list: execve; a string: ``sh -c``) and return at once. ``stdin=True``
        gives it a pipe for :meth:`Process.write_stdin` (else /dev/null)."""
        info = self._sb._t.call(C.start_process(self._sb.id, cmd, cwd, env, user, stdin))
        return Process(self._sb, info)

    def list(self) -> List[ProcessInfo]:
        """The managed processes, running and recently exited."""
        return self._sb._t.call(C.list_processes(self._sb.id))

    def get(self, pid: int) -> Process:
        """The managed process ``pid``; NotFoundError when there is none."""
        return Process(self._sb, self._sb._t.call(C.get_process(self._sb.id, pid)))


class Files:
    """``sb.files``: the sandbox's file system, as its user (or ``user="root"``). Relative
    paths are relative to /home/user."""

    def __init__(self, sb: Sbx) -> None:
        self._sb = sb

    def read(self, path: str, *, user: Optional[str] = None) -> str:
        """The file's text (UTF-8)."""
        return self.read_bytes(path, user=user).decode("utf-8")

    def read_bytes(self, path: str, *, user: Optional[str] = None) -> bytes:
        """The file's bytes."""
        return self._sb._t.call(C.read_file(self._sb.id, path, user))

    def write(self, path: str, data: Union[str, bytes], *, user: Optional[str] = None) -> None:
        """Write the file whole (text as UTF-8), creating missing directories."""
        self._sb._t.call(C.write_file(self._sb.id, path, data, user))

    def list(self, path: str, *, user: Optional[str] = None) -> List[Entry]:
        """A directory's entries (at most 10000)."""
        return self._sb._t.call(C.list_dir(self._sb.id, path, user))

    def stat(self, path: str, *, user: Optional[str] = None) -> Entry:
        """One entry; symlinks are not followed."""
        return self._sb._t.call(C.stat(self._sb.id, path, user))

    def exists(self, path: str, *, user: Optional[str] = None) -> bool:
        """Whether path names an entry (a dangling symlink counts)."""
        try:
            self.stat(path, user=user)
            return True
        except NotFoundError:
            return False

    def mkdir(self, path: str, *, user: Optional[str] = None) -> None:
        """Create a directory and its parents."""
        self._sb._t.call(C.mkdir(self._sb.id, path, user))

    def remove(self, path: str, *, recursive: bool = False, user: Optional[str] = None) -> None:
        """Remove a file or an empty directory (``recursive=True``: any directory)."""
        self._sb._t.call(C.remove(self._sb.id, path, recursive, user))

    def rename(self, src: str, dst: str, *, user: Optional[str] = None) -> None:
        """Move src to dst (on the same file system)."""
        self._sb._t.call(C.move(self._sb.id, src, dst, user))

    def search(self, path: str, *, name: Optional[str] = None, content: Optional[str] = None,
               max_results: Optional[int] = None, user: Optional[str] = None) -> SearchResult:
        """Entries under path whose name matches the glob ``name`` and/or lines containing
        ``content`` (bounded: see ``truncated``)."""
        return self._sb._t.call(C.search(self._sb.id, path, name, content, max_results, user))

    def watch(self, path: str, *, recursive: bool = False,
              user: Optional[str] = None) -> Watch:
        """Changes under the directory path, as an iterator of FsEvent (armed on return)."""
        return Watch(self._sb._t, C.watch(self._sb.id, path, recursive, user))


class Images:
    """Images as templates: pulled from a registry, or imported from an archive (an OCI layout
    or ``docker save`` tar)."""

    _call = staticmethod(_once)

    @classmethod
    def pull(cls, ref: str, *, name: Optional[str] = None, tag: Optional[str] = None,
             username: Optional[str] = None, password: Optional[str] = None,
             on_progress: Optional[Callable[[PullProgress], Any]] = None,
             config: Optional[Config] = None, url: Optional[str] = None,
             api_key: Optional[str] = None) -> ImageInfo:
        """Pull the image ``ref`` (``[HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST]``, Docker's
        naming: ``python:3.12`` is Docker Hub's) from its registry, sbxd doing the transfer, and
        return it as a template, named after the image unless ``name`` (``name:tag``, or
        ``tag=``) says otherwise; an image of that name is replaced. Layers sbxd has already
        are not transferred again.

        Args:
            username, password: the registry's credentials (both or neither); without them
                sbxd uses its Docker config.json's, else none.
            on_progress: called with each :class:`PullProgress` as it arrives. An exception it
                raises (or a KeyboardInterrupt) stops the pull on the server and propagates.

        Raises the pull's failure, typed: ForbiddenError (``registry_denied``), NotFoundError
        (no such image or tag), BadRequestError (a bad reference, an image without
        linux/amd64), ServiceUnavailableError (registry unreachable, or a blob not its
        digest), PayloadTooLargeError, InsufficientStorageError.
        """
        return cls.pull_stream(ref, name=name, tag=tag, username=username, password=password,
                               config=config, url=url, api_key=api_key).wait(on_progress)

    @classmethod
    def pull_stream(cls, ref: str, *, name: Optional[str] = None, tag: Optional[str] = None,
                    username: Optional[str] = None, password: Optional[str] = None,
                    config: Optional[Config] = None, url: Optional[str] = None,
                    api_key: Optional[str] = None) -> PullStream:
        """:meth:`pull` as a :class:`PullStream` (started on return): iterate its
        :class:`PullProgress` events; ``image`` once it is done; ``close()`` (or leaving its
        ``with`` block) cancels the pull on the server."""
        call = C.pull_image(ref, name, tag, username, password)
        t = Transport(_config(config, url, api_key))
        return PullStream(t, call, on_close=t.close)

    @classmethod
    def import_archive(cls, name: str, archive: Union[bytes, IO[bytes], Iterable[bytes], str], *,
                       tag: Optional[str] = None, ref: Optional[str] = None,
                       config: Optional[Config] = None, url: Optional[str] = None,
                       api_key: Optional[str] = None) -> ImageInfo:
        """Import ``archive`` (bytes, a binary file, an iterator of bytes, or a path) as the
        template ``name`` (``name:tag`` for a tag other than latest). Streamed, never read
        whole."""
        if isinstance(archive, str):
            with open(archive, "rb") as f:
                return cls._call(C.import_image(name, f, tag, ref), config, url, api_key)
        return cls._call(C.import_image(name, archive, tag, ref), config, url, api_key)

    @classmethod
    def list(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
             api_key: Optional[str] = None) -> List[ImageInfo]:
        """Imported images, newest first."""
        return cls._call(C.list_images(), config, url, api_key)

    @classmethod
    def get(cls, image_id: str, *, config: Optional[Config] = None, url: Optional[str] = None,
            api_key: Optional[str] = None) -> ImageInfo:
        """One image by its template id (``name`` or ``name:tag``)."""
        return cls._call(C.get_image(image_id), config, url, api_key)

    @classmethod
    def delete(cls, image_id: str, *, config: Optional[Config] = None,
               url: Optional[str] = None, api_key: Optional[str] = None) -> None:
        """Remove an image's template (its layers go once no sandbox uses them)."""
        cls._call(C.delete_image(image_id), config, url, api_key)


class Templates:
    """Every template a sandbox can start from."""

    @classmethod
    def list(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
             api_key: Optional[str] = None) -> List[TemplateInfo]:
        """The templates, sorted by name: built-in, built through E2B's template API
        (``built``: under its alias and its id), imported or pulled images (``image``) and
        snapshots (``snapshot``). Each ``name`` is one :meth:`Sbx.create` takes."""
        return _once(C.list_templates(), config, url, api_key)


class Storage:
    """What holds sandbox disks: sbxd's storage pool (btrfs, one subvolume per sandbox)."""

    @classmethod
    def get(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
            api_key: Optional[str] = None) -> StorageInfo:
        """The backend, the pool's figures and each sandbox's disk (what it holds, what deleting
        it frees), as of the pool's last commit (at most 30 s old)."""
        return _once(C.get_storage(), config, url, api_key)

    @classmethod
    def grow(cls, size: Union[int, str], *, config: Optional[Config] = None,
             url: Optional[str] = None, api_key: Optional[str] = None) -> StorageInfo:
        """Grow the pool's image to ``size`` (bytes, or a string such as ``"64G"``; bare digits
        in a string are MiB) while sandboxes run; the storage as it is then. The pool only
        grows: BadRequestError for a size not larger than it, ConflictError when there is no
        pool image to grow (no pool, or the state dir's own btrfs), InsufficientStorageError
        when the host cannot hold it. Never retried: a lost answer would make the second try a
        BadRequestError."""
        return _once(C.grow_storage(size), config, url, api_key)
