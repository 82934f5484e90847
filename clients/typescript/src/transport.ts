// Sending a Call with fetch, and when a call is sent again. As the API says
// (api/openapi/sbx-v1.yaml, "Retrying"): any call when its connection could not be opened
// (nothing was sent) or when sbxd answered 429/503 with Retry-After (refused before anything was
// done); an x-sbx-idempotent call also after its connection broke or a 502. Nothing else is
// repeated: an exec, a create or a process start may have run once already. A streamed body is
// never sent twice.
import { OPERATIONS, callPath } from './calls.js'
import type { Call } from './calls.js'
import type { Config } from './config.js'
import { SbxConnectionError, SbxError, SbxTimeoutError, errorFromResponse } from './errors.js'

export const RETRY_AFTER_MAX_MS = 30_000
export const BACKOFF_BASE_MS = 200

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// Node's fetch wraps the socket error in .cause; ECONNREFUSED and friends mean nothing was sent.
function nothingSent(e: unknown): boolean {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const code = (e as any)?.cause?.code ?? (e as any)?.code
  return ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'].includes(code)
}

export class Transport {
  constructor(readonly cfg: Config) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...extra }
    if (this.cfg.apiKey) h.Authorization = `Bearer ${this.cfg.apiKey}`
    return h
  }

  /** The answer (a 2xx). Its body is unread when call.stream, read by call() otherwise. The
   * signal, when given, aborts the request (and a stream) at any time. */
  async send(call: Call<unknown>, signal?: AbortSignal): Promise<Response> {
    const [method, , idempotent] = OPERATIONS[call.op]
    const streamedBody = typeof ReadableStream !== 'undefined' && call.body instanceof ReadableStream
    const maxRetries = streamedBody ? 0 : this.cfg.maxRetries
    const url = this.cfg.url + callPath(call)
    const what = `${method} ${callPath(call).split('?')[0]}`
    for (let attempt = 0; ; attempt++) {
      const ctl = new AbortController()
      const onAbort = () => ctl.abort()
      signal?.addEventListener('abort', onAbort)
      const timer = setTimeout(() => ctl.abort(), this.cfg.requestTimeoutMs + (call.extraMs ?? 0))
      let res: Response
      try {
        const init: RequestInit & { duplex?: string } = {
          method,
          headers: this.headers({ ...(call.json !== undefined ? { 'Content-Type': 'application/json' } : {}), ...call.headers }),
          body: call.json !== undefined ? JSON.stringify(call.json) : call.body,
          signal: ctl.signal,
        }
        if (streamedBody) init.duplex = 'half'
        res = await this.cfg.fetch(url, init)
        if (res.status >= 400) {
          const text = await res.text()
          clearTimeout(timer)
          const delay = this.retryAfter(res, attempt, maxRetries, idempotent)
          if (delay === undefined) throw errorFromResponse(res.status, text)
          signal?.removeEventListener('abort', onAbort)
          await sleep(delay)
          continue
        }
      } catch (e) {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (e instanceof SbxError) throw e
        if (signal?.aborted) throw new SbxError(`${what}: aborted`)
        if (ctl.signal.aborted) throw new SbxTimeoutError(`${what}: no answer in time`)
        if ((nothingSent(e) || idempotent) && attempt < maxRetries) {
          await sleep(BACKOFF_BASE_MS * 2 ** attempt)
          continue
        }
        throw new SbxConnectionError(`${what}: ${(e as Error)?.message ?? e}${(e as any)?.cause ? ` (${(e as any).cause.code ?? (e as any).cause.message})` : ''}`) // eslint-disable-line @typescript-eslint/no-explicit-any
      }
      if (call.stream) clearTimeout(timer) // a stream has no deadline once it has started
      else (res as Response & { _timer?: unknown })._timer = timer
      signal?.removeEventListener('abort', onAbort)
      return res
    }
  }

  private retryAfter(res: Response, attempt: number, maxRetries: number, idempotent: boolean): number | undefined {
    if (attempt >= maxRetries) return undefined
    const ra = res.headers.get('retry-after')
    if ((res.status === 429 || res.status === 503) && ra !== null) {
      const s = Number(ra)
      return Number.isFinite(s) ? Math.min(Math.max(s * 1000, 0), RETRY_AFTER_MAX_MS) : 1000
    }
    if (res.status === 502 && idempotent) return BACKOFF_BASE_MS * 2 ** attempt
    return undefined
  }

  /** Send and read the whole answer through call.parse. */
  async call<T>(call: Call<T>): Promise<T> {
    const [method, , idempotent] = OPERATIONS[call.op]
    for (let attempt = 0; ; attempt++) {
      const res = await this.send(call)
      const timer = (res as Response & { _timer?: ReturnType<typeof setTimeout> })._timer
      try {
        const bytes = new Uint8Array(await res.arrayBuffer())
        return call.parse(new TextDecoder().decode(bytes), bytes)
      } catch (e) {
        if (e instanceof SbxError) throw e
        if ((e as Error)?.name === 'AbortError') throw new SbxTimeoutError(`${method} ${callPath(call).split('?')[0]}: no answer in time`)
        // the body broke off: an idempotent call is sent again
        if (!idempotent || attempt >= this.cfg.maxRetries) {
          throw new SbxConnectionError(`${method} ${callPath(call).split('?')[0]}: ${(e as Error)?.message ?? e}`)
        }
      } finally {
        clearTimeout(timer)
      }
    }
  }
}
