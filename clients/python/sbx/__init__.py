"""sbx: Python client of sbx's native API (/v1).

    from sbx import Sbx, AsyncSbx         # SBX_URL / SBX_API_KEY from the environment
    sb = Sbx.create(template="base")
    sb.exec(["python3", "-c", "print(2+2)"], timeout_ms=30_000).check().stdout   # "4\\n"
    sb.kill()

:class:`Sbx` is synchronous; :class:`AsyncSbx` has the same methods for asyncio.
"""

from ._config import Config
from ._pull import AsyncPullStream, PullStream
from ._streams import AsyncLogStream, AsyncWatch, LogStream, Watch
from ._terminal import AsyncTerminal, Terminal
from .asandbox import (AsyncFiles, AsyncImages, AsyncProcess, AsyncProcesses, AsyncSbx,
                       AsyncStorage, AsyncTemplates)
from .errors import (ApiError, AuthError, BadRequestError, CommandError, CommandTimeoutError,
                     ConflictError, ForbiddenError, InsufficientStorageError, InternalError,
                     LimitError, NotFoundError, OutputTooLargeError, PayloadTooLargeError,
                     SandboxPausedError, SbxConnectionError, SbxError, SbxTimeoutError,
                     ServerTimeoutError, ServiceUnavailableError, TooManyRequestsError,
                     UnavailableError)
from .models import (Entry, ExecResult, FsEvent, ImageInfo, ImageLayer, ImageSource, ProcessInfo,
                     PullLayer, PullProgress, RunCodeResult, SandboxDisk, SandboxInfo, SearchMatch,
                     SearchResult, StorageInfo, StoragePool, TemplateInfo)
from .sandbox import Files, Images, Process, Processes, Sbx, Storage, Templates

__version__ = "0.1.0"

__all__ = [
    "Sbx", "AsyncSbx", "Config", "Files", "AsyncFiles", "Processes", "AsyncProcesses",
    "Process", "AsyncProcess", "Images", "AsyncImages", "Templates", "AsyncTemplates",
    "Storage", "AsyncStorage", "Terminal", "AsyncTerminal",
    "LogStream", "AsyncLogStream", "Watch", "AsyncWatch", "PullStream", "AsyncPullStream",
    "SandboxInfo", "ExecResult", "RunCodeResult", "ProcessInfo", "Entry", "SearchMatch",
    "SearchResult", "FsEvent", "ImageInfo", "ImageLayer", "ImageSource", "PullProgress",
    "PullLayer", "TemplateInfo", "StorageInfo", "StoragePool", "SandboxDisk",
    "SbxError", "ApiError", "BadRequestError", "AuthError", "ForbiddenError", "NotFoundError",
    "ConflictError", "SandboxPausedError", "LimitError", "PayloadTooLargeError",
    "OutputTooLargeError", "TooManyRequestsError", "InsufficientStorageError",
    "SbxTimeoutError", "ServerTimeoutError", "UnavailableError", "ServiceUnavailableError",
    "SbxConnectionError", "InternalError", "CommandError", "CommandTimeoutError",
]
