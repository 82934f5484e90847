// Type-checked (tsc --noEmit) by ts-surface.test.mjs against the client's .d.ts: the quick start
// and the shapes users rely on compile, and misuse does not (each @ts-expect-error must fire).
import { Sbx, CommandError, Images, NotFoundError, Storage, Templates } from '../../clients/typescript/dist/index.js'
import type {
  ExecResult, FsEvent, ImageInfo, ProcessInfo, PullProgress, SandboxInfo, StorageInfo, TemplateInfo,
} from '../../clients/typescript/dist/index.js'

export async function quickstart(): Promise<void> {
  const sb = await Sbx.create({ template: 'base', timeout: 60, env: { A: '1' }, cpuCount: 1 })
  const r: ExecResult = await sb.exec(['python3', '-c', 'print(2+2)'], { timeoutMs: 30_000 })
  r.check()
  const n: number = r.exitCode
  const out: string = (await sb.sh('ls -la /tmp && date')).stdout
  const code = await sb.runCode('print(2+2)', { lang: 'python' })
  await sb.files.write('/tmp/a.txt', 'x')
  const s: string = await sb.files.read('/tmp/a.txt')
  const b: Uint8Array = await sb.files.readBytes('/tmp/a.txt')
  const p = await sb.processes.start('sleep 1', { stdin: true })
  for await (const chunk of p.stream()) { const c: Uint8Array = chunk; void c }
  const done: ProcessInfo = await p.wait({ timeoutMs: 5000 })
  for await (const ev of await sb.files.watch('/tmp')) { const e: FsEvent = ev; void e; break }
  const t = await sb.terminal({ cols: 80, rows: 24 })
  t.send('exit\n')
  const exit: number | null = await t.wait()
  const info: SandboxInfo = await sb.pause({ keepMemory: true })
  await sb.resume({ timeout: 30 })
  try { await sb.kill() } catch (e) { if (e instanceof NotFoundError || e instanceof CommandError) throw e }
  void [n, out, code.stdout, s, b, done.exitCode, exit, info.state]

  const ctl = new AbortController()
  const img: ImageInfo = await Images.pull('python:3.12', {
    name: 'py', onProgress: (ev: PullProgress) => { if (ev.layer) void ev.layer.bytes }, signal: ctl.signal,
  })
  for await (const ev of await Images.pullStream('busybox:1.36', { username: 'u', password: 'p' })) void ev.message
  const tpls: TemplateInfo[] = await Templates.list()
  const st: StorageInfo = await Storage.grow('64G')
  const free: number | undefined = (await Storage.get()).pool?.free
  void [img.source?.reference, tpls[0].kind, st.backend, free]

  // @ts-expect-error a pull's progress callback takes a PullProgress
  await Images.pull('busybox', { onProgress: (ev: number) => ev })
  // @ts-expect-error a size is bytes or a string
  await Storage.grow(true)
  // @ts-expect-error cmd is a string or an array of strings
  await sb.exec(42)
  // @ts-expect-error lang is one of python, node, bash, sh
  await sb.runCode('1', { lang: 'cobol' })
  // @ts-expect-error user is "user" or "root"
  await sb.exec('id', { user: 'admin' })
  // @ts-expect-error timeoutMs is a number
  await sb.exec('true', { timeoutMs: '5s' })
}
