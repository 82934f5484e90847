"""The asyncio client: :class:`AsyncSbx`, its ``files`` and ``processes``, :class:`AsyncImages`,
:class:`AsyncTemplates` and :class:`AsyncStorage`. Every method of :mod:`sbx.sandbox` is here under the same name, awaited;
the docstrings there say what each does."""

from __future__ import annotations

from typing import IO, Any, AsyncIterable, Callable, List, Mapping, Optional, Sequence, Union

from . import _calls as C
from ._config import Config
from ._pull import AsyncPullStream
from ._streams import AsyncLogStream, AsyncWatch
from ._terminal import AsyncTerminal
from ._transport import AsyncTransport
from .errors import NotFoundError
from .models import (Entry, ExecResult, ImageInfo, ProcessInfo, PullProgress, RunCodeResult,
                     SandboxInfo, SearchResult, StorageInfo, TemplateInfo)

Cmd = Union[str, Sequence[str]]


def _config(config: Optional[Config], url: Optional[str], api_key: Optional[str]) -> Config:
    return config or Config.resolve(url=url, api_key=api_key)


async def _once(call: C.Call, config: Optional[Config], url: Optional[str],
                api_key: Optional[str]) -> Any:
    t = AsyncTransport(_config(config, url, api_key))
    try:
        return await t.call(call)
    finally:
        await t.close()


class AsyncSbx:
    """A sandbox, for asyncio: ``asb = await AsyncSbx.create()``;
    ``async with await AsyncSbx.create() as asb:`` kills it at the end of the block."""

    def __init__(self, info: SandboxInfo, transport: AsyncTransport) -> None:
        self.id = info.id
        self.info = info
        self._t = transport
        self.files = AsyncFiles(self)
        self.processes = AsyncProcesses(self)

    @classmethod
    async def create(cls, template: str = "base", *, timeout: Optional[int] = None,
                     env: Optional[Mapping[str, str]] = None,
                     metadata: Optional[Mapping[str, str]] = None,
                     cpu_count: Optional[int] = None, memory_mb: Optional[int] = None,
                     disk_mb: Optional[int] = None, config: Optional[Config] = None,
                     url: Optional[str] = None, api_key: Optional[str] = None) -> "AsyncSbx":
        """As :meth:`Sbx.create`."""
        t = AsyncTransport(_config(config, url, api_key))
        try:
            info = await t.call(C.create_sandbox(template, timeout, env, metadata, cpu_count,
                                                 memory_mb, disk_mb))
        except BaseException:
            await t.close()
            raise
        return cls(info, t)

    @classmethod
    async def connect(cls, sandbox_id: str, *, config: Optional[Config] = None,
                      url: Optional[str] = None, api_key: Optional[str] = None) -> "AsyncSbx":
        """As :meth:`Sbx.connect`."""
        t = AsyncTransport(_config(config, url, api_key))
        try:
            info = await t.call(C.get_sandbox(sandbox_id))
        except BaseException:
            await t.close()
            raise
        return cls(info, t)

    @classmethod
    async def list(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
                   api_key: Optional[str] = None) -> List[SandboxInfo]:
        """As :meth:`Sbx.list`."""
        t = AsyncTransport(_config(config, url, api_key))
        try:
            return await t.call(C.list_sandboxes())
        finally:
            await t.close()

    async def get_info(self) -> SandboxInfo:
        self.info = await self._t.call(C.get_sandbox(self.id))
        return self.info

    async def kill(self) -> None:
        try:
            await self._t.call(C.kill_sandbox(self.id))
        finally:
            await self.close()

    async def pause(self, *, keep_memory: bool = True) -> SandboxInfo:
        self.info = await self._t.call(C.pause_sandbox(self.id, keep_memory))
        return self.info

    async def resume(self, *, timeout: Optional[int] = None) -> SandboxInfo:
        self.info = await self._t.call(C.resume_sandbox(self.id, timeout))
        return self.info

    async def close(self) -> None:
        await self._t.close()

    async def __aenter__(self) -> "AsyncSbx":
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.kill()
        except NotFoundError:
            pass

    def __repr__(self) -> str:
        return f"AsyncSbx(id={self.id!r}, template={self.info.template!r})"

    async def exec(self, cmd: Cmd, *, timeout_ms: Optional[int] = None,
                   user: Optional[str] = None) -> ExecResult:
        return await self._t.call(C.exec_(self.id, cmd, timeout_ms, user))

    async def sh(self, script: str, *, timeout_ms: Optional[int] = None,
                 user: Optional[str] = None) -> ExecResult:
        if not isinstance(script, str):
            raise TypeError("sh() takes a string; use exec() for an argv list")
        return await self.exec(script, timeout_ms=timeout_ms, user=user)

    async def run_code(self, code: str, *, lang: str = "python",
                       timeout_ms: Optional[int] = None,
                       user: Optional[str] = None) -> RunCodeResult:
        return await self._t.call(C.run_code(self.id, code, lang, timeout_ms, user))

    async def terminal(self, *, cols: int = 80, rows: int = 24,
                       user: Optional[str] = None) -> AsyncTerminal:
        return await AsyncTerminal(self._t.cfg, C.terminal_path(self.id, cols, rows, user))._open()


