// exec('true') on one running sandbox through each way a user reaches the /v1 API, one call
// after another: the Python client (sync Sbx and asyncio AsyncSbx, Debian's python3), the
// TypeScript client (clients/typescript, built with tsc), the sbx CLI (a new process per call, as
// a shell script pays it) and raw HTTP (node's fetch, keep-alive: the floor the clients add to).
// Starts its own sbxd (SBX_BUILD, default build/; no warm pool). Prints p50/p99; asserts nothing.
// Usage: node bench/clients-bench.mjs [N=300]
import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { performance } from 'node:perf_hooks'
import { join } from 'node:path'
import { TOP, startSbxd, fmt } from './lifecycle-lib.mjs'

const N = Number(process.argv[2] || 300)
const BUILD = process.env.SBX_BUILD || join(TOP, 'build')
const WARM = 20
// child processes without blocking the event loop (a blocked loop would keep undici from
// seeing sbxd close idle keep-alive connections)
const run = promisify(execFile)

execFileSync('tsc', ['-p', join(TOP, 'clients/typescript')])
const { Sbx } = await import(join(TOP, 'clients/typescript/dist/index.js'))

const PY = `
import asyncio, json, sys, time
sys.path.insert(0, ${JSON.stringify(join(TOP, 'clients/python'))})
from sbx import Sbx, AsyncSbx
sid, n, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sb = Sbx.connect(sid)
for _ in range(warm): sb.exec(["true"])
sync = []
for _ in range(n):
    t0 = time.perf_counter(); sb.exec(["true"]); sync.append((time.perf_counter() - t0) * 1000)
sb.close()
async def main():
    asb = await AsyncSbx.connect(sid)
    for _ in range(warm): await asb.exec(["true"])
    out = []
    for _ in range(n):
        t0 = time.perf_counter(); await asb.exec(["true"]); out.append((time.perf_counter() - t0) * 1000)
    await asb.close()
    return out
print(json.dumps({"sync": sync, "async": asyncio.run(main())}))
`

const srv = await startSbxd(['--pool-size', '0'])
const env = { ...process.env, SBX_URL: srv.url, SBX_API_KEY: srv.key }
Object.assign(process.env, { SBX_URL: srv.url, SBX_API_KEY: srv.key })
try {
  const sb = await Sbx.create()
  const rows = []
  const time = async (name, fn) => {
    for (let i = 0; i < WARM; i++) await fn()
    const xs = []
    for (let i = 0; i < N; i++) {
      const t0 = performance.now()
      await fn()
      xs.push(performance.now() - t0)
    }
    rows.push([name, xs])
  }

  await time('raw HTTP (fetch, keep-alive)', async () => {
    const r = await fetch(`${srv.url}/v1/sandboxes/${sb.id}/exec`, {
      method: 'POST', headers: { Authorization: `Bearer ${srv.key}`, 'Content-Type': 'application/json' },
      body: '{"cmd":["true"]}',
    })
    if (!(await r.json()).result.ok) throw new Error('exec failed')
  })
  await time('TypeScript client', async () => { (await sb.exec(['true'])).check() })
  const py = await run('/usr/bin/python3', ['-c', PY, sb.id, String(N), String(WARM)], { env, maxBuffer: 1 << 24 })
  const p = JSON.parse(py.stdout)
  rows.push(['Python client, Sbx', p.sync], ['Python client, AsyncSbx', p.async])
  const cli = join(BUILD, 'cli/sbx')
  await time('sbx CLI (a process per call)', () => run(cli, ['sandbox', 'exec', sb.id, 'true'], { env }))
  await sb.kill()

  console.log(`exec('true') on one running sandbox, ${N} calls one after another (after ${WARM} warm-up calls)`)
  console.log(`load average: ${execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ').slice(0, 3).join(' ')}`)
  for (const [name, xs] of rows) console.log(`  ${name.padEnd(32)} ${fmt(xs)}`)
} finally {
  await srv.stop()
}
