// sbx: TypeScript client of sbx's native API (/v1), for Node 18+ and browsers.
//
//   import { Sbx } from 'sbx'                  // SBX_URL / SBX_API_KEY from the environment
//   const sb = await Sbx.create({ template: 'base' })
//   const r = await sb.exec(['python3', '-c', 'print(2+2)'], { timeoutMs: 30_000 }); r.check()
export { Sbx, Files, Images, Process, Processes, Storage, Templates } from './sandbox.js'
export type { CreateOptions, PullOptions, RunOptions } from './sandbox.js'
export { LogStream, Watch } from './streams.js'
export { PullStream } from './pull.js'
export { Terminal } from './terminal.js'
export { resolveConfig } from './config.js'
export type { Config, ConnectionOptions, WebSocketCtor } from './config.js'
export { OPERATIONS } from './calls.js'
export type { Cmd, Lang, OperationId, PullBody, SearchOptions, StartOptions, User } from './calls.js'
export { ExecResult, RunCodeResult } from './models.js'
export type {
  Entry, FsEvent, ImageInfo, ImageSource, ProcessInfo, PullLayer, PullProgress, SandboxDisk, SandboxInfo,
  SearchMatch, SearchResult, StorageInfo, StoragePool, TemplateInfo,
} from './models.js'
export {
  ApiError, AuthError, BadRequestError, CommandError, CommandTimeoutError, ConflictError,
  ForbiddenError, InsufficientStorageError, InternalError, LimitError, NotFoundError,
  OutputTooLargeError, PayloadTooLargeError, SandboxPausedError, SbxConnectionError, SbxError,
  SbxTimeoutError, ServerTimeoutError, ServiceUnavailableError, TooManyRequestsError,
  UnavailableError, apiError, errorFromResponse,
} from './errors.js'
