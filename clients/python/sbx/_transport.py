"""Sending a Call with httpx, sync or async, and when a call is sent again.

Retries follow what the API says (api/openapi/sbx-v1.yaml, "Retrying"): any call is sent again
when its connection could not be opened (nothing was sent) or when sbxd answered 429/503 with
``Retry-After`` (it was refused before anything was done); a call whose operation is marked
``x-sbx-idempotent`` also after its connection broke before the answer, or after 502. Nothing
else is repeated: an exec, a create or a process start may have run once already. A streamed
upload is never sent twice.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any, Optional

import httpx

from ._calls import Call
from ._config import Config
from .errors import SbxConnectionError, SbxTimeoutError, error_from_response

RETRY_AFTER_MAX_S = 30.0  # a longer Retry-After is cut to this
BACKOFF_BASE_S = 0.2  # first pause after a broken connection, doubled each time
CONNECT_TIMEOUT_S = 10.0


class RetryPlan:
    """The policy: after each failed try, the pause before the next, or the error to raise."""

    def __init__(self, call: Call, max_retries: int) -> None:
        self.call = call
        self.max_retries = max_retries if call.upload is None else 0
        self.attempt = 0

    def _next(self) -> Optional[float]:
        if self.attempt >= self.max_retries:
            return None
        self.attempt += 1
        return BACKOFF_BASE_S * (2 ** (self.attempt - 1))

    def after_error(self, exc: Exception) -> float:
        """A try that got no answer: the pause before the next try, else raises."""
        nothing_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
        if nothing_sent or (self.call.idempotent and isinstance(
                exc, (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError))):
            delay = self._next()
            if delay is not None:
                return delay
        what = f"{self.call.method} {self.call.path()}"
        if isinstance(exc, httpx.TimeoutException):
            raise SbxTimeoutError(f"{what}: no answer in time ({type(exc).__name__})") from exc
        raise SbxConnectionError(f"{what}: {exc or type(exc).__name__}") from exc

    def after_status(self, status: int, headers: httpx.Headers, body: bytes) -> float:
        """An error answer: the pause before the next try, else raises its error."""
        retry_after = headers.get("retry-after")
        delay: Optional[float] = None
        if status in (429, 503) and retry_after is not None and self.attempt < self.max_retries:
            self.attempt += 1
            try:
                delay = min(max(float(retry_after), 0.0), RETRY_AFTER_MAX_S)
            except ValueError:
                delay = 1.0
        elif status == 502 and self.call.idempotent:
            delay = self._next()
        if delay is None:
            raise error_from_response(status, body)
        return delay


def _timeout(cfg: Config, call: Call) -> httpx.Timeout:
    read = None if call.stream else cfg.request_timeout + call.extra_timeout
    return httpx.Timeout(connect=CONNECT_TIMEOUT_S, read=read, write=cfg.request_timeout,
                         pool=cfg.request_timeout)


def _request(client: Any, cfg: Config, call: Call) -> httpx.Request:
    body: Any = call.content if call.content is not None else call.upload
    return client.build_request(call.method, call.path(), params=call.query_items(),
                                json=call.json if body is None else None, content=body,
                                headers=call.headers or None, timeout=_timeout(cfg, call))


_NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def _sync_transport(cfg: Config) -> httpx.HTTPTransport:
    """A transport whose sockets have TCP_NODELAY. The sync backend sends a request's head and
    body in two writes; with Nagle's algorithm on, the body waits for the ACK of the head, which
    the server delays (40 ms a call here). httpx >= 0.24 takes socket_options; for 0.23 (Debian
    12) the pool's network backend is replaced by one that sets the option."""
    try:
        return httpx.HTTPTransport(verify=cfg.verify, socket_options=_NODELAY)  # type: ignore
    except TypeError:
        pass
    from httpcore.backends.sync import SyncBackend  # httpcore 0.16

    class NoDelayBackend(SyncBackend):  # type: ignore[misc]
        def connect_tcp(self, *a: Any, **kw: Any) -> Any:
            stream = super().connect_tcp(*a, **kw)
            stream.get_extra_info("socket").setsockopt(*_NODELAY[0])
            return stream

    t = httpx.HTTPTransport(verify=cfg.verify)
    t._pool._network_backend = NoDelayBackend()  # type: ignore[attr-defined]
    return t


def new_client(cfg: Config) -> httpx.Client:
    return httpx.Client(base_url=cfg.url, headers=cfg.headers(), transport=_sync_transport(cfg))


def new_async_client(cfg: Config) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=cfg.url, headers=cfg.headers(), verify=cfg.verify)


class Transport:
    """A sync httpx client with the retry policy."""

    def __init__(self, cfg: Config, client: Optional[httpx.Client] = None) -> None:
        self.cfg = cfg
        self.client = client or new_client(cfg)
        self.owned = client is None

    def send(self, call: Call) -> httpx.Response:
        """The answer (a 2xx): read whole, or open for reading when call.stream."""
        plan = RetryPlan(call, self.cfg.max_retries)
        while True:
            try:
                resp = self.client.send(_request(self.client, self.cfg, call), stream=True)
            except httpx.HTTPError as e:
                time.sleep(plan.after_error(e))
                continue
            try:
                if resp.status_code >= 400:
                    time.sleep(plan.after_status(resp.status_code, resp.headers, resp.read()))
                    resp.close()
                    continue
                if call.stream:
                    return resp
                resp.read()
            except httpx.HTTPError as e:
                resp.close()
                time.sleep(plan.after_error(e))
                continue
            except BaseException:
                resp.close()
                raise
            resp.close()
            return resp

    def call(self, call: Call) -> Any:
        resp = self.send(call)
        return call.parse(resp.status_code, resp.content)

    def close(self) -> None:
        if self.owned:
            self.client.close()


class AsyncTransport:
    """The same for asyncio."""

    def __init__(self, cfg: Config, client: Optional[httpx.AsyncClient] = None) -> None:
        self.cfg = cfg
        self.client = client or new_async_client(cfg)
        self.owned = client is None

    async def send(self, call: Call) -> httpx.Response:
        plan = RetryPlan(call, self.cfg.max_retries)
        while True:
            try:
                resp = await self.client.send(_request(self.client, self.cfg, call), stream=True)
            except httpx.HTTPError as e:
                await asyncio.sleep(plan.after_error(e))
                continue
            try:
                if resp.status_code >= 400:
                    delay = plan.after_status(resp.status_code, resp.headers, await resp.aread())
                    await resp.aclose()
                    await asyncio.sleep(delay)
                    continue
                if call.stream:
                    return resp
                await resp.aread()
            except httpx.HTTPError as e:
                await resp.aclose()
                await asyncio.sleep(plan.after_error(e))
                continue
            except BaseException:
                await resp.aclose()
                raise
            await resp.aclose()
            return resp

    async def call(self, call: Call) -> Any:
        resp = await self.send(call)
        return call.parse(resp.status_code, resp.content)

    async def close(self) -> None:
        if self.owned:
            await self.client.aclose()
