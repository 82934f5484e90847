// The front door under a flood of slow and idle connections (server/README.md "Front door").
// Starts its own sbxd (SBX_BUILD, default build/), then prints:
//   - a new SDK client's Sandbox.create + commands.run('echo hi'), with no other connection
//     and with N slow or idle connections kept open (a third idle, a third trickling a request
//     head, a third trickling a body; each one closed is opened again a second later);
//   - sbxd's threads and resident memory (/proc/<pid>/status) with N idle connections kept
//     open (nothing sent; measured first, on a fresh sbxd), then with the N mixed ones.
// Prints figures; asserts nothing. Usage: node bench/http-flood.mjs [N=2000] [ROUNDS=5]
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { TOP, startSbxd, sleep, e2bFor } from './lifecycle-lib.mjs'
import { flood } from '../tests/integration/flood-lib.mjs'

process.env.SBX_BUILD ||= join(TOP, 'build')
const N = Number(process.argv[2] || 2000)
const ROUNDS = Number(process.argv[3] || 5)

const srv = await startSbxd(['--pool-size', '0'])
const { Sandbox } = await e2bFor(srv)
const addr = { host: '127.0.0.1', port: Number(new URL(srv.url).port) }

function status() {
  const s = readFileSync(`/proc/${srv.pid}/status`, 'utf8')
  const f = (k) => Number((new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s) || [])[1])
  return `${f('Threads')} threads, RSS ${(f('VmRSS') / 1024).toFixed(1)} MiB`
}

// ROUNDS of create + echo through the SDK (its connections come from undici's pool: the
// first round opens new ones, the flood's do not count).
async function createRun(label) {
  const ms = []
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now()
    let sbx
    try {
      sbx = await Sandbox.create({ requestTimeoutMs: 30_000 })
      const r = await sbx.commands.run('echo hi', { requestTimeoutMs: 30_000 })
      if (r.stdout !== 'hi\n') throw new Error(`stdout ${JSON.stringify(r.stdout)}`)
      ms.push(performance.now() - t0)
    } catch (e) {
      console.log(`${label}: failed after ${(performance.now() - t0).toFixed(0)} ms: ${e.message}`)
      return
    } finally {
      await sbx?.kill().catch(() => {})
    }
  }
  ms.sort((a, b) => a - b)
  console.log(`${label}: create + echo hi, ${ROUNDS} rounds: ` +
    `min ${ms[0].toFixed(0)} ms, median ${ms[ms.length >> 1].toFixed(0)} ms, max ${ms[ms.length - 1].toFixed(0)} ms`)
}

try {
  console.log(`sbxd ${process.env.SBX_BUILD}, idle: ${status()}`)

  const idle = flood(addr, N, { kinds: [0] })
  await idle.start()
  console.log(`${idle.open()} idle connections just opened: ${status()}`)
  await sleep(3000)
  console.log(`${idle.open()} idle connections, 3 s later: ${status()}`)
  idle.stop()
  await sleep(2000)

  await createRun('0 other connections')

  const mixed = flood(addr, N)
  await mixed.start()
  await sleep(6000) // past the deadlines: connections are being cut and opened again
  for (let i = 0; i < 50 && mixed.open() < N * 0.95; i++) await sleep(100)
  console.log(`${mixed.open()} slow/idle connections open (${mixed.opened()} opened so far): ${status()}`)
  await createRun(`${N} slow/idle connections`)
  console.log(`  still open: ${mixed.open()} (${mixed.opened()} opened in all)`)
  mixed.stop()
} finally {
  await srv.stop()
}
