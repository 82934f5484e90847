// Every operation of the /v1 API (api/openapi/sbx-v1.yaml) and how a call is built and its
// answer read. OPERATIONS lists them by operationId with method, path and whether the spec marks
// them x-sbx-idempotent; a test compares it with the spec, so an operation added to the API
// without a client method fails the build.
import {
  ExecResult, RunCodeResult, entry, imageInfo, processInfo, sandboxInfo, searchResult, storageInfo,
  templateInfo,
} from './models.js'
import type { Entry, ImageInfo, ProcessInfo, SandboxInfo, SearchResult, StorageInfo, TemplateInfo } from './models.js'

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'

const table = <T extends Record<string, readonly [Method, string, boolean]>>(t: T): T => t

export const OPERATIONS = table({
  listSandboxes: ['GET', '/v1/sandboxes', true],
  createSandbox: ['POST', '/v1/sandboxes', false],
  getSandbox: ['GET', '/v1/sandboxes/{id}', true],
  killSandbox: ['DELETE', '/v1/sandboxes/{id}', false],
  pauseSandbox: ['POST', '/v1/sandboxes/{id}/pause', false],
  resumeSandbox: ['POST', '/v1/sandboxes/{id}/resume', false],
  exec: ['POST', '/v1/sandboxes/{id}/exec', false],
  runCode: ['POST', '/v1/sandboxes/{id}/run-code', false],
  listProcesses: ['GET', '/v1/sandboxes/{id}/processes', true],
  startProcess: ['POST', '/v1/sandboxes/{id}/processes', false],
  getProcess: ['GET', '/v1/sandboxes/{id}/processes/{pid}', true],
  killProcess: ['DELETE', '/v1/sandboxes/{id}/processes/{pid}', false],
  processLogs: ['GET', '/v1/sandboxes/{id}/processes/{pid}/logs', true],
  signalProcess: ['POST', '/v1/sandboxes/{id}/processes/{pid}/signal', false],
  writeStdin: ['POST', '/v1/sandboxes/{id}/processes/{pid}/stdin', false],
  readFile: ['GET', '/v1/sandboxes/{id}/files', true],
  writeFile: ['PUT', '/v1/sandboxes/{id}/files', true],
  listDir: ['GET', '/v1/sandboxes/{id}/fs/list', true],
  stat: ['GET', '/v1/sandboxes/{id}/fs/stat', true],
  mkdir: ['POST', '/v1/sandboxes/{id}/fs/mkdir', false],
  move: ['POST', '/v1/sandboxes/{id}/fs/move', false],
  remove: ['DELETE', '/v1/sandboxes/{id}/fs', false],
  search: ['GET', '/v1/sandboxes/{id}/fs/search', true],
  watch: ['GET', '/v1/sandboxes/{id}/fs/watch', true],
  terminal: ['GET', '/v1/sandboxes/{id}/terminal', false],
  importImage: ['POST', '/v1/images', false],
  listImages: ['GET', '/v1/images', true],
  getImage: ['GET', '/v1/images/{id}', true],
  deleteImage: ['DELETE', '/v1/images/{id}', false],
  pullImage: ['POST', '/v1/images/pull', true],
  listTemplates: ['GET', '/v1/templates', true],
  getStorage: ['GET', '/v1/storage', true],
  growStorage: ['POST', '/v1/storage/grow', false],
} as const)

export type OperationId = keyof typeof OPERATIONS

export const EXEC_TIMEOUT_MAX_MS = 300_000
export const WAIT_SLICE_MS = 50_000 // the API's largest wait_ms
export const LANGS = ['python', 'node', 'bash', 'sh'] as const
export type Lang = typeof LANGS[number]
export type User = 'user' | 'root'
export type Cmd = string | readonly string[]

/** One request: operation, path parameters, query, body, and how its answer is read. */
export interface Call<T> {
  op: OperationId
  params?: Record<string, string | number>
  query?: Record<string, string | number | boolean | undefined | null>
  json?: unknown
  body?: BodyInit
  headers?: Record<string, string>
  /** ms added to the request timeout for calls that wait on purpose */
  extraMs?: number
  /** read as it arrives (no timeout once the answer has started) */
  stream?: boolean
  parse: (text: string, bytes: Uint8Array) => T
}

export function callPath(c: Call<unknown>): string {
  let p: string = OPERATIONS[c.op][1]
  for (const [k, v] of Object.entries(c.params ?? {})) p = p.replace(`{${k}}`, encodeURIComponent(String(v)))
  const q = Object.entries(c.query ?? {}).filter(([, v]) => v !== undefined && v !== null && v !== false)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
  return p + (q.length ? '?' + q.join('&') : '')
}

const json = (t: string): any => (t ? JSON.parse(t) : undefined) // eslint-disable-line @typescript-eslint/no-explicit-any
const none = (): void => undefined

function cmdOf(cmd: Cmd): string | string[] {
  if (typeof cmd === 'string') return cmd
  const argv = [...cmd]
  if (!argv.length || !argv.every((a) => typeof a === 'string')) {
    throw new TypeError('cmd must be a string (run by sh -c) or a non-empty array of strings')
  }
  return argv
}

