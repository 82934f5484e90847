// The terminal: a login shell on a PTY in the sandbox over a WebSocket (api/openapi/sbx-v1.yaml,
// "terminal"). Binary messages both ways are terminal bytes; resize is a text message; the
// server ends with {"type":"exit","exit_code"} and a close. Closing the socket kills the shell.
// The API key goes in ?token= since a browser's WebSocket cannot send headers.
import { terminalPath } from './calls.js'
import type { User } from './calls.js'
import type { Config } from './config.js'
import { SbxConnectionError, SbxError, SbxTimeoutError } from './errors.js'

export const TERM_OPEN_TIMEOUT_MS = 30_000

interface Waiter { wake: () => void }

export class Terminal implements AsyncIterable<Uint8Array> {
  /** the shell's exit code once it has exited */
  exitCode: number | null = null
  closed = false
  private out: Uint8Array[] = []
  private buffer = ''
  private waiters: Waiter[] = []
  private enc = new TextEncoder()
  private dec = new TextDecoder()

  private constructor(private ws: WebSocket) {
    ws.binaryType = 'arraybuffer'
    ws.addEventListener('message', (ev: MessageEvent) => {
      if (typeof ev.data === 'string') {
        try {
          const m = JSON.parse(ev.data)
          if (m?.type === 'exit') this.exitCode = Number(m.exit_code)
        } catch { /* not a control message */ }
      } else {
        this.out.push(new Uint8Array(ev.data as ArrayBuffer))
      }
      this.wake()
    })
    ws.addEventListener('close', () => { this.closed = true; this.wake() })
  }

  /** @internal use sb.terminal() */
  static async open(cfg: Config, id: string, cols: number, rows: number, user?: User): Promise<Terminal> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const WS = cfg.WebSocket ?? (globalThis as any).WebSocket
    if (typeof WS !== 'function') {
      throw new SbxError('no WebSocket in this runtime: pass { WebSocket } (the `ws` package on Node 18-21)')
    }
    const url = cfg.url.replace(/^http/, 'ws') + terminalPath(id, cols, rows, user, cfg.apiKey)
    const ws: WebSocket = new WS(url)
    const t = new Terminal(ws)
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { ws.close(); reject(new SbxTimeoutError('terminal: no handshake answer')) }, TERM_OPEN_TIMEOUT_MS)
      ws.addEventListener('open', () => { clearTimeout(timer); resolve() })
      ws.addEventListener('error', () => { clearTimeout(timer); reject(new SbxConnectionError('terminal: the WebSocket could not be opened')) })
    })
    return t
  }

  private wake(): void {
    const ws = this.waiters
    this.waiters = []
    for (const w of ws) w.wake()
  }

  private until(cond: () => boolean, timeoutMs: number | undefined, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const check = () => {
        if (cond()) { if (timer) clearTimeout(timer); resolve(); return }
        this.waiters.push({ wake: check })
      }
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w.wake !== check)
          reject(new SbxTimeoutError(`terminal: ${what} in time`))
        }, timeoutMs)
      }
      check()
    })
  }

  /** Type data (text as UTF-8). */
  send(data: string | Uint8Array): void {
    this.ws.send(typeof data === 'string' ? this.enc.encode(data) : data)
  }

  /** Set the terminal's size (the shell gets SIGWINCH). */
  resize(cols: number, rows: number): void {
    this.ws.send(JSON.stringify({ type: 'resize', cols, rows }))
  }

  /** The next output chunk; null once the shell has exited and all is read. */
  async recv(timeoutMs?: number): Promise<Uint8Array | null> {
    await this.until(() => this.out.length > 0 || this.closed, timeoutMs, 'no output')
    return this.out.shift() ?? null
  }

  /** Wait until pattern appears in the output; the output up to and including it (later output
   * stays for the next call). */
  async expect(pattern: string | RegExp, timeoutMs = 30_000): Promise<string> {
    let got: string | undefined
    const match = () => {
      while (this.out.length) this.buffer += this.dec.decode(this.out.shift(), { stream: true })
      let end = -1
      if (typeof pattern === 'string') {
        const i = this.buffer.indexOf(pattern)
        end = i < 0 ? -1 : i + pattern.length
      } else {
        const m = pattern.exec(this.buffer)
        end = m ? m.index + m[0].length : -1
      }
      if (end >= 0) {
        got = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end)
        return true
      }
      return this.closed
    }
    await this.until(match, timeoutMs, `${pattern} did not appear`)
    if (got === undefined) throw new SbxConnectionError(`terminal closed before ${pattern} appeared`)
    return got
  }

  /** Read (and drop) output until the shell exits; its exit code. */
  async wait(timeoutMs?: number): Promise<number | null> {
    await this.until(() => { this.out = []; return this.closed }, timeoutMs, 'the shell did not exit')
    return this.exitCode
  }

  /** Close the WebSocket: the shell is killed. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.ws.close(1000)
      await this.until(() => this.closed, 2000, 'no close').catch(() => { this.closed = true })
    }
  }

  async * [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const c = await this.recv()
      if (c === null) return
      yield c
    }
  }
}
