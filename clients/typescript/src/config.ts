// Where sbxd is and which key to use, resolved as the sbx CLI does (cli/README.md): SBX_URL and
// SBX_API_KEY, else E2B_API_URL / E2B_API_KEY, else (on Node) the local state dir
// ($SBX_STATE_DIR, default /var/lib/sbx): its url file and the first line of its keys; the URL
// defaults to http://127.0.0.1:3000. In a browser pass url and apiKey.

export const DEFAULT_URL = 'http://127.0.0.1:3000'
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000 // sbxd's relays give up at 60 s
export const DEFAULT_MAX_RETRIES = 2

/** A WebSocket constructor: the platform's (browsers, Node 22+) or the `ws` package's. */
export type WebSocketCtor = new (url: string) => WebSocket

export interface ConnectionOptions {
  /** sbxd's base URL */
  url?: string
  /** sent as Authorization: Bearer */
  apiKey?: string
  /** ms to wait for an answer (calls that wait on purpose add their own time) */
  requestTimeoutMs?: number
  /** how many more times a call is sent when the API says that is safe */
  maxRetries?: number
  /** the fetch to use (default: globalThis.fetch) */
  fetch?: typeof fetch
  /** the WebSocket of the terminal (default: globalThis.WebSocket; on Node 18-21 pass the `ws`
   * package's) */
  WebSocket?: WebSocketCtor
}

export interface Config {
  url: string
  apiKey?: string
  requestTimeoutMs: number
  maxRetries: number
  fetch: typeof fetch
  WebSocket?: WebSocketCtor
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const env = (): Record<string, string | undefined> => (globalThis as any).process?.env ?? {}

async function firstLine(path: string): Promise<string | undefined> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  if (!(globalThis as any).process?.versions?.node) return undefined
  try {
    const spec = 'node:fs/promises' // not resolved by bundlers for browsers
    const fs = await import(/* @vite-ignore */ spec)
    const text: string = await fs.readFile(path, 'utf8')
    return text.split('\n')[0].trim() || undefined
  } catch {
    return undefined
  }
}

/** Fill what opts leave out from the environment. */
export async function resolveConfig(opts: ConnectionOptions = {}): Promise<Config> {
  const e = env()
  const state = e.SBX_STATE_DIR || '/var/lib/sbx'
  let url = opts.url || e.SBX_URL || e.E2B_API_URL
  if (!url) {
    url = await firstLine(`${state}/url`)
    if (!url || !url.startsWith('http')) url = DEFAULT_URL
  }
  const apiKey = opts.apiKey || e.SBX_API_KEY || e.E2B_API_KEY || (await firstLine(`${state}/keys`))
  const f = opts.fetch ?? globalThis.fetch
  if (typeof f !== 'function') throw new Error('no fetch: Node 18+ or a browser is needed, or pass { fetch }')
  return {
    url: url.replace(/\/+$/, ''),
    apiKey,
    requestTimeoutMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    maxRetries: opts.maxRetries ?? DEFAULT_MAX_RETRIES,
    fetch: f.bind(globalThis),
    WebSocket: opts.WebSocket,
  }
}
