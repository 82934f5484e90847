// Shared by the lifecycle benches: a private sbxd on a fresh state dir (templates built with
// templates/build-all.sh), its log, raw API calls, percentiles, timed runs. Nothing here asserts a time.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync, rmdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve, dirname, basename } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'

export const TOP = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const BUILD = process.env.SBX_BUILD || join(TOP, 'build')
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// Remove a cgroup parent in every hierarchy, retrying while the kernel finishes removing the
// sandboxes' own cgroups below it (up to 3 s).
export async function removeCgroupParent(name) {
  const dirs = () => [...readdirSync('/sys/fs/cgroup').map((h) => `/sys/fs/cgroup/${h}/${name}`),
    `/sys/fs/cgroup/${name}`].filter((d) => existsSync(d))
  for (let i = 0; i < 60 && dirs().length; i++) {
    for (const d of dirs()) try { rmdirSync(d) } catch {}
    if (dirs().length) await sleep(50)
  }
}

// reuse: the dir of an earlier run (stopped with SIGTERM, its sandboxes running) to start on.
// Every sbxd gets a cgroup parent of its own, named after its dir (the same on a restart), so
// benches never share one with another sbxd on the machine; stop() removes it.
export async function startSbxd(args = [], reuse) {
  const dir = reuse || mkdtempSync(join(tmpdir(), 'sbx-bench-'))
  const state = join(dir, 'state')
  const cgroupParent = basename(dir)
  if (!reuse)
    execFileSync('bash', [join(TOP, 'templates/build-all.sh'), join(state, 'templates')], { stdio: 'ignore' })
  const port = join(dir, 'port')
  rmSync(port, { force: true })
  const proc = spawn(join(BUILD, 'server/sbxd'), ['--listen', '127.0.0.1:0', '--state-dir', state,
    '--port-file', port, '--cgroup-parent', cgroupParent, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  proc.stderr.on('data', (d) => { log += d })
  for (let i = 0; i < 200 && !existsSync(port); i++) await sleep(25)
  const url = `http://127.0.0.1:${readFileSync(port, 'utf8').trim()}`
  const key = readFileSync(join(state, 'keys'), 'utf8').split('\n')[0]
  async function api(method, path, body) {
    const res = await fetch(url + path, {
      method, headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    let json
    try { json = JSON.parse(text) } catch {}
    return { status: res.status, json, text, headers: res.headers }
  }
  // Kills every sandbox, stops sbxd and removes what it leaves. Returns the milliseconds until
  // sbxd had exited: removing the state dir after (its templates' files, the pool's image) takes
  // seconds more on a busy disk and is not part of stopping.
  async function stop() {
    const t0 = performance.now()
    for (let round = 0; round < 1000; round++) {
      const l = (await api('GET', '/v2/sandboxes?limit=100')).json || []
      if (!l.length) break
      for (let i = 0; i < l.length; i += 16)
        await Promise.all(l.slice(i, i + 16).map((s) => api('DELETE', `/sandboxes/${s.sandboxID}`)))
    }
    proc.kill('SIGTERM')
    await new Promise((r) => proc.exitCode !== null ? r() : proc.once('exit', r))
    const stoppedMs = performance.now() - t0
    // the storage pool and the state dir's bind mount stay while sandbox dirs remain
    for (const m of [join(state, 'pool'), state]) {
      try { execFileSync('umount', ['-l', m], { stdio: 'ignore' }) } catch {}
    }
    rmSync(dir, { recursive: true, force: true })
    await removeCgroupParent(cgroupParent)
    return stoppedMs
  }
  // start again on this state dir (after proc has exited), with the same arguments
  const restart = () => startSbxd(args, dir)
  // server-side create durations (µs) from sbxd's "started ... in N us" lines
  const serverUs = (id) => {
    const m = log.match(new RegExp(`sandbox ${id}: started [^"]* in (\\d+) us`))
    return m ? Number(m[1]) : undefined
  }
  return { url, key, state, cgroupParent, api, stop, restart, serverUs, log: () => log, pid: proc.pid, proc }
}

// The unmodified e2b SDK (tests/node_modules) pointed at srv: E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY exported for it, as a user would; the module returned.
export async function e2bFor(srv) {
  process.env.E2B_API_URL = srv.url
  process.env.E2B_SANDBOX_URL = srv.url
  process.env.E2B_API_KEY = srv.key
  return import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))
}

export function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
export const fmt = (xs, unit = 'ms', k = 1) =>
  `p50 ${(pct(xs, 50) * k).toFixed(2)} ${unit}  p99 ${(pct(xs, 99) * k).toFixed(2)} ${unit}  (n=${xs.length})`
// p50 and p90 of times in ms, as the cluster benches print them.
export const p50p90 = (xs) => `p50 ${pct(xs, 50).toFixed(2)} ms p90 ${pct(xs, 90).toFixed(2)} ms`

// The times in ms of n calls of fn, after 20 untimed ones (connections open, caches warm).
export async function timed(fn, n) {
  for (let i = 0; i < 20; i++) await fn()
  const t = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn()
    t.push(performance.now() - t0)
  }
  return t
}

export function memAvailable() {
  return Number(readFileSync('/proc/meminfo', 'utf8').match(/MemAvailable:\s+(\d+)/)[1]) * 1024
}