class AsyncProcess:
    """As :class:`sbx.sandbox.Process`."""

    def __init__(self, sb: AsyncSbx, info: ProcessInfo) -> None:
        self._sb = sb
        self.pid = info.pid
        self.info = info

    async def refresh(self) -> ProcessInfo:
        self.info = await self._sb._t.call(C.get_process(self._sb.id, self.pid))
        return self.info

    async def logs(self, offset: int = 0) -> bytes:
        return await self._sb._t.call(C.process_logs(self._sb.id, self.pid, offset, False))

    def stream(self, offset: int = 0) -> AsyncLogStream:
        """``async for chunk in proc.stream()``; ``aclose()`` stops it on the server."""
        return AsyncLogStream(self._sb._t,
                              lambda o: C.process_logs(self._sb.id, self.pid, o, True), offset)

    async def write_stdin(self, data: Union[str, bytes], *, close: bool = False) -> None:
        await self._sb._t.call(C.write_stdin(self._sb.id, self.pid, data, close))

    async def close_stdin(self) -> None:
        await self.write_stdin(b"", close=True)

    async def signal(self, signal: Union[str, int] = "SIGTERM") -> None:
        await self._sb._t.call(C.signal_process(self._sb.id, self.pid, signal))

    async def kill(self) -> None:
        await self._sb._t.call(C.kill_process(self._sb.id, self.pid))

    async def wait(self, timeout: Optional[float] = None) -> ProcessInfo:
        deadline = C.wait_deadline(timeout)
        while True:
            self.info = await self._sb._t.call(C.get_process(self._sb.id, self.pid,
                                                             C.wait_slice_ms(deadline)))
            if C.process_waited(self.info, deadline, timeout):
                return self.info

    def __repr__(self) -> str:
        return f"AsyncProcess(pid={self.pid}, status={self.info.status!r})"


class AsyncProcesses:
    """As :class:`sbx.sandbox.Processes`."""

    def __init__(self, sb: AsyncSbx) -> None:
        self._sb = sb

    async def start(self, cmd: Cmd, *, cwd: Optional[str] = None,
                    env: Optional[Mapping[str, str]] = None, user: Optional[str] = None,
                    stdin: bool = False) -> AsyncProcess:
        info = await self._sb._t.call(C.start_process(self._sb.id, cmd, cwd, env, user, stdin))
        return AsyncProcess(self._sb, info)

    async def list(self) -> List[ProcessInfo]:
        return await self._sb._t.call(C.list_processes(self._sb.id))

    async def get(self, pid: int) -> AsyncProcess:
        return AsyncProcess(self._sb, await self._sb._t.call(C.get_process(self._sb.id, pid)))


class AsyncFiles:
    """As :class:`sbx.sandbox.Files`."""

    def __init__(self, sb: AsyncSbx) -> None:
        self._sb = sb

    async def read(self, path: str, *, user: Optional[str] = None) -> str:
        return (await self.read_bytes(path, user=user)).decode("utf-8")

    async def read_bytes(self, path: str, *, user: Optional[str] = None) -> bytes:
        return await self._sb._t.call(C.read_file(self._sb.id, path, user))

    async def write(self, path: str, data: Union[str, bytes], *,
                    user: Optional[str] = None) -> None:
        await self._sb._t.call(C.write_file(self._sb.id, path, data, user))

    async def list(self, path: str, *, user: Optional[str] = None) -> List[Entry]:
        return await self._sb._t.call(C.list_dir(self._sb.id, path, user))

    async def stat(self, path: str, *, user: Optional[str] = None) -> Entry:
        return await self._sb._t.call(C.stat(self._sb.id, path, user))

    async def exists(self, path: str, *, user: Optional[str] = None) -> bool:
        try:
            await self.stat(path, user=user)
            return True
        except NotFoundError:
            return False

    async def mkdir(self, path: str, *, user: Optional[str] = None) -> None:
        await self._sb._t.call(C.mkdir(self._sb.id, path, user))

    async def remove(self, path: str, *, recursive: bool = False,
                     user: Optional[str] = None) -> None:
        await self._sb._t.call(C.remove(self._sb.id, path, recursive, user))

    async def rename(self, src: str, dst: str, *, user: Optional[str] = None) -> None:
        await self._sb._t.call(C.move(self._sb.id, src, dst, user))

    async def search(self, path: str, *, name: Optional[str] = None,
                     content: Optional[str] = None, max_results: Optional[int] = None,
                     user: Optional[str] = None) -> SearchResult:
        return await self._sb._t.call(C.search(self._sb.id, path, name, content, max_results,
                                               user))

    def watch(self, path: str, *, recursive: bool = False,
              user: Optional[str] = None) -> AsyncWatch:
        """``async with asb.files.watch(p) as w: async for ev in w`` (or ``await`` it); armed
        once opened."""
        return AsyncWatch(self._sb._t, C.watch(self._sb.id, path, recursive, user))


