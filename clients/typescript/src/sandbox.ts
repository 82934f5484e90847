// The client: Sbx (a sandbox), its files and processes, Images, Templates and Storage.
import * as C from './calls.js'
import type { Cmd, Lang, PullBody, SearchOptions, StartOptions, User } from './calls.js'
import { resolveConfig } from './config.js'
import type { ConnectionOptions } from './config.js'
import { NotFoundError, SbxTimeoutError } from './errors.js'
import type {
  Entry, ExecResult, ImageInfo, ProcessInfo, PullProgress, RunCodeResult, SandboxInfo, SearchResult,
  StorageInfo, TemplateInfo,
} from './models.js'
import { PullStream } from './pull.js'
import { LogStream, Watch } from './streams.js'
import { Terminal } from './terminal.js'
import { Transport } from './transport.js'

export interface CreateOptions extends ConnectionOptions {
  /** the template (default "base") */
  template?: string
  /** seconds until it is killed (1..86400, default 300) */
  timeout?: number
  /** environment of every exec, runCode, process and terminal */
  env?: Record<string, string>
  /** string labels, listed with it */
  metadata?: Record<string, string>
  /** its sizes (default: the template's) */
  cpuCount?: number
  memoryMb?: number
  diskMb?: number
}

export interface RunOptions {
  /** default 30000, at most 300000; past it the process is killed and the result says timedOut */
  timeoutMs?: number
  /** "root" runs as root in the sandbox */
  user?: User
}

const decoder = new TextDecoder()

/** A sandbox. Sbx.create() makes one, Sbx.connect() reaches a running one. Configuration comes
 * from SBX_URL / SBX_API_KEY (see ConnectionOptions) unless given. */
export class Sbx {
  readonly id: string
  info: SandboxInfo
  readonly files: Files
  readonly processes: Processes

  private constructor(info: SandboxInfo, readonly transport: Transport) {
    this.id = info.id
    this.info = info
    this.files = new Files(this)
    this.processes = new Processes(this)
  }

  /** Create a sandbox and return it running. */
  static async create(opts: CreateOptions = {}): Promise<Sbx> {
    const t = new Transport(await resolveConfig(opts))
    return new Sbx(await t.call(C.createSandbox(opts)), t)
  }

  /** The sandbox id (running or paused); NotFoundError when there is none. */
  static async connect(id: string, opts: ConnectionOptions = {}): Promise<Sbx> {
    const t = new Transport(await resolveConfig(opts))
    return new Sbx(await t.call(C.getSandbox(id)), t)
  }

  /** Every sandbox of this sbxd, running and paused. */
  static async list(opts: ConnectionOptions = {}): Promise<SandboxInfo[]> {
    return new Transport(await resolveConfig(opts)).call(C.listSandboxes())
  }

  /** The sandbox as sbxd sees it now (also kept in info). */
  async getInfo(): Promise<SandboxInfo> {
    this.info = await this.transport.call(C.getSandbox(this.id))
    return this.info
  }

  /** Kill the sandbox; its files go with it. */
  async kill(): Promise<void> {
    await this.transport.call(C.killSandbox(this.id))
  }

  /** Freeze it: processes and memory stay, no CPU is used, its timeout stops. With
   * keepMemory false only its files are kept and a resume starts it afresh. */
  async pause(opts: { keepMemory?: boolean } = {}): Promise<SandboxInfo> {
    this.info = await this.transport.call(C.pauseSandbox(this.id, opts.keepMemory ?? true))
    return this.info
  }

  /** Thaw a paused sandbox; its timeout starts again from timeout seconds. */
  async resume(opts: { timeout?: number } = {}): Promise<SandboxInfo> {
    this.info = await this.transport.call(C.resumeSandbox(this.id, opts.timeout))
    return this.info
  }

  /** Run one process and wait for it. An array runs with execve (PATH search), a string with
   * sh -c. No state carries between calls: use "cd /x && ..." for a directory. */
  exec(cmd: Cmd, opts: RunOptions = {}): Promise<ExecResult> {
    return this.transport.call(C.exec(this.id, cmd, opts.timeoutMs, opts.user))
  }

  /** exec() of a shell string. */
  sh(script: string, opts: RunOptions = {}): Promise<ExecResult> {
    if (typeof script !== 'string') throw new TypeError('sh() takes a string; use exec() for an argv array')
    return this.exec(script, opts)
  }

  /** Run a snippet with lang's interpreter (python, node, bash or sh; default python). A missing
   * interpreter exits 127 with empty output. */
  runCode(code: string, opts: RunOptions & { lang?: Lang } = {}): Promise<RunCodeResult> {
    return this.transport.call(C.runCode(this.id, code, opts.lang ?? 'python', opts.timeoutMs, opts.user))
  }

  /** An interactive login shell on a PTY. Needs a WebSocket: the platform's, or
   * ConnectionOptions.WebSocket. */
  async terminal(opts: { cols?: number, rows?: number, user?: User } = {}): Promise<Terminal> {
    await this.transport.call(C.getSandbox(this.id)) // a missing sandbox or a bad key, typed
    return Terminal.open(this.transport.cfg, this.id, opts.cols ?? 80, opts.rows ?? 24, opts.user)
  }
}

