"""Streamed answers: a process's output as it is written (``logs?follow=true``) and a file
watch (server-sent events). Each is an iterator (sync) or async iterator whose ``close()`` /
``aclose()`` closes the HTTP connection, which ends the stream on the server: sbxd sees the
client leave and drops the sandbox's side (the watch's inotify instance, the log follower).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Deque, Iterator, List, Optional, TypeVar

import httpx

from ._calls import Call
from ._transport import AsyncTransport, Transport
from .errors import SbxConnectionError
from .models import FsEvent

SSE_MAX_LINE = 1 << 20  # a longer event line is a broken stream

_S = TypeVar("_S", bound="_SyncStream")


class SseParser:
    """Server-sent events from bytes as they come: the ``data:`` of each event, and whether the
    ``: watching`` comment (the watch is armed) has been seen."""

    def __init__(self) -> None:
        self.buf = b""
        self.data: List[str] = []
        self.armed = False

    def feed(self, chunk: bytes) -> List[str]:
        self.buf += chunk
        if len(self.buf) > SSE_MAX_LINE and b"\n" not in self.buf:
            raise SbxConnectionError("watch: an event line longer than 1 MiB")
        events = []
        *lines, self.buf = self.buf.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if line == "":
                if self.data:
                    events.append("\n".join(self.data))
                    self.data = []
            elif line.startswith(":"):
                self.armed = self.armed or line.startswith(": watching")
            elif line.startswith("data:"):
                self.data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
        return events


class _Stream:
    """Shared state of a sync or async stream: the call, its open answer, its chunks."""

    def __init__(self, call_for: Callable[[], Call]) -> None:
        self._call_for = call_for
        self._resp: Optional[httpx.Response] = None
        self._chunks: Any = None
        self._closed = False
        self._retries = 0

    @property
    def closed(self) -> bool:
        return self._closed


class _SyncStream(_Stream):
    """A sync stream's end: ``close()``, or leaving its ``with`` block."""

    def close(self) -> None:
        """Stop reading: the connection is closed and the server stops sending."""
        self._closed = True
        if self._resp is not None:
            self._resp.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LogStream(_SyncStream):
    """A managed process's output (stdout and stderr interleaved) as byte chunks, from
    ``offset``, until the process has exited and everything is read. A broken connection is
    reopened at the offset reached (the call is idempotent). ``offset`` tells how far it is."""

    def __init__(self, transport: Transport, call_for: Callable[[int], Call], offset: int) -> None:
        super().__init__(lambda: call_for(self.offset))
        self._t = transport
        self.offset = offset
        self._open()

    def _open(self) -> None:
        self._resp = self._t.send(self._call_for())
        self._chunks = self._resp.iter_raw()

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        while not self._closed:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self.close()
                break
            except (httpx.ReadError, httpx.RemoteProtocolError) as e:
                self._resp.close()
                self._retries += 1
                if self._retries > self._t.cfg.max_retries:
                    self.close()
                    raise SbxConnectionError(f"process output: {e}") from e
                self._open()
                continue
            if chunk:
                self.offset += len(chunk)
                return chunk
        raise StopIteration

    def read_all(self) -> bytes:
        """Everything until the process ends."""
        return b"".join(self)



class Watch(_SyncStream):
    """Changes under a directory as :class:`FsEvent` values, in the order they happened. The
    watch is armed when ``files.watch()`` returns, so every change after that is seen. Iterate
    it; ``close()`` (or leaving the ``with`` block) ends it on the server."""

    def __init__(self, transport: Transport, call: Call) -> None:
        super().__init__(lambda: call)
        self._parser = SseParser()
        self._pending: Deque[str] = deque()
        self._resp = transport.send(call)
        self._chunks = self._resp.iter_raw()
        try:
            while not self._parser.armed:
                self._pending.extend(self._parser.feed(self._next_chunk()))
        except StopIteration:
            raise SbxConnectionError("watch: the stream ended before it was armed") from None
        except BaseException:
            self.close()
            raise

    def _next_chunk(self) -> bytes:
        try:
            return next(self._chunks)
        except StopIteration:
            self.close()
            raise
        except httpx.HTTPError as e:
            self.close()
            raise SbxConnectionError(f"watch: {e}") from e

    def __iter__(self) -> Iterator[FsEvent]:
        return self

    def __next__(self) -> FsEvent:
        while not self._pending:
            if self._closed:
                raise StopIteration
            self._pending.extend(self._parser.feed(self._next_chunk()))
        return FsEvent.from_data(self._pending.popleft())



