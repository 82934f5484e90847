// Streamed answers: a process's output as it is written (logs?follow=true) and a file watch
// (server-sent events). Both are async iterables with close(): closing (or leaving a for await
// loop early) aborts the HTTP request, which ends the stream on the server.
import { processLogs, watch } from './calls.js'
import type { Call, User } from './calls.js'
import { SbxConnectionError } from './errors.js'
import { fsEvent } from './models.js'
import type { FsEvent } from './models.js'
import type { Transport } from './transport.js'

export const SSE_MAX_LINE = 1 << 20

/** Server-sent events from chunks: the data of each event, and whether ": watching" (the watch
 * is armed) was seen. */
export class SseParser {
  private buf = ''
  private data: string[] = []
  private dec = new TextDecoder()
  armed = false

  feed(chunk: Uint8Array): string[] {
    this.buf += this.dec.decode(chunk, { stream: true })
    if (this.buf.length > SSE_MAX_LINE && !this.buf.includes('\n')) throw new SbxConnectionError('watch: an event line longer than 1 MiB')
    const lines = this.buf.split('\n')
    this.buf = lines.pop() ?? ''
    const events: string[] = []
    for (const raw of lines) {
      const line = raw.replace(/\r$/, '')
      if (line === '') {
        if (this.data.length) events.push(this.data.join('\n'))
        this.data = []
      } else if (line.startsWith(':')) {
        this.armed ||= line.startsWith(': watching')
      } else if (line.startsWith('data:')) {
        this.data.push(line.slice(line[5] === ' ' ? 6 : 5))
      }
    }
    return events
  }
}

/** @internal what the streams share: the request's abort, the body's reader, close(). */
export abstract class Stream<T> implements AsyncIterableIterator<T> {
  protected ctl = new AbortController()
  protected reader?: ReadableStreamDefaultReader<Uint8Array>
  closed = false

  protected async openBody(t: Transport, call: Call<unknown>): Promise<void> {
    const res = await t.send(call, this.ctl.signal)
    if (!res.body) throw new SbxConnectionError('the answer has no body')
    this.reader = res.body.getReader()
  }

  protected async chunk(): Promise<Uint8Array | undefined> {
    if (this.closed || !this.reader) return undefined
    try {
      const { value, done } = await this.reader.read()
      if (done) {
        await this.close()
        return undefined
      }
      return value
    } catch (e) {
      if (this.closed) return undefined
      throw e
    }
  }

  abstract next(): Promise<IteratorResult<T>>

  /** Stop: the request is aborted and the server stops sending. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.ctl.abort()
    try { await this.reader?.cancel() } catch { /* aborted already */ }
  }

  async return(): Promise<IteratorResult<T>> {
    await this.close()
    return { value: undefined, done: true }
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}

/** A managed process's output (stdout and stderr interleaved) as byte chunks, until it has
 * exited and everything is read. A broken connection is reopened at the offset reached. */
export class LogStream extends Stream<Uint8Array> {
  private opened = false
  private retries = 0

  constructor(private t: Transport, private id: string, private pid: number, public offset = 0) {
    super()
  }

  async next(): Promise<IteratorResult<Uint8Array>> {
    while (!this.closed) {
      if (!this.opened) {
        this.opened = true
        await this.openBody(this.t, processLogs(this.id, this.pid, this.offset, true))
      }
      let c: Uint8Array | undefined
      try {
        c = await this.chunk()
      } catch (e) {
        if (++this.retries > this.t.cfg.maxRetries) {
          await this.close()
          throw new SbxConnectionError(`process output: ${(e as Error).message}`)
        }
        this.opened = false
        continue
      }
      if (c === undefined) break
      if (c.length) {
        this.offset += c.length
        return { value: c, done: false }
      }
    }
    return { value: undefined, done: true }
  }

  /** Everything until the process ends. */
  async readAll(): Promise<Uint8Array> {
    const parts: Uint8Array[] = []
    for await (const c of this) parts.push(c)
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
    let at = 0
    for (const p of parts) { out.set(p, at); at += p.length }
    return out
  }
}

/** Changes under a directory as FsEvent values, in order. Armed when files.watch() resolves,
 * so every change after that is seen. */
export class Watch extends Stream<FsEvent> {
  private parser = new SseParser()
  private pending: string[] = []

  /** @internal use files.watch() */
  static async open(t: Transport, id: string, path: string, recursive: boolean, user?: User): Promise<Watch> {
    const w = new Watch()
    try {
      await w.openBody(t, watch(id, path, recursive, user))
      while (!w.parser.armed) {
        const c = await w.chunk()
        if (c === undefined) throw new SbxConnectionError('watch: the stream ended before it was armed')
        w.pending.push(...w.parser.feed(c))
      }
    } catch (e) {
      await w.close()
      throw e
    }
    return w
  }

  async next(): Promise<IteratorResult<FsEvent>> {
    while (!this.pending.length) {
      let c: Uint8Array | undefined
      try {
        c = await this.chunk()
      } catch (e) {
        await this.close()
        throw new SbxConnectionError(`watch: ${(e as Error).message}`)
      }
      if (c === undefined) return { value: undefined, done: true }
      this.pending.push(...this.parser.feed(c))
    }
    return { value: fsEvent(this.pending.shift() as string), done: false }
  }
}
