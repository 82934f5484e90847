// The errors the client throws: one class per failure class the API answers. Every API error
// has one shape, {"error": {"code", "message"}} with an HTTP status (api/openapi/sbx-v1.yaml);
// errorFromResponse() picks the class for its status (and, for a paused sandbox, its code).
// No answer at all is SbxConnectionError; the client's own deadline is SbxTimeoutError.
// CommandError is thrown by check() of a failed command's result, never by a call.
import type { ExecResult, RunCodeResult } from './models.js'

export class SbxError extends Error {
  constructor(message: string) {
    super(message)
    this.name = new.target.name
  }
}

// The message of every error that carries the answer's status and code (ApiError and the two
// answers that are a timeout or an unavailable service rather than an ApiError).
const statusMessage = (status: number, code: string, message: string) => `${message} (${status} ${code})`

/** sbxd answered with an error status. */
export class ApiError extends SbxError {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(statusMessage(status, code, message))
  }
}

/** 400: refused as invalid. */
export class BadRequestError extends ApiError {}
/** 401: the API key is missing or wrong. */
export class AuthError extends ApiError {}
/** 403: the sandbox's user may not do this, or a registry wants credentials for a pull or refused them (registry_denied). */
export class ForbiddenError extends ApiError {}
/** 404: no such sandbox, process, file, image or route, or no such image or tag in a pull's registry. */
export class NotFoundError extends ApiError {}
/** 409: the target's state forbids it. */
export class ConflictError extends ApiError {}
/** 409 sandbox_paused: resume the sandbox first. */
export class SandboxPausedError extends ConflictError {}
/** A limit was hit: a body, an output, sbxd's capacity or a disk. */
export class LimitError extends ApiError {}
/** 413: the request's body or code is over its limit. */
export class PayloadTooLargeError extends LimitError {}
/** 422: the command's output passed 16 MiB; it was killed. */
export class OutputTooLargeError extends LimitError {}
/** 429: sbxd is at its sandbox limit; nothing was created. */
export class TooManyRequestsError extends LimitError {}
/** 507: a disk is full, or the host cannot hold a larger storage pool. */
export class InsufficientStorageError extends LimitError {}
/** 500 or another unexpected status. */
export class InternalError extends ApiError {}

/** A call or a wait ran out of time. */
export class SbxTimeoutError extends SbxError {}
/** 504: the sandbox gave up waiting (a process that does not read its stdin). */
export class ServerTimeoutError extends SbxTimeoutError {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(statusMessage(status, code, message))
  }
}

/** The sandbox or sbxd cannot be reached. */
export class UnavailableError extends SbxError {}
/** 502 sandbox_unavailable, 503 unavailable; for a pull, a registry unreachable (502 unreachable),
 * out of the protocol or with a blob that is not its digest (502 bad_registry), or busy (503 registry_busy). */
export class ServiceUnavailableError extends UnavailableError {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(statusMessage(status, code, message))
  }
}
/** No answer: the connection could not be opened, or broke before the answer. */
export class SbxConnectionError extends UnavailableError {}

/** Thrown by check() of a command that exited non-zero. */
export class CommandError extends SbxError {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
  readonly result: ExecResult | RunCodeResult
  constructor(result: ExecResult | RunCodeResult) {
    const tail = (result.stderr || result.stdout).trim().split('\n').slice(-3).filter(Boolean)
    const what = result.timedOut ? 'timed out' : `exited with code ${result.exitCode}`
    super(`command ${what}` + (tail.length ? ': ' + tail.join(' / ') : ''))
    this.exitCode = result.exitCode
    this.stdout = result.stdout
    this.stderr = result.stderr
    this.result = result
  }
}
/** check() of a command that ran past its timeoutMs and was killed. */
export class CommandTimeoutError extends CommandError {}

type ErrorClass = new (status: number, code: string, message: string) => SbxError

const BY_STATUS: Record<number, ErrorClass> = {
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

const BY_CODE: Record<string, ErrorClass> = { sandbox_paused: SandboxPausedError }

/** The error for an answer with status and body (the API's error JSON or anything else). */
export function errorFromResponse(status: number, body: string): SbxError {
  let code = ''
  let message = ''
  try {
    const doc = JSON.parse(body)
    if (doc && typeof doc.error === 'object' && doc.error) {
      code = String(doc.error.code ?? '')
      message = String(doc.error.message ?? '')
    } else if (doc && typeof doc.message === 'string') {
      message = doc.message // sbxd's front door answers E2B's shape
    }
  } catch {
    message = body.slice(0, 200).trim()
  }
  return apiError(status, code, message)
}

/** The error for an API error of status with code and message: an answer's, or the error line
 * that ends a stream (a pull's progress). */
export function apiError(status: number, code: string, message: string): SbxError {
  const Cls = BY_CODE[code] ?? BY_STATUS[status] ?? (status >= 500 ? InternalError : BadRequestError)
  return new Cls(status, code || `http_${status}`, message || `HTTP ${status}`)
}
