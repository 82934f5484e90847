// Shared by the TypeScript client's suites: the client built from clients/typescript/src with
// Debian's tsc (once per source change), and host-side views of a sandbox. Run through
// scripts/test-node.sh: a real sbxd, E2B_API_URL / E2B_API_KEY exported (the client falls back
// to them when SBX_URL / SBX_API_KEY are unset, as the CLI does).
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const TOP = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const PKG = join(TOP, 'clients', 'typescript')

function newest(dir) {
  return Math.max(...readdirSync(dir).map((f) => statSync(join(dir, f)).mtimeMs))
}

// Build dist/ when src/ (or the tsconfig) is newer.
export function buildClient() {
  const dist = join(PKG, 'dist')
  const src = Math.max(newest(join(PKG, 'src')), statSync(join(PKG, 'tsconfig.json')).mtimeMs)
  if (!existsSync(join(dist, 'index.js')) || newest(dist) < src) {
    execFileSync('tsc', ['-p', PKG], { stdio: 'inherit' })
  }
  return join(dist, 'index.js')
}

export const client = await import(buildClient())

// inotify instances open in the sandbox's processes, read on the host (root).
export function inotifyInstances(id) {
  let n = 0
  for (const h of readdirSync('/sys/fs/cgroup')) {
    const procs = `/sys/fs/cgroup/${h}/sbx/${id}/cgroup.procs`
    if (!existsSync(procs)) continue
    for (const pid of readFileSync(procs, 'utf8').split(/\s+/).filter(Boolean)) {
      let fds = []
      try { fds = readdirSync(`/proc/${pid}/fd`) } catch { continue }
      for (const fd of fds) {
        try { if (readlinkSync(`/proc/${pid}/fd/${fd}`) === 'anon_inode:inotify') n++ } catch {}
      }
    }
    return n
  }
  return n
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

export async function waitFor(pred, what, ms = 10_000) {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await pred()) return
    await sleep(50)
  }
  throw new Error(`timed out waiting for ${what}`)
}

export const sbxdLog = () => readFileSync(join(process.env.SBX_TEST_STATE, 'sbxd.log'), 'utf8')
export const text = (b) => new TextDecoder().decode(b)