function userOf(user?: User): User | undefined {
  if (user !== undefined && user !== 'user' && user !== 'root') throw new TypeError('user must be "user" or "root"')
  return user
}

const waitMs = (timeoutMs?: number) => timeoutMs ?? 30_000

// ---- sandboxes ----

export interface CreateBody {
  template?: string
  timeout?: number
  env?: Record<string, string>
  metadata?: Record<string, string>
  cpuCount?: number
  memoryMb?: number
  diskMb?: number
}

export const createSandbox = (b: CreateBody): Call<SandboxInfo> => ({
  op: 'createSandbox',
  json: {
    template: b.template ?? 'base', timeout: b.timeout, env: b.env, metadata: b.metadata,
    cpu_count: b.cpuCount, memory_mb: b.memoryMb, disk_mb: b.diskMb,
  },
  extraMs: 60_000,
  parse: (t) => sandboxInfo(json(t)),
})
export const listSandboxes = (): Call<SandboxInfo[]> => ({
  op: 'listSandboxes', parse: (t) => (json(t).sandboxes ?? []).map(sandboxInfo),
})
export const getSandbox = (id: string): Call<SandboxInfo> => ({
  op: 'getSandbox', params: { id }, parse: (t) => sandboxInfo(json(t)),
})
export const killSandbox = (id: string): Call<void> => ({ op: 'killSandbox', params: { id }, parse: none })
export const pauseSandbox = (id: string, keepMemory: boolean): Call<SandboxInfo> => ({
  op: 'pauseSandbox', params: { id }, json: { keep_memory: keepMemory }, extraMs: 60_000,
  parse: (t) => sandboxInfo(json(t)),
})
export const resumeSandbox = (id: string, timeout?: number): Call<SandboxInfo> => ({
  op: 'resumeSandbox', params: { id }, json: { timeout }, extraMs: 60_000,
  parse: (t) => sandboxInfo(json(t)),
})

// ---- exec and run-code ----

export const exec = (id: string, cmd: Cmd, timeoutMs?: number, user?: User): Call<ExecResult> => ({
  op: 'exec', params: { id },
  json: { cmd: cmdOf(cmd), timeout_ms: timeoutMs, user: userOf(user) },
  extraMs: waitMs(timeoutMs),
  parse: (t) => new ExecResult(json(t).result),
})

export const runCode = (id: string, code: string, lang: Lang, timeoutMs?: number, user?: User): Call<RunCodeResult> => {
  if (!LANGS.includes(lang)) throw new TypeError(`lang must be one of ${LANGS.join(', ')}`)
  return {
    op: 'runCode', params: { id },
    json: { code, lang, timeout_ms: timeoutMs, user: userOf(user) },
    extraMs: waitMs(timeoutMs),
    parse: (t) => new RunCodeResult(json(t)),
  }
}

// ---- managed processes ----

export interface StartOptions {
  cwd?: string
  env?: Record<string, string>
  user?: User
  /** a pipe for writeStdin() (else /dev/null) */
  stdin?: boolean
}

export const startProcess = (id: string, cmd: Cmd, o: StartOptions = {}): Call<ProcessInfo> => ({
  op: 'startProcess', params: { id },
  json: { cmd: cmdOf(cmd), cwd: o.cwd, env: o.env, user: userOf(o.user), stdin: o.stdin || undefined },
  parse: (t) => processInfo(json(t)),
})
export const listProcesses = (id: string): Call<ProcessInfo[]> => ({
  op: 'listProcesses', params: { id }, parse: (t) => (json(t).processes ?? []).map(processInfo),
})
export const getProcess = (id: string, pid: number, wait = 0): Call<ProcessInfo> => ({
  op: 'getProcess', params: { id, pid }, query: { wait_ms: wait || undefined }, extraMs: wait,
  parse: (t) => processInfo(json(t)),
})
export const killProcess = (id: string, pid: number): Call<void> => ({ op: 'killProcess', params: { id, pid }, parse: none })
export const processLogs = (id: string, pid: number, offset: number, follow: boolean): Call<Uint8Array> => ({
  op: 'processLogs', params: { id, pid }, query: { offset: offset || undefined, follow }, stream: follow,
  parse: (_t, b) => b,
})
export const signalProcess = (id: string, pid: number, signal: string | number): Call<void> => ({
  op: 'signalProcess', params: { id, pid }, json: { signal }, parse: none,
})
export const writeStdin = (id: string, pid: number, data: string | Uint8Array, close: boolean): Call<void> => ({
  op: 'writeStdin', params: { id, pid }, query: { close }, body: data, extraMs: 30_000, parse: none,
})

/** wait_ms of the next getProcess call of a wait ending at deadline (Date.now() ms). */
export function waitSliceMs(deadline?: number): number {
  if (deadline === undefined) return WAIT_SLICE_MS
  return Math.max(0, Math.min(deadline - Date.now(), WAIT_SLICE_MS))
}

// ---- files ----

