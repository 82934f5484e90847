// Round trip of a small GET to a server inside a sandbox through `http://` + getHost(port)
// (sbxd routes on Host, the agent relays over its channel: api/frames.md "User ports"), beside
// the same server code reached directly on the host. Starts its own sbxd (SBX_BUILD, default
// build/), one `base` sandbox running tests/compat/ports-lib.mjs's server; a fresh TCP
// connection per request on both sides (sbxd opens a new agent connection and a new connection
// to the port per request anyway). Also a WebSocket echo of 32 bytes on one open connection.
// Prints p50/p99; asserts nothing. Usage: node bench/gethost-rtt.mjs [N=500]
import { spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { writeFileSync, rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TOP, startSbxd, fmt, sleep, e2bFor } from './lifecycle-lib.mjs'

const N = Number(process.argv[2] || 500)
const srv = await startSbxd(['--pool-size', '0'])
const { Sandbox } = await e2bFor(srv)
const { request, websocket, startServer, SERVER } = await import(join(TOP, 'tests/compat/ports-lib.mjs'))

async function series(url, n) {
  const xs = []
  for (let i = 0; i < n + 20; i++) {
    const t = performance.now()
    const r = await request(url)
    if (r.status !== 200) throw new Error(`${url}: ${r.status}`)
    if (i >= 20) xs.push(performance.now() - t) // the first 20 warm up
  }
  return xs
}

async function wsSeries(url, n) {
  const ws = await websocket(url)
  const xs = []
  for (let i = 0; i < n + 20; i++) {
    const t = performance.now()
    ws.send(2, Buffer.alloc(32, i & 255))
    await ws.next()
    if (i >= 20) xs.push(performance.now() - t)
  }
  await ws.close()
  return xs
}

const dir = mkdtempSync(join(tmpdir(), 'sbx-gethost-'))
writeFileSync(join(dir, 'srv.js'), SERVER)
const direct = spawn(process.execPath, [join(dir, 'srv.js'), '18765'], { stdio: ['ignore', 'pipe', 'inherit'] })
let sbx
try {
  sbx = await Sandbox.create()
  await startServer(sbx, 8000)
  for (let i = 0; i < 50; i++) {
    if (await request('http://127.0.0.1:18765/host').then(() => true, () => false)) break
    await sleep(100)
  }
  const host = `http://${sbx.getHost(8000)}/host`
  console.log(`GET /host (${N} requests, a new connection each)`)
  console.log(`  through getHost ${host}`)
  console.log(`    ${fmt(await series(host, N))}`)
  console.log('  the same server on the host, direct')
  console.log(`    ${fmt(await series('http://127.0.0.1:18765/host', N))}`)
  console.log(`WebSocket echo of 32 bytes (${N} messages, one connection)`)
  console.log(`  through getHost   ${fmt(await wsSeries(`http://${sbx.getHost(8000)}/ws`, N))}`)
  console.log(`  direct            ${fmt(await wsSeries('http://127.0.0.1:18765/ws', N))}`)
} finally {
  direct.kill()
  await sbx?.kill().catch(() => {})
  await srv.stop()
  rmSync(dir, { recursive: true, force: true })
}