/** A managed process: it runs on after the call that started it. */
export class Process {
  readonly pid: number
  constructor(private sb: Sbx, public info: ProcessInfo) {
    this.pid = info.pid
  }

  /** Its state now (also kept in info). */
  async refresh(): Promise<ProcessInfo> {
    this.info = await this.sb.transport.call(C.getProcess(this.sb.id, this.pid))
    return this.info
  }

  /** Its output so far (stdout and stderr interleaved, the last 1 MiB kept), from the absolute
   * byte offset. */
  logs(offset = 0): Promise<Uint8Array> {
    return this.sb.transport.call(C.processLogs(this.sb.id, this.pid, offset, false))
  }

  /** Its output as it is written, until it exits: for await (const chunk of p.stream()). */
  stream(offset = 0): LogStream {
    return new LogStream(this.sb.transport, this.sb.id, this.pid, offset)
  }

  /** Write to its stdin (started with stdin: true); close sends EOF after the data. */
  async writeStdin(data: string | Uint8Array, opts: { close?: boolean } = {}): Promise<void> {
    await this.sb.transport.call(C.writeStdin(this.sb.id, this.pid, data, opts.close ?? false))
  }

  /** Send EOF to its stdin. */
  closeStdin(): Promise<void> {
    return this.writeStdin(new Uint8Array(0), { close: true })
  }

  /** A signal ("SIGINT", "TERM", 9, ...) to its process group. */
  async signal(signal: string | number = 'SIGTERM'): Promise<void> {
    await this.sb.transport.call(C.signalProcess(this.sb.id, this.pid, signal))
  }

  /** SIGKILL to its process group; an exited process is forgotten instead. */
  async kill(): Promise<void> {
    await this.sb.transport.call(C.killProcess(this.sb.id, this.pid))
  }

  /** Wait until it exits; its final state. SbxTimeoutError when timeoutMs passes first. */
  async wait(opts: { timeoutMs?: number } = {}): Promise<ProcessInfo> {
    const deadline = opts.timeoutMs === undefined ? undefined : Date.now() + opts.timeoutMs
    for (;;) {
      this.info = await this.sb.transport.call(C.getProcess(this.sb.id, this.pid, C.waitSliceMs(deadline)))
      if (!this.info.running) return this.info
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new SbxTimeoutError(`process ${this.pid} still runs after ${opts.timeoutMs} ms`)
      }
    }
  }
}

/** sb.processes: processes that outlive the call that started them (at most 64). */
export class Processes {
  constructor(private sb: Sbx) {}

  /** Start cmd (array: execve; string: sh -c) and return at once. */
  async start(cmd: Cmd, opts: StartOptions = {}): Promise<Process> {
    return new Process(this.sb, await this.sb.transport.call(C.startProcess(this.sb.id, cmd, opts)))
  }

  /** The managed processes, running and recently exited. */
  list(): Promise<ProcessInfo[]> {
    return this.sb.transport.call(C.listProcesses(this.sb.id))
  }

  /** The managed process pid; NotFoundError when there is none. */
  async get(pid: number): Promise<Process> {
    return new Process(this.sb, await this.sb.transport.call(C.getProcess(this.sb.id, pid)))
  }
}

/** sb.files: the sandbox's file system, as its user (or user: "root"). Relative paths are
 * relative to /home/user. */
export class Files {
  constructor(private sb: Sbx) {}

  /** The file's text (UTF-8). */
  async read(path: string, opts: { user?: User } = {}): Promise<string> {
    return decoder.decode(await this.readBytes(path, opts))
  }

  /** The file's bytes. */
  readBytes(path: string, opts: { user?: User } = {}): Promise<Uint8Array> {
    return this.sb.transport.call(C.readFile(this.sb.id, path, opts.user))
  }

  /** Write the file whole (text as UTF-8), creating missing directories. */
  async write(path: string, data: string | Uint8Array | Blob, opts: { user?: User } = {}): Promise<void> {
    await this.sb.transport.call(C.writeFile(this.sb.id, path, data, opts.user))
  }

  /** A directory's entries (at most 10000). */
  list(path: string, opts: { user?: User } = {}): Promise<Entry[]> {
    return this.sb.transport.call(C.listDir(this.sb.id, path, opts.user))
  }

  /** One entry; symlinks are not followed. */
  stat(path: string, opts: { user?: User } = {}): Promise<Entry> {
    return this.sb.transport.call(C.stat(this.sb.id, path, opts.user))
  }

  /** Whether path names an entry. */
  async exists(path: string, opts: { user?: User } = {}): Promise<boolean> {
    try {
      await this.stat(path, opts)
      return true
    } catch (e) {
      if (e instanceof NotFoundError) return false
      throw e
    }
  }

  /** Create a directory and its parents. */
  async mkdir(path: string, opts: { user?: User } = {}): Promise<void> {
    await this.sb.transport.call(C.mkdir(this.sb.id, path, opts.user))
  }