export const readFile = (id: string, path: string, user?: User): Call<Uint8Array> => ({
  op: 'readFile', params: { id }, query: { path, user: userOf(user) }, parse: (_t, b) => b,
})
export const writeFile = (id: string, path: string, data: string | Uint8Array | Blob, user?: User): Call<void> => ({
  op: 'writeFile', params: { id }, query: { path, user: userOf(user) }, body: data, parse: none,
})
export const listDir = (id: string, path: string, user?: User): Call<Entry[]> => ({
  op: 'listDir', params: { id }, query: { path, user: userOf(user) }, parse: (t) => (json(t).entries ?? []).map(entry),
})
export const stat = (id: string, path: string, user?: User): Call<Entry> => ({
  op: 'stat', params: { id }, query: { path, user: userOf(user) }, parse: (t) => entry(json(t)),
})
export const mkdir = (id: string, path: string, user?: User): Call<void> => ({
  op: 'mkdir', params: { id }, query: { user: userOf(user) }, json: { path }, parse: none,
})
export const move = (id: string, from: string, to: string, user?: User): Call<void> => ({
  op: 'move', params: { id }, query: { user: userOf(user) }, json: { from, to }, parse: none,
})
export const remove = (id: string, path: string, recursive: boolean, user?: User): Call<void> => ({
  op: 'remove', params: { id }, query: { path, recursive, user: userOf(user) }, parse: none,
})

export interface SearchOptions {
  /** an fnmatch glob on entry names */
  name?: string
  /** a substring, line by line, in text files */
  content?: string
  maxResults?: number
  user?: User
}

export const search = (id: string, path: string, o: SearchOptions): Call<SearchResult> => {
  if (!o.name && !o.content) throw new TypeError('search needs name (a glob) and/or content (a substring)')
  return {
    op: 'search', params: { id },
    query: { path, name: o.name, content: o.content, max_results: o.maxResults, user: userOf(o.user) },
    parse: (t) => searchResult(json(t)),
  }
}
export const watch = (id: string, path: string, recursive: boolean, user?: User): Call<void> => ({
  op: 'watch', params: { id }, query: { path, recursive, user: userOf(user) }, stream: true, parse: none,
})

// ---- images and the terminal ----

export const importImage = (name: string, body: BodyInit, tag?: string, ref?: string): Call<ImageInfo> => ({
  op: 'importImage', query: { name, tag, ref }, body, extraMs: 3_600_000, parse: (t) => imageInfo(json(t)),
})
export const listImages = (): Call<ImageInfo[]> => ({ op: 'listImages', parse: (t) => (json(t).images ?? []).map(imageInfo) })
export const getImage = (id: string): Call<ImageInfo> => ({ op: 'getImage', params: { id }, parse: (t) => imageInfo(json(t)) })
export const deleteImage = (id: string): Call<void> => ({ op: 'deleteImage', params: { id }, parse: none })

export const NDJSON = 'application/x-ndjson'

export interface PullBody {
  /** the template's name (NAME or NAME:TAG; default: named after the image) */
  name?: string
  /** its tag, with name (default latest) */
  tag?: string
  /** the registry's credentials, both or neither */
  username?: string
  password?: string
}

/** The pull, always asked as a progress stream: closing it is what cancels the pull on the
 * server (a pull answered whole cannot be). */
export const pullImage = (ref: string, b: PullBody = {}): Call<void> => {
  if (typeof ref !== 'string' || !ref) throw new TypeError('ref is an image reference: [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST]')
  if ((b.username === undefined) !== (b.password === undefined)) throw new TypeError('registry credentials need both username and password')
  let { name, tag } = b
  if (name !== undefined && name.includes(':') && tag === undefined) [name, tag] = [name.slice(0, name.indexOf(':')), name.slice(name.indexOf(':') + 1)]
  if (tag !== undefined && !name) throw new TypeError('a tag needs a name')
  return {
    op: 'pullImage',
    json: { image: ref, name, tag, username: b.username, password: b.password },
    headers: { Accept: NDJSON },
    stream: true,
    parse: none,
  }
}

// ---- templates and storage ----

export const listTemplates = (): Call<TemplateInfo[]> => ({
  op: 'listTemplates', parse: (t) => (json(t).templates ?? []).map(templateInfo),
})
export const getStorage = (): Call<StorageInfo> => ({ op: 'getStorage', parse: (t) => storageInfo(json(t)) })
export const growStorage = (size: number | string): Call<StorageInfo> => {
  if (!(typeof size === 'string' || (typeof size === 'number' && Number.isInteger(size)))) {
    throw new TypeError('size is bytes (an integer) or a string such as "64G" or "512M"')
  }
  return { op: 'growStorage', json: { size }, extraMs: 120_000, parse: (t) => storageInfo(json(t)) }
}

/** The terminal's path and query (the WebSocket is opened by terminal.ts). */
export const terminalPath = (id: string, cols: number, rows: number, user?: User, token?: string): string =>
  callPath({ op: 'terminal', params: { id }, query: { cols, rows, user: userOf(user), token }, parse: none })