class _AsyncOpening:
    """Async streams open on first use: ``await x``, ``async with x`` or ``async for``; and
    end with ``aclose()`` (also ``close()``), or leaving their ``async with`` block."""

    _resp: Optional[httpx.Response]
    _closed: bool

    async def _open(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    _opened = False

    async def _ensure(self) -> None:
        if not self._opened:
            self._opened = True
            await self._open()

    def __await__(self):  # type: ignore[no-untyped-def]
        async def opened():  # type: ignore[no-untyped-def]
            await self._ensure()
            return self
        return opened().__await__()

    async def __aenter__(self):  # type: ignore[no-untyped-def]
        await self._ensure()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __aiter__(self):  # type: ignore[no-untyped-def]
        return self

    async def aclose(self) -> None:
        """Stop reading: the connection is closed and the server stops sending."""
        self._closed = True
        self._opened = True
        if self._resp is not None:
            await self._resp.aclose()

    close = aclose


class AsyncLogStream(_Stream, _AsyncOpening):
    """The async :class:`LogStream`: ``async for chunk in proc.stream()``; ``aclose()`` stops
    it on the server."""

    def __init__(self, transport: AsyncTransport, call_for: Callable[[int], Call],
                 offset: int) -> None:
        super().__init__(lambda: call_for(self.offset))
        self._t = transport
        self.offset = offset

    async def _open(self) -> None:
        self._resp = await self._t.send(self._call_for())
        self._chunks = self._resp.aiter_raw()

    async def __anext__(self) -> bytes:
        await self._ensure()
        while not self._closed:
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                await self.aclose()
                break
            except (httpx.ReadError, httpx.RemoteProtocolError) as e:
                await self._resp.aclose()
                self._retries += 1
                if self._retries > self._t.cfg.max_retries:
                    await self.aclose()
                    raise SbxConnectionError(f"process output: {e}") from e
                await self._open()
                continue
            if chunk:
                self.offset += len(chunk)
                return chunk
        raise StopAsyncIteration

    async def read_all(self) -> bytes:
        return b"".join([c async for c in self])


class AsyncWatch(_Stream, _AsyncOpening):
    """The async :class:`Watch`: ``async with asb.files.watch(path) as w: async for ev in w``.
    Armed once opened (awaited, entered or first iterated)."""

    def __init__(self, transport: AsyncTransport, call: Call) -> None:
        super().__init__(lambda: call)
        self._t = transport
        self._parser = SseParser()
        self._pending: Deque[str] = deque()

    async def _open(self) -> None:
        self._resp = await self._t.send(self._call_for())
        self._chunks = self._resp.aiter_raw()
        try:
            while not self._parser.armed:
                self._pending.extend(self._parser.feed(await self._next_chunk()))
        except StopAsyncIteration:
            raise SbxConnectionError("watch: the stream ended before it was armed") from None
        except BaseException:
            await self.aclose()
            raise

    async def _next_chunk(self) -> bytes:
        try:
            return await self._chunks.__anext__()
        except StopAsyncIteration:
            await self.aclose()
            raise
        except httpx.HTTPError as e:
            await self.aclose()
            raise SbxConnectionError(f"watch: {e}") from e

    async def __anext__(self) -> FsEvent:
        await self._ensure()
        while not self._pending:
            if self._closed:
                raise StopAsyncIteration
            self._pending.extend(self._parser.feed(await self._next_chunk()))
        return FsEvent.from_data(self._pending.popleft())
