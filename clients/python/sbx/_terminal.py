"""The terminal: a PTY in the sandbox over a WebSocket (api/openapi/sbx-v1.yaml, "terminal").

The protocol is websockets' sans-I/O client (Debian's python3-websockets 10.4 has no sync
client): one :class:`_TermProtocol` parses and builds the frames, and two small drivers move its
bytes over a socket (:class:`Terminal`) or asyncio streams (:class:`AsyncTerminal`).

Messages: binary frames both ways are terminal bytes; the client sends
``{"type":"resize","cols","rows"}`` as text; the server ends with ``{"type":"exit","exit_code"}``
and a close frame. Closing the socket kills the shell.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections import deque
from typing import Deque, Optional, Pattern, Union
from urllib.parse import urlsplit

from websockets.frames import Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

try:  # websockets >= 11
    from websockets.client import ClientProtocol as _Client  # type: ignore[attr-defined]
except ImportError:  # 10.x (Debian bookworm)
    from websockets.client import ClientConnection as _Client  # type: ignore[no-redef]

from ._config import Config
from .errors import SbxConnectionError, SbxTimeoutError, error_from_response

TERM_CONNECT_TIMEOUT_S = 10.0
TERM_HANDSHAKE_TIMEOUT_S = 30.0
TERM_READ_CHUNK = 65536
TERM_MAX_MESSAGE = 1 << 20  # largest message accepted from the server
TERM_CLOSE_WAIT_S = 2.0  # how long close() waits for the server's close frame

Expect = Union[str, bytes, Pattern[str]]


class _TermProtocol:
    """Frames in and out; no I/O. ``out`` holds output chunks not yet taken."""

    def __init__(self, cfg: Config, path: str) -> None:
        u = urlsplit(cfg.url)
        scheme = "wss" if u.scheme == "https" else "ws"
        self.uri = parse_uri(f"{scheme}://{u.netloc}{u.path.rstrip('/')}{path}")
        self.p = _Client(self.uri, max_size=TERM_MAX_MESSAGE)
        req = self.p.connect()
        if cfg.api_key:
            req.headers["Authorization"] = f"Bearer {cfg.api_key}"
        req.headers["User-Agent"] = "sbx-python"
        self.p.send_request(req)
        self.opened = False
        self.closed = False
        self.exit_code: Optional[int] = None
        self.out: Deque[bytes] = deque()
        self.buffer = b""  # output kept for expect()
        self._partial: Optional[tuple] = None  # (opcode, bytes) of a fragmented message

    def to_send(self) -> bytes:
        return b"".join(self.p.data_to_send())

    def receive(self, data: bytes) -> None:
        if data:
            self.p.receive_data(data)
        else:
            self.p.receive_eof()
            self.closed = True
        for ev in self.p.events_received():
            if isinstance(ev, Response):
                if ev.status_code != 101:
                    raise error_from_response(ev.status_code, ev.body or b"")
                self.opened = True
                continue
            self._frame(ev.opcode, bytes(ev.data), ev.fin)

    def _frame(self, op: Opcode, data: bytes, fin: bool) -> None:
        if op is Opcode.CLOSE:
            self.closed = True
            return
        if op not in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            return  # ping/pong: answered by the protocol
        if op is Opcode.CONT and self._partial:
            op, data = self._partial[0], self._partial[1] + data
        if not fin:
            self._partial = (op, data)
            return
        self._partial = None
        if op is Opcode.BINARY:
            self.out.append(data)
            return
        try:
            msg = json.loads(data)
        except ValueError:
            return
        if isinstance(msg, dict) and msg.get("type") == "exit":
            self.exit_code = int(msg.get("exit_code", -1))

    def input(self, data: Union[str, bytes]) -> None:
        self.p.send_binary(data.encode() if isinstance(data, str) else bytes(data))

    def resize(self, cols: int, rows: int) -> None:
        self.p.send_text(json.dumps({"type": "resize", "cols": cols, "rows": rows}).encode())

    def close(self) -> None:
        if not self.closed:
            self.p.send_close(1000)

    def expected(self, pattern: Expect) -> Optional[str]:
        """One step of expect(): the output up to and including pattern, or None to read on;
        SbxConnectionError when the terminal closed before pattern appeared."""
        got = self.match(pattern)
        if got is None and self.closed:
            raise SbxConnectionError(f"terminal closed before {pattern!r} appeared")
        return got

    def take(self) -> bytes:
        chunk = self.out.popleft()
        return chunk

    def match(self, pattern: Expect) -> Optional[str]:
        """Move output into the expect buffer; the text up to and including pattern's first
        match (removed from the buffer), or None."""
        while self.out:
            self.buffer += self.out.popleft()
        text = self.buffer.decode("utf-8", "replace")
        if isinstance(pattern, (str, bytes)):
            pat = pattern.decode() if isinstance(pattern, bytes) else pattern
            i = text.find(pat)
            end = -1 if i < 0 else i + len(pat)
        else:
            m = pattern.search(text)
            end = -1 if m is None else m.end()
        if end < 0:
            return None
        self.buffer = text[end:].encode()
        return text[:end]


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


def _deadline(timeout: Optional[float]) -> Optional[float]:
    return None if timeout is None else time.monotonic() + timeout


class _TerminalState:
    """What the sync and the async terminal both tell from their protocol state."""

    _p: _TermProtocol

    @property
    def exit_code(self) -> Optional[int]:
        """The shell's exit code once it has exited, else None."""
        return self._p.exit_code

    @property
    def closed(self) -> bool:
        return self._p.closed


