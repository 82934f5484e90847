"""A pull's progress stream (``POST /v1/images/pull`` with ``Accept: application/x-ndjson``):
one JSON object a line, read as it arrives, ending in ``{"status": "done", "image": ...}`` or
``{"status": "error", "error": {...}}``. Closing the stream (``close()``, leaving its ``with``
block, an exception in the caller's loop, a cancelled task) closes the HTTP connection, and sbxd
cancels the pull: nothing of it is kept but the layers it stored. A connection broken before the
last line is opened again (a pull is safe to repeat: stored layers are not transferred twice).
"""

from __future__ import annotations

import inspect
import json
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional

import httpx

from ._calls import Call
from ._streams import _AsyncOpening, _Stream, _SyncStream
from ._transport import AsyncTransport, Transport
from .errors import SbxConnectionError, api_error
from .models import ImageInfo, PullProgress

PULL_MAX_LINE = 1 << 20  # a longer progress line is a broken stream (the last holds the image)


class NdjsonLines:
    """JSON objects from bytes as they come, one a line; a line is at most PULL_MAX_LINE."""

    def __init__(self) -> None:
        self.parts: List[bytes] = []
        self.size = 0

    def feed(self, chunk: bytes) -> List[Dict[str, Any]]:
        *lines, tail = chunk.split(b"\n")
        out = []
        for i, line in enumerate(lines):
            if i == 0 and self.parts:
                line = b"".join(self.parts) + line
                self.parts, self.size = [], 0
            if len(line) > PULL_MAX_LINE:
                raise SbxConnectionError("pull: a progress line longer than 1 MiB")
            if line.strip():
                try:
                    doc = json.loads(line)
                except ValueError:
                    raise SbxConnectionError("pull: a progress line that is not JSON") from None
                if isinstance(doc, dict):
                    out.append(doc)
        if tail:
            self.parts.append(tail)
            self.size += len(tail)
            if self.size > PULL_MAX_LINE:
                raise SbxConnectionError("pull: a progress line longer than 1 MiB")
        return out


class _Pull(_Stream):
    """What the sync and async streams share: the lines read so far and what the last says."""

    def __init__(self, call: Call) -> None:
        super().__init__(lambda: call)
        self.image: Optional[ImageInfo] = None
        self._lines = NdjsonLines()
        self._pending: Deque[Dict[str, Any]] = deque()

    def _restart(self) -> None:
        self._lines = NdjsonLines()
        self._pending.clear()

    def _take(self) -> Optional[PullProgress]:
        """The next progress event, None when the stream ended (image set); raises the
        pull's error."""
        d = self._pending.popleft()
        status = d.get("status")
        if status == "done":
            self.image = ImageInfo.from_json(d.get("image") or {})
            return None
        if status == "error":
            e = d.get("error") if isinstance(d.get("error"), dict) else {}
            raise api_error(int(e.get("status") or 500), str(e.get("code") or ""),
                            str(e.get("message") or ""))
        return PullProgress.from_json(d)

    def _whole(self, resp: httpx.Response, body: bytes) -> None:
        """An answer that is not a stream (201 with the image): the pull is done."""
        if resp.status_code == 201:
            self.image = ImageInfo.from_json(json.loads(body))
            self._closed = True


class PullStream(_Pull, _SyncStream):
    """A pull's progress as :class:`PullProgress` events, until it is done: then ``image`` is
    the :class:`ImageInfo`. The pull's failure is raised, typed, where the stream ends.
    ``close()`` (or leaving the ``with`` block early) cancels the pull on the server."""

    def __init__(self, transport: Transport, call: Call,
                 on_close: Optional[Callable[[], None]] = None) -> None:
        super().__init__(call)
        self._t = transport
        self._on_close = on_close
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        self._restart()
        self._resp = self._t.send(self._call_for())
        if self._resp.headers.get("content-type", "").startswith("application/json"):
            self._whole(self._resp, self._resp.read())
        else:
            self._chunks = self._resp.iter_raw()

    def __iter__(self) -> "PullStream":
        return self

    def __next__(self) -> PullProgress:
        while True:
            if self._pending:
                try:
                    ev = self._take()
                except BaseException:
                    self.close()
                    raise
                if ev is not None:
                    return ev
                self.close()
            if self._closed:
                raise StopIteration
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self.close()
                raise SbxConnectionError("pull: the stream ended before the pull did") from None
            except (httpx.ReadError, httpx.RemoteProtocolError) as e:
                self._resp.close()
                self._retries += 1
                if self._retries > self._t.cfg.max_retries:
                    self.close()
                    raise SbxConnectionError(f"pull: {e}") from e
                try:
                    self._open()
                except BaseException:
                    self.close()
                    raise
                continue
            try:
                self._pending.extend(self._lines.feed(chunk))
            except BaseException:
                self.close()
                raise

    def wait(self, on_progress: Optional[Callable[[PullProgress], Any]] = None) -> ImageInfo:
        """Read to the end (each event to ``on_progress``) and return the image."""
        with self:
            for ev in self:
                if on_progress is not None:
                    on_progress(ev)
        if self.image is None:
            raise SbxConnectionError("pull: closed before it was done")
        return self.image

    def close(self) -> None:
        """Stop reading; a pull still running is cancelled on the server."""
        super().close()
        if self._on_close is not None:
            cb, self._on_close = self._on_close, None
            cb()


class AsyncPullStream(_Pull, _AsyncOpening):
    """The async :class:`PullStream`: ``async with AsyncImages.pull_stream(ref) as p: async for
    ev in p``; cancelling the task or ``aclose()`` cancels the pull on the server."""

    def __init__(self, transport: AsyncTransport, call: Call,
                 on_close: Optional[Callable[[], Any]] = None) -> None:
        super().__init__(call)
        self._t = transport
        self._on_close = on_close

    async def _open(self) -> None:
        self._restart()
        try:
            self._resp = await self._t.send(self._call_for())
            if self._resp.headers.get("content-type", "").startswith("application/json"):
                self._whole(self._resp, await self._resp.aread())
            else:
                self._chunks = self._resp.aiter_raw()
        except BaseException:
            await self.aclose()
            raise

    async def __anext__(self) -> PullProgress:
        await self._ensure()
        while True:
            if self._pending:
                try:
                    ev = self._take()
                except BaseException:
                    await self.aclose()
                    raise
                if ev is not None:
                    return ev
                await self.aclose()
            if self._closed:
                raise StopAsyncIteration
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                await self.aclose()
                raise SbxConnectionError("pull: the stream ended before the pull did") from None
            except (httpx.ReadError, httpx.RemoteProtocolError) as e:
                await self._resp.aclose()
                self._retries += 1
                if self._retries > self._t.cfg.max_retries:
                    await self.aclose()
                    raise SbxConnectionError(f"pull: {e}") from e
                await self._open()
                continue
            try:
                self._pending.extend(self._lines.feed(chunk))
            except BaseException:
                await self.aclose()
                raise

    async def wait(self, on_progress: Optional[Callable[[PullProgress], Any]] = None
                   ) -> ImageInfo:
        """As :meth:`PullStream.wait`; ``on_progress`` may be a coroutine function."""
        async with self:
            async for ev in self:
                if on_progress is not None:
                    r = on_progress(ev)
                    if inspect.isawaitable(r):
                        await r
        if self.image is None:
            raise SbxConnectionError("pull: closed before it was done")
        return self.image

    async def aclose(self) -> None:
        """Stop reading; a pull still running is cancelled on the server."""
        await super().aclose()
        if self._on_close is not None:
            cb, self._on_close = self._on_close, None
            await cb()

    close = aclose
