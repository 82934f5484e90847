"""Where sbxd is and which key to use, resolved as the ``sbx`` CLI does (cli/README.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Union
import ssl

DEFAULT_URL = "http://127.0.0.1:3000"
DEFAULT_STATE_DIR = "/var/lib/sbx"
DEFAULT_REQUEST_TIMEOUT = 60.0  # seconds for a call's answer (sbxd relays give up at 60 s)
DEFAULT_MAX_RETRIES = 2  # extra tries of a call the API says is safe to repeat


def _first_line(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline().strip()
    except OSError:
        return None
    return line or None


@dataclass(frozen=True)
class Config:
    """Connection settings. ``Config.resolve()`` fills what is not given from the environment:
    ``SBX_URL`` and ``SBX_API_KEY``, else ``E2B_API_URL`` / ``E2B_API_KEY`` (what sbxd prints at
    start), else the local state dir (``$SBX_STATE_DIR``, default /var/lib/sbx): its ``url``
    file and the first line of its ``keys``; the URL defaults to http://127.0.0.1:3000.

    Attributes:
        url: sbxd's base URL, without a trailing slash.
        api_key: sent as ``Authorization: Bearer``.
        request_timeout: seconds to wait for an answer (calls that wait longer on purpose, such
            as ``exec`` with a long ``timeout_ms``, add their own time to it).
        max_retries: how many more times a call is sent when the API says that is safe.
        verify: TLS verification for an https URL: True, False, a CA bundle path or a context.
    """

    url: str
    api_key: Optional[str]
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    verify: Union[bool, str, ssl.SSLContext] = True

    @classmethod
    def resolve(cls, url: Optional[str] = None, api_key: Optional[str] = None,
                request_timeout: Optional[float] = None, max_retries: Optional[int] = None,
                verify: Union[bool, str, ssl.SSLContext, None] = None) -> "Config":
        env = os.environ
        state = env.get("SBX_STATE_DIR") or DEFAULT_STATE_DIR
        u = url or env.get("SBX_URL") or env.get("E2B_API_URL")
        if not u:
            u = _first_line(os.path.join(state, "url"))
            if not u or not u.startswith("http"):
                u = DEFAULT_URL
        k = api_key or env.get("SBX_API_KEY") or env.get("E2B_API_KEY") or _first_line(
            os.path.join(state, "keys"))
        return cls(url=u.rstrip("/"), api_key=k,
                   request_timeout=DEFAULT_REQUEST_TIMEOUT if request_timeout is None
                   else request_timeout,
                   max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
                   verify=True if verify is None else verify)

    def headers(self) -> dict:
        h = {"User-Agent": "sbx-python"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def ssl_context(self) -> Optional[ssl.SSLContext]:
        """The TLS context of a WebSocket to an https URL (None for http)."""
        if not self.url.startswith("https:"):
            return None
        if isinstance(self.verify, ssl.SSLContext):
            return self.verify
        if isinstance(self.verify, str):
            return ssl.create_default_context(cafile=self.verify)
        ctx = ssl.create_default_context()
        if self.verify is False:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx
