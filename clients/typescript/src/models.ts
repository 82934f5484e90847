// What the API answers, as typed values (camelCase). Unknown fields are ignored.
import { CommandError, CommandTimeoutError } from './errors.js'

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any

export interface SandboxInfo {
  id: string
  template: string
  /** "running" or "paused" */
  state: string
  startedAt: Date | null
  endAt: Date | null
  cpuCount: number
  memoryMb: number
  metadata: Record<string, string>
}

const date = (v: unknown): Date | null => (typeof v === 'string' && v ? new Date(v) : null)

export function sandboxInfo(d: Json): SandboxInfo {
  return {
    id: d.id,
    template: d.template ?? '',
    state: d.state ?? '',
    startedAt: date(d.started_at),
    endAt: date(d.end_at),
    cpuCount: Number(d.cpu_count ?? 0),
    memoryMb: Number(d.memory_mb ?? 0),
    metadata: { ...(d.metadata ?? {}) },
  }
}

/** What exec() and sh() return. ok: exited 0 within its timeout; check() throws otherwise. */
export class ExecResult {
  readonly ok: boolean
  readonly stdout: string
  readonly stderr: string
  /** -1 when it timed out or was killed by a signal */
  readonly exitCode: number
  readonly durationMs: number
  readonly timedOut: boolean
  constructor(d: Json) {
    this.ok = Boolean(d.ok)
    this.stdout = d.stdout ?? ''
    this.stderr = d.stderr ?? ''
    this.exitCode = Number(d.exit_code ?? -1)
    this.durationMs = Number(d.duration_ms ?? 0)
    this.timedOut = Boolean(d.timed_out)
  }
  /** This result when the command exited 0; else throws CommandError (CommandTimeoutError when
   * it timed out) carrying the exit code and output. */
  check(): this {
    if (this.timedOut) throw new CommandTimeoutError(this)
    if (this.exitCode !== 0) throw new CommandError(this)
    return this
  }
}

/** What runCode() returns. A missing interpreter exits 127 with empty output. */
export class RunCodeResult {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number
  readonly durationMs: number
  readonly lang: string
  readonly timedOut: boolean
  constructor(d: Json) {
    this.stdout = d.stdout ?? ''
    this.stderr = d.stderr ?? ''
    this.exitCode = Number(d.exit_code ?? -1)
    this.durationMs = Number(d.duration_ms ?? 0)
    this.lang = d.lang ?? ''
    this.timedOut = Boolean(d.timed_out)
  }
  get ok(): boolean {
    return this.exitCode === 0 && !this.timedOut
  }
  /** As ExecResult.check(). */
  check(): this {
    if (this.timedOut) throw new CommandTimeoutError(this)
    if (this.exitCode !== 0) throw new CommandError(this)
    return this
  }
}

export interface ProcessInfo {
  pid: number
  cmd: string | string[]
  /** "running" or "exited" */
  status: string
  running: boolean
  exitCode: number | null
  startedAtMs: number
  endedAtMs: number | null
  /** bytes logged so far: the offset where the next output starts */
  logBytes: number
  stdin: boolean
}

export function processInfo(d: Json): ProcessInfo {
  return {
    pid: Number(d.pid),
    cmd: d.cmd,
    status: d.status ?? '',
    running: d.status === 'running',
    exitCode: d.exit_code ?? null,
    startedAtMs: Number(d.started_at_ms ?? 0),
    endedAtMs: d.ended_at_ms ?? null,
    logBytes: Number(d.log_bytes ?? 0),
    stdin: Boolean(d.stdin),
  }
}

export interface Entry {
  name: string
  path: string
  /** "file", "dir", "symlink" or "other" */
  type: string
  size: number
  /** octal, "0644" */
  mode: string
  /** unix seconds */
  mtime: number
}

export const entry = (d: Json): Entry => ({
  name: d.name ?? '', path: d.path ?? '', type: d.type ?? '', size: Number(d.size ?? 0),
  mode: d.mode ?? '', mtime: Number(d.mtime ?? 0),
})

export interface SearchMatch {
  path: string
  type: string
  /** content matches: the line number and its text */
  line?: number
  text?: string
}

export interface SearchResult {
  matches: SearchMatch[]
  /** a bound (maxResults, entries visited, depth) cut the walk short */
  truncated: boolean
  visited: number
}

export const searchResult = (d: Json): SearchResult => ({
  matches: (d.matches ?? []).map((m: Json) => ({ path: m.path, type: m.type, line: m.line, text: m.text })),
  truncated: Boolean(d.truncated),
  visited: Number(d.visited ?? 0),
})

/** One change seen by a watch. */
export interface FsEvent {
  /** create, modify, delete, move_from, move_to or attrib */
  type: string
  path: string
  isDir: boolean
}

export const fsEvent = (data: string): FsEvent => {
  const d = JSON.parse(data)
  return { type: d.type ?? '', path: d.path ?? '', isDir: Boolean(d.is_dir) }
}

/** Where a pulled image came from. */
export interface ImageSource {
  /** canonical: docker.io/library/python:3.12 */
  reference: string
  /** the registry (or mirror) that served it */
  registry: string
  /** the index it was picked from, if any */
  indexDigest?: string
}

export interface ImageInfo {
  name: string
  tag: string
  /** the template to create sandboxes from */
  template: string
  digest: string
  format: string
  importedAt: Date | null
  layers: { digest: string, layer: string, reused: boolean }[]
  env: string[]
  user: string
  workingDir: string
  entrypoint: string[]
  cmd: string[]
  writtenBytes: number
  warnings: string[]
  /** a pulled image's: where it came from */
  source?: ImageSource
}

export const imageInfo = (d: Json): ImageInfo => ({
  name: d.name ?? '',
  tag: d.tag ?? '',
  template: d.template ?? '',
  digest: d.digest ?? '',
  format: d.format ?? '',
  importedAt: date(d.importedAt),
  layers: (d.layers ?? []).map((l: Json) => ({ digest: l.digest, layer: l.layer, reused: Boolean(l.reused) })),
  env: d.env ?? [],
  user: d.user ?? '',
  workingDir: d.workingDir ?? '',
  entrypoint: d.entrypoint ?? [],
  cmd: d.cmd ?? [],
  writtenBytes: Number(d.writtenBytes ?? 0),
  warnings: d.warnings ?? [],
  source: d.source && typeof d.source === 'object'
    ? { reference: d.source.reference ?? '', registry: d.source.registry ?? '', indexDigest: d.source.indexDigest }
    : undefined,
})

/** Which layer a pull's progress event is about, and how far it is. */
export interface PullLayer {
  digest: string
  /** 1-based, in the image's order */
  index: number
  /** the image's layers */
  count: number
  /** transferred so far (layer-done: all of it, 0 when reused) */
  bytes: number
  /** the blob's size */
  total: number
  /** layer-done: found in the layer store, not transferred */
  reused: boolean
}

/** One event of a pull: status resolving, resolved, layer (bytes of a layer so far, at most
 * once a second per layer), layer-done or template; message says it for people. */
export interface PullProgress {
  status: string
  message: string
  layer?: PullLayer
}

export const pullProgress = (d: Json): PullProgress => ({
  status: String(d.status ?? ''),
  message: String(d.message ?? ''),
  layer: d.layer && typeof d.layer === 'object'
    ? {
        digest: d.layer.digest ?? '', index: Number(d.layer.index ?? 0), count: Number(d.layer.count ?? 0),
        bytes: Number(d.layer.bytes ?? 0), total: Number(d.layer.total ?? 0), reused: Boolean(d.layer.reused),
      }
    : undefined,
})

/** A template a sandbox can start from. */
export interface TemplateInfo {
  /** what Sbx.create({ template }) takes */
  name: string
  /** builtin, built, image or snapshot */
  kind: string
  cpuCount: number
  memoryMb: number
  diskSizeMb: number
  layers: number
  /** built: the template API's id, the build that made it, the template it was built on */
  templateId?: string
  buildId?: string
  base?: string
}

export const templateInfo = (d: Json): TemplateInfo => ({
  name: d.name ?? '',
  kind: d.kind ?? '',
  cpuCount: Number(d.cpuCount ?? 0),
  memoryMb: Number(d.memoryMB ?? 0),
  diskSizeMb: Number(d.diskSizeMB ?? 0),
  layers: Number(d.layers ?? 0),
  templateId: d.templateID,
  buildId: d.buildID,
  base: d.base,
})

/** The storage pool's figures, in bytes. */
export interface StoragePool {
  /** "image" (a pool.img of its own: it can grow) or "state-dir" */
  kind: string
  /** where it is mounted on the host */
  root: string
  size: number
  used: number
  /** what new data can still take */
  free: number
  /** free space kept: no sandbox is created below it */
  reserve: number
  /** the image file's size (0 for a state-dir pool) */
  imageBytes: number
}

/** A sandbox's disk: referenced is what it holds, shared extents included (what its limit
 * counts), exclusive what deleting it frees; both absent when its disk is not on the pool. As of
 * the pool's last commit (at most 30 s old). */
export interface SandboxDisk {
  id: string
  state: string
  diskMb: number
  referenced?: number
  exclusive?: number
  /** bytes; 0: none */
  limit?: number
}

/** What holds sandbox disks: backend "pool" (btrfs subvolumes with qgroup limits), "image" (a
 * preallocated ext4 image each) or "tmpfs"; pool and sandboxes are filled for the pool only. */
export interface StorageInfo {
  backend: string
  pool?: StoragePool
  sandboxes: SandboxDisk[]
}

const optNum = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v))

export const storageInfo = (d: Json): StorageInfo => ({
  backend: d.backend ?? '',
  pool: d.pool && typeof d.pool === 'object'
    ? {
        kind: d.pool.kind ?? '', root: d.pool.root ?? '', size: Number(d.pool.size ?? 0),
        used: Number(d.pool.used ?? 0), free: Number(d.pool.free ?? 0),
        reserve: Number(d.pool.reserve ?? 0), imageBytes: Number(d.pool.imageBytes ?? 0),
      }
    : undefined,
  sandboxes: (d.sandboxes ?? []).map((x: Json) => ({
    id: x.id ?? '', state: x.state ?? '', diskMb: Number(x.diskMB ?? 0),
    referenced: optNum(x.referenced), exclusive: optNum(x.exclusive), limit: optNum(x.limit),
  })),
})
