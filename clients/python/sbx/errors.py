"""The errors a client raises: one class per failure class the API answers.

Every error of the API has one shape, ``{"error": {"code", "message"}}`` with an HTTP status
(api/openapi/sbx-v1.yaml); :func:`error_from_response` turns it into the class below for its
status (and, for a 409 of a paused sandbox, its code). Failures that never reached an answer
(sbxd unreachable, a connection broken mid-call) are :class:`UnavailableError`; a call that ran
out of time on the client's side is :class:`SbxTimeoutError`. ``CommandError`` is raised by
``ExecResult.check()`` for a command that failed, never by a call itself.
"""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, Any, Dict, Optional, Type

if TYPE_CHECKING:  # pragma: no cover
    from .models import ExecResult, RunCodeResult


class SbxError(Exception):
    """Base class of every error raised by this package."""


class ApiError(SbxError):
    """sbxd answered the call with an error status.

    Attributes:
        status: the HTTP status (400, 404, ...).
        code: the API's error code (``not_found``, ``sandbox_paused``, ...).
        message: the API's message, meant for people.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({status} {code})")
        self.status = status
        self.code = code
        self.message = message


class BadRequestError(ApiError):
    """400: the request was refused as invalid (a bad argument, an unknown user, ...)."""


class AuthError(ApiError):
    """401: the API key is missing or wrong."""


class ForbiddenError(ApiError):
    """403: the sandbox's user may not do this (a file's permissions), or a registry wants
    credentials for a pull or refused them (``registry_denied``)."""


class NotFoundError(ApiError):
    """404: no such sandbox, process, file, image or route, or no such image or tag in the
    registry of a pull."""


class ConflictError(ApiError):
    """409: the target's state forbids it (already paused, process exited, path exists...)."""


class SandboxPausedError(ConflictError):
    """409 ``sandbox_paused``: the sandbox is paused; resume it first."""


class LimitError(ApiError):
    """A limit was hit: the call's body, its output, sbxd's capacity or the disk."""


class PayloadTooLargeError(LimitError):
    """413: the request's body or code is over its limit."""


class OutputTooLargeError(LimitError):
    """422: the command's output passed 16 MiB; it was killed. Redirect it to a file."""


class TooManyRequestsError(LimitError):
    """429: sbxd is at its sandbox limit; nothing was created (retried after Retry-After)."""


class InsufficientStorageError(LimitError):
    """507: the sandbox's disk (or sbxd's state disk) is full, or the host cannot hold a
    larger storage pool."""


class SbxTimeoutError(SbxError, builtins.TimeoutError):
    """A call or a wait ran out of time (the client's deadline, or 504 from the sandbox)."""


class ServerTimeoutError(ApiError, SbxTimeoutError):
    """504: the sandbox gave up waiting (a process that does not read its stdin)."""


class UnavailableError(SbxError):
    """The sandbox or sbxd cannot be reached: 502/503, or no answer at all."""


class ServiceUnavailableError(ApiError, UnavailableError):
    """502 ``sandbox_unavailable`` or 503 ``unavailable``; for a pull, a registry that cannot
    be reached (502 ``unreachable``), answers out of the protocol or with a blob that is not
    its digest (502 ``bad_registry``), or limits sbxd (503 ``registry_busy``)."""


class SbxConnectionError(UnavailableError):
    """No answer: sbxd refused the connection, or it broke before the answer."""


class InternalError(ApiError):
    """500 (or another unexpected status): a failure inside sbxd or the sandbox."""


class CommandError(SbxError):
    """Raised by ``check()`` of a result whose command failed (non-zero exit or timeout).

    Attributes:
        exit_code: the command's exit code (-1 when it was killed or timed out).
        stdout, stderr: its output.
        result: the whole result.
    """

    def __init__(self, result: "ExecResult | RunCodeResult") -> None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        what = "timed out" if result.timed_out else f"exited with code {result.exit_code}"
        super().__init__(f"command {what}" + (": " + " / ".join(tail) if tail else ""))
        self.result = result
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr


class CommandTimeoutError(CommandError, SbxTimeoutError):
    """``check()`` of a command that ran past its ``timeout_ms`` and was killed."""


_BY_STATUS: Dict[int, Type[ApiError]] = {
    400: BadRequestError,
    401: AuthError,
    403: ForbiddenError,
    404: NotFoundError,
    405: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: OutputTooLargeError,
    426: BadRequestError,
    429: TooManyRequestsError,
    502: ServiceUnavailableError,
    503: ServiceUnavailableError,
    504: ServerTimeoutError,
    507: InsufficientStorageError,
}

_BY_CODE: Dict[str, Type[ApiError]] = {
    "sandbox_paused": SandboxPausedError,
}


def api_error(status: int, code: str, message: str) -> ApiError:
    """The error for an API error of ``status`` with ``code`` and ``message``: an answer's, or
    the error line that ends a stream (a pull's progress)."""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or (
        InternalError if status >= 500 else BadRequestError)
    return cls(status, code or f"http_{status}", message or f"HTTP {status}")


def error_from_response(status: int, body: bytes) -> ApiError:
    """The error for an answer with ``status`` and ``body`` (the API's error JSON, or anything
    else a proxy in between might have sent)."""
    code, message = "", ""
    try:
        doc: Any = json.loads(body)
        err = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(err, dict):
            code, message = str(err.get("code", "")), str(err.get("message", ""))
        elif isinstance(doc, dict) and "message" in doc:  # sbxd's front door answers E2B's shape
            message = str(doc["message"])
    except (ValueError, UnicodeDecodeError):
        message = body[:200].decode("utf-8", "replace").strip()
    return api_error(status, code, message)