class AsyncImages:
    """As :class:`sbx.sandbox.Images`."""

    _call = staticmethod(_once)

    @classmethod
    async def pull(cls, ref: str, *, name: Optional[str] = None, tag: Optional[str] = None,
                   username: Optional[str] = None, password: Optional[str] = None,
                   on_progress: Optional[Callable[[PullProgress], Any]] = None,
                   config: Optional[Config] = None, url: Optional[str] = None,
                   api_key: Optional[str] = None) -> ImageInfo:
        """As :meth:`sbx.Images.pull`; ``on_progress`` may be a coroutine function. Cancelling
        the task (``asyncio.wait_for`` past its timeout included) cancels the pull on the
        server."""
        return await cls.pull_stream(ref, name=name, tag=tag, username=username,
                                     password=password, config=config, url=url,
                                     api_key=api_key).wait(on_progress)

    @classmethod
    def pull_stream(cls, ref: str, *, name: Optional[str] = None, tag: Optional[str] = None,
                    username: Optional[str] = None, password: Optional[str] = None,
                    config: Optional[Config] = None, url: Optional[str] = None,
                    api_key: Optional[str] = None) -> AsyncPullStream:
        """``async with AsyncImages.pull_stream(ref) as p: async for ev in p: ...``; started
        once opened (entered, awaited or first iterated)."""
        call = C.pull_image(ref, name, tag, username, password)
        t = AsyncTransport(_config(config, url, api_key))
        return AsyncPullStream(t, call, on_close=t.close)

    @classmethod
    async def import_archive(cls, name: str,
                             archive: Union[bytes, IO[bytes], AsyncIterable[bytes], str], *,
                             tag: Optional[str] = None, ref: Optional[str] = None,
                             config: Optional[Config] = None, url: Optional[str] = None,
                             api_key: Optional[str] = None) -> ImageInfo:
        if isinstance(archive, str):
            with open(archive, "rb") as f:
                return await cls._call(C.import_image(name, _chunks(f), tag, ref), config, url,
                                       api_key)
        if hasattr(archive, "read"):
            archive = _chunks(archive)  # type: ignore[arg-type]
        return await cls._call(C.import_image(name, archive, tag, ref), config, url, api_key)

    @classmethod
    async def list(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
                   api_key: Optional[str] = None) -> List[ImageInfo]:
        return await cls._call(C.list_images(), config, url, api_key)

    @classmethod
    async def get(cls, image_id: str, *, config: Optional[Config] = None,
                  url: Optional[str] = None, api_key: Optional[str] = None) -> ImageInfo:
        return await cls._call(C.get_image(image_id), config, url, api_key)

    @classmethod
    async def delete(cls, image_id: str, *, config: Optional[Config] = None,
                     url: Optional[str] = None, api_key: Optional[str] = None) -> None:
        await cls._call(C.delete_image(image_id), config, url, api_key)


class AsyncTemplates:
    """As :class:`sbx.sandbox.Templates`."""

    @classmethod
    async def list(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
                   api_key: Optional[str] = None) -> List[TemplateInfo]:
        return await _once(C.list_templates(), config, url, api_key)


class AsyncStorage:
    """As :class:`sbx.sandbox.Storage`."""

    @classmethod
    async def get(cls, *, config: Optional[Config] = None, url: Optional[str] = None,
                  api_key: Optional[str] = None) -> StorageInfo:
        return await _once(C.get_storage(), config, url, api_key)

    @classmethod
    async def grow(cls, size: Union[int, str], *, config: Optional[Config] = None,
                   url: Optional[str] = None, api_key: Optional[str] = None) -> StorageInfo:
        return await _once(C.grow_storage(size), config, url, api_key)


async def _chunks(f: IO[bytes], size: int = 1 << 20):  # type: ignore[no-untyped-def]
    """A binary file as an async iterator (httpx's AsyncClient streams only those)."""
    while True:
        b = f.read(size)
        if not b:
            return
        yield b