  /** Remove a file or an empty directory (recursive: any directory). */
  async remove(path: string, opts: { recursive?: boolean, user?: User } = {}): Promise<void> {
    await this.sb.transport.call(C.remove(this.sb.id, path, opts.recursive ?? false, opts.user))
  }

  /** Move from to to (on the same file system). */
  async rename(from: string, to: string, opts: { user?: User } = {}): Promise<void> {
    await this.sb.transport.call(C.move(this.sb.id, from, to, opts.user))
  }

  /** Entries under path whose name matches a glob and/or lines containing a substring. */
  search(path: string, opts: SearchOptions): Promise<SearchResult> {
    return this.sb.transport.call(C.search(this.sb.id, path, opts))
  }

  /** Changes under the directory path: for await (const ev of await sb.files.watch(p)). Armed
   * when it resolves; close() (or leaving the loop) ends it on the server. */
  watch(path: string, opts: { recursive?: boolean, user?: User } = {}): Promise<Watch> {
    return Watch.open(this.sb.transport, this.sb.id, path, opts.recursive ?? false, opts.user)
  }
}

export interface PullOptions extends ConnectionOptions, PullBody {
  /** each progress event as it arrives (awaited when it returns a promise); throwing cancels
   * the pull on the server */
  onProgress?: (ev: PullProgress) => unknown
  /** aborting it cancels the pull on the server (the promise rejects with an SbxError) */
  signal?: AbortSignal
}

/** Images as templates: pulled from a registry, or imported from an archive (an OCI layout or
 * a docker save tar). */
export class Images {
  /** Pull the image ref ([HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST], Docker's naming: python:3.12
   * is Docker Hub's) from its registry, sbxd doing the transfer, as a template named after the
   * image unless name (NAME:TAG, or tag) says otherwise; an image of that name is replaced.
   * Layers sbxd has already are not transferred again. Without username and password sbxd
   * uses its Docker config.json's credentials, else none. The pull's failure is thrown typed:
   * ForbiddenError (registry_denied), NotFoundError, BadRequestError, ServiceUnavailableError
   * (unreachable, bad_registry), PayloadTooLargeError, InsufficientStorageError. */
  static async pull(ref: string, opts: PullOptions = {}): Promise<ImageInfo> {
    return (await Images.pullStream(ref, opts)).wait(opts.onProgress)
  }

  /** pull() as a PullStream: for await (const ev of await Images.pullStream(ref)); image once
   * it is done; close() (or leaving the loop early) cancels the pull on the server. */
  static async pullStream(ref: string, opts: ConnectionOptions & PullBody & { signal?: AbortSignal } = {}): Promise<PullStream> {
    const call = C.pullImage(ref, opts)
    return new PullStream(new Transport(await resolveConfig(opts)), call, opts.signal)
  }

  /** Import body as the template name (name:tag for another tag than latest). A
   * ReadableStream is streamed. */
  static async importArchive(name: string, body: Uint8Array | Blob | ReadableStream<Uint8Array>,
    opts: ConnectionOptions & { tag?: string, ref?: string } = {}): Promise<ImageInfo> {
    return new Transport(await resolveConfig(opts)).call(C.importImage(name, body as BodyInit, opts.tag, opts.ref))
  }

  /** Imported images, newest first. */
  static async list(opts: ConnectionOptions = {}): Promise<ImageInfo[]> {
    return new Transport(await resolveConfig(opts)).call(C.listImages())
  }

  /** One image by its template id (name or name:tag). */
  static async get(id: string, opts: ConnectionOptions = {}): Promise<ImageInfo> {
    return new Transport(await resolveConfig(opts)).call(C.getImage(id))
  }

  /** Remove an image's template. */
  static async delete(id: string, opts: ConnectionOptions = {}): Promise<void> {
    await new Transport(await resolveConfig(opts)).call(C.deleteImage(id))
  }
}

/** Every template a sandbox can start from. */
export class Templates {
  /** The templates, sorted by name: built-in, built through E2B's template API (built: under
   * its alias and its id), imported or pulled images (image) and snapshots (snapshot). Each
   * name is one Sbx.create() takes. */
  static async list(opts: ConnectionOptions = {}): Promise<TemplateInfo[]> {
    return new Transport(await resolveConfig(opts)).call(C.listTemplates())
  }
}

/** What holds sandbox disks: sbxd's storage pool (btrfs, one subvolume per sandbox). */
export class Storage {
  /** The backend, the pool's figures and each sandbox's disk (what it holds, what deleting it
   * frees), as of the pool's last commit (at most 30 s old). */
  static async get(opts: ConnectionOptions = {}): Promise<StorageInfo> {
    return new Transport(await resolveConfig(opts)).call(C.getStorage())
  }

  /** Grow the pool's image to size (bytes, or a string such as "64G"; bare digits in a string
   * are MiB) while sandboxes run; the storage as it is then. It only grows: BadRequestError for
   * a size not larger, ConflictError when there is no pool image to grow, InsufficientStorageError
   * when the host cannot hold it. Never retried (a second try would be refused). */
  static async grow(size: number | string, opts: ConnectionOptions = {}): Promise<StorageInfo> {
    const call = C.growStorage(size)
    return new Transport(await resolveConfig(opts)).call(call)
  }
}