class Terminal(_TerminalState):
    """An interactive shell in the sandbox. Use ``send()`` to type, ``recv()`` for output as it
    comes, ``expect()`` to wait for some text, ``resize()``, ``wait()`` for the exit code and
    ``close()`` (which kills the shell). A context manager."""

    def __init__(self, cfg: Config, path: str) -> None:
        self._p = _TermProtocol(cfg, path)
        host, port = self._p.uri.host, self._p.uri.port
        try:
            sock = socket.create_connection((host, port), timeout=TERM_CONNECT_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # keystrokes go at once
            ctx = cfg.ssl_context()
            self._sock = ctx.wrap_socket(sock, server_hostname=host) if ctx else sock
        except OSError as e:
            raise SbxConnectionError(f"terminal: cannot connect to {host}:{port}: {e}") from e
        self._flush()
        deadline = _deadline(TERM_HANDSHAKE_TIMEOUT_S)
        while not self._p.opened:
            if self._p.closed or not self._read(deadline):
                self._sock.close()
                raise SbxConnectionError("terminal: no WebSocket handshake answer")

    def _flush(self) -> None:
        data = self._p.to_send()
        if data:
            try:
                self._sock.sendall(data)
            except OSError as e:
                self._p.closed = True
                raise SbxConnectionError(f"terminal: {e}") from e

    def _read(self, deadline: Optional[float]) -> bool:
        """One read (False when the deadline passed first)."""
        self._sock.settimeout(_remaining(deadline))
        try:
            data = self._sock.recv(TERM_READ_CHUNK)
        except socket.timeout:
            return False
        except OSError:
            data = b""
        self._p.receive(data)
        self._flush()
        return True

    def send(self, data: Union[str, bytes]) -> None:
        """Type data (text is sent as UTF-8)."""
        self._p.input(data)
        self._flush()

    def resize(self, cols: int, rows: int) -> None:
        """Set the terminal's size (the shell gets SIGWINCH)."""
        self._p.resize(cols, rows)
        self._flush()

    def recv(self, timeout: Optional[float] = None) -> bytes:
        """The next output chunk; b"" once the shell has exited and its output is all read.
        Raises SbxTimeoutError when nothing came within timeout seconds."""
        deadline = _deadline(timeout)
        while not self._p.out:
            if self._p.closed:
                return b""
            if not self._read(deadline):
                raise SbxTimeoutError("terminal: no output in time")
        return self._p.take()

    def expect(self, pattern: Expect, timeout: Optional[float] = 30.0) -> str:
        """Read until pattern (a string or a compiled regex) appears in the output; return the
        output up to and including it (later output stays for the next call)."""
        deadline = _deadline(timeout)
        while (got := self._p.expected(pattern)) is None:
            if not self._read(deadline):
                raise SbxTimeoutError(f"terminal: {pattern!r} did not appear in time")
        return got

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """Read (and drop) output until the shell exits; its exit code."""
        deadline = _deadline(timeout)
        while not self._p.closed:
            self._p.out.clear()
            if not self._read(deadline):
                raise SbxTimeoutError("terminal: the shell did not exit in time")
        self._sock.close()
        return self._p.exit_code

    def close(self) -> None:
        """Close the WebSocket: the shell is killed."""
        if not self._p.closed:
            self._p.close()
            try:
                self._flush()
                deadline = _deadline(TERM_CLOSE_WAIT_S)
                while not self._p.closed and self._read(deadline):
                    pass
            except SbxConnectionError:
                pass
        self._p.closed = True
        self._sock.close()

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncTerminal(_TerminalState):
    """The asyncio terminal: the same methods, awaited. ``await asb.terminal()`` opens it;
    ``async with`` closes it."""

    def __init__(self, cfg: Config, path: str) -> None:
        self._cfg = cfg
        self._p = _TermProtocol(cfg, path)
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None

    async def _open(self) -> "AsyncTerminal":
        host, port = self._p.uri.host, self._p.uri.port
        ctx = self._cfg.ssl_context()
        try:
            self._reader, self._writer = await asyncio.wait_for(asyncio.open_connection(
                host, port, ssl=ctx, server_hostname=host if ctx else None),
                TERM_CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError) as e:
            raise SbxConnectionError(f"terminal: cannot connect to {host}:{port}: {e}") from e
        await self._flush()
        deadline = _deadline(TERM_HANDSHAKE_TIMEOUT_S)
        while not self._p.opened:
            if self._p.closed or not await self._read(deadline):
                self._writer.close()
                raise SbxConnectionError("terminal: no WebSocket handshake answer")
        return self

    async def _flush(self) -> None:
        data = self._p.to_send()
        if data and self._writer:
            try:
                self._writer.write(data)
                await self._writer.drain()
            except OSError as e:
                self._p.closed = True
                raise SbxConnectionError(f"terminal: {e}") from e

    async def _read(self, deadline: Optional[float]) -> bool:
        assert self._reader is not None
        try:
            data = await asyncio.wait_for(self._reader.read(TERM_READ_CHUNK), _remaining(deadline))
        except asyncio.TimeoutError:
            return False
        except OSError:
            data = b""
        self._p.receive(data)
        await self._flush()
        return True

    async def send(self, data: Union[str, bytes]) -> None:
        self._p.input(data)
        await self._flush()

    async def resize(self, cols: int, rows: int) -> None:
        self._p.resize(cols, rows)
        await self._flush()

    async def recv(self, timeout: Optional[float] = None) -> bytes:
        deadline = _deadline(timeout)
        while not self._p.out:
            if self._p.closed:
                return b""
            if not await self._read(deadline):
                raise SbxTimeoutError("terminal: no output in time")
        return self._p.take()

    async def expect(self, pattern: Expect, timeout: Optional[float] = 30.0) -> str:
        deadline = _deadline(timeout)
        while (got := self._p.expected(pattern)) is None:
            if not await self._read(deadline):
                raise SbxTimeoutError(f"terminal: {pattern!r} did not appear in time")
        return got

    async def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        deadline = _deadline(timeout)
        while not self._p.closed:
            self._p.out.clear()
            if not await self._read(deadline):
                raise SbxTimeoutError("terminal: the shell did not exit in time")
        await self._shut()
        return self._p.exit_code

    async def _shut(self) -> None:
        if self._writer:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass

    async def close(self) -> None:
        if not self._p.closed and self._writer:
            self._p.close()
            try:
                await self._flush()
                deadline = _deadline(TERM_CLOSE_WAIT_S)
                while not self._p.closed and await self._read(deadline):
                    pass
            except SbxConnectionError:
                pass
        self._p.closed = True
        await self._shut()

    async def __aenter__(self) -> "AsyncTerminal":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
