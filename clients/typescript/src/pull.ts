// A pull's progress stream (POST /v1/images/pull with Accept: application/x-ndjson): one JSON
// object a line, read as it arrives, ending in {"status": "done", "image"} or {"status":
// "error", "error"}. Closing the stream (close(), leaving a for await loop, an AbortSignal, an
// onProgress that throws) aborts the HTTP request, and sbxd cancels the pull: nothing of it is
// kept but the layers it stored. A connection broken before the last line is opened again (a
// pull is safe to repeat: stored layers are not transferred twice).
import type { Call } from './calls.js'
import { SbxConnectionError, SbxError, apiError } from './errors.js'
import { imageInfo, pullProgress } from './models.js'
import type { ImageInfo, PullProgress } from './models.js'
import { Stream } from './streams.js'
import type { Transport } from './transport.js'

export const PULL_MAX_LINE = 1 << 20 // a longer progress line is a broken stream

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any

/** JSON objects from chunks as they come, one a line. */
export class NdjsonLines {
  private buf = ''
  private dec = new TextDecoder()

  feed(chunk: Uint8Array): Json[] {
    this.buf += this.dec.decode(chunk, { stream: true })
    const lines = this.buf.split('\n')
    this.buf = lines.pop() ?? ''
    if (this.buf.length > PULL_MAX_LINE) throw new SbxConnectionError('pull: a progress line longer than 1 MiB')
    const out: Json[] = []
    for (const line of lines) {
      if (line.length > PULL_MAX_LINE) throw new SbxConnectionError('pull: a progress line longer than 1 MiB')
      if (!line.trim()) continue
      let d: Json
      try {
        d = JSON.parse(line)
      } catch {
        throw new SbxConnectionError('pull: a progress line that is not JSON')
      }
      if (d && typeof d === 'object') out.push(d)
    }
    return out
  }
}

/** A pull's progress as PullProgress events, until it is done: then image is set. The pull's
 * failure is thrown, typed, where the stream ends. close() (or leaving a for await loop early)
 * cancels the pull on the server. */
export class PullStream extends Stream<PullProgress> {
  /** the image, once the pull is done */
  image?: ImageInfo
  private lines = new NdjsonLines()
  private pending: Json[] = []
  private opened = false
  private retries = 0

  /** @internal use Images.pullStream() */
  constructor(private t: Transport, private call: Call<unknown>, private signal?: AbortSignal) {
    super()
    if (signal?.aborted) this.closed = true
    signal?.addEventListener('abort', () => { void this.close() }, { once: true })
  }

  private async open(): Promise<void> {
    this.lines = new NdjsonLines()
    this.pending = []
    const res = await this.t.send(this.call, this.ctl.signal)
    if ((res.headers.get('content-type') ?? '').startsWith('application/json')) {
      if (res.status === 201) this.image = imageInfo(await res.json()) // answered whole: done
      this.closed = true
      return
    }
    if (!res.body) throw new SbxConnectionError('the answer has no body')
    this.reader = res.body.getReader()
  }

  async next(): Promise<IteratorResult<PullProgress>> {
    for (;;) {
      const d = this.pending.shift()
      if (d !== undefined) {
        if (d.status === 'done') {
          this.image = imageInfo(d.image ?? {})
          await this.close()
          return { value: undefined, done: true }
        }
        if (d.status === 'error') {
          await this.close()
          const e = d.error ?? {}
          throw apiError(Number(e.status ?? 500), String(e.code ?? ''), String(e.message ?? ''))
        }
        return { value: pullProgress(d), done: false }
      }
      if (this.closed) return { value: undefined, done: true }
      try {
        if (!this.opened) {
          this.opened = true
          await this.open()
          continue
        }
        const { value, done } = await (this.reader as ReadableStreamDefaultReader<Uint8Array>).read()
        if (this.closed) continue
        if (done) {
          await this.close()
          throw new SbxConnectionError('pull: the stream ended before the pull did')
        }
        this.pending.push(...this.lines.feed(value))
      } catch (e) {
        if (this.closed) continue
        if (e instanceof SbxError || ++this.retries > this.t.cfg.maxRetries) {
          await this.close()
          throw e instanceof SbxError ? e : new SbxConnectionError(`pull: ${(e as Error)?.message ?? e}`)
        }
        this.opened = false // the connection broke: the pull again (stored layers are kept)
      }
    }
  }

  /** Read to the end (each event to onProgress, awaited when it returns a promise) and return
   * the image. An onProgress that throws cancels the pull and its error is thrown. */
  async wait(onProgress?: (ev: PullProgress) => unknown): Promise<ImageInfo> {
    try {
      for await (const ev of this) if (onProgress) await onProgress(ev)
    } finally {
      await this.close()
    }
    if (!this.image) {
      throw new SbxError(this.signal?.aborted ? 'pull: aborted' : 'pull: closed before it was done')
    }
    return this.image
  }
}
