// Create latency with and without the warm pool (server-side, from sbxd's own measurement, and
// client-side over loopback HTTP), pause and resume latency, memory per idle sandbox.
// Starts its own sbxd twice (--pool-size 0, then 4). Usage:
//   SBX_BUILD=build-life node bench/lifecycle-create.mjs [N=200]
import { performance } from 'node:perf_hooks'
import { readFileSync } from 'node:fs'
import { startSbxd, fmt, sleep, memAvailable } from './lifecycle-lib.mjs'

const N = Number(process.argv[2] || 200)

async function creates(d, waitPool) {
  const server = [], client = []
  for (let i = 0; i < N; i++) {
    if (waitPool) { // a steady trickle: the pool is refilled between creates
      for (let k = 0; k < 200; k++) {
        const m = (await d.api('GET', '/metrics')).text.match(/sbx_sandboxes\{state="pool"\} (\d+)/)
        if (m && Number(m[1]) >= waitPool) break
        await sleep(5)
      }
    }
    const t0 = performance.now()
    const r = await d.api('POST', '/v2/sandboxes', { templateID: 'base', timeout: 120 })
    client.push(performance.now() - t0)
    if (r.status !== 201) throw new Error(r.text)
    await sleep(2) // the log line is written before the reply; give the pipe a moment
    server.push(d.serverUs(r.json.sandboxID) / 1000)
    await d.api('DELETE', `/sandboxes/${r.json.sandboxID}`)
  }
  return { server, client }
}

const cold = await startSbxd(['--pool-size', '0'])
const c = await creates(cold, 0)
console.log(`create, no pool      server ${fmt(c.server)}   client ${fmt(c.client)}`)

// pause / resume on idle sandboxes, and memory per idle sandbox
const M = 50
const before = memAvailable()
const boxes = []
for (let i = 0; i < M; i++) boxes.push((await cold.api('POST', '/v2/sandboxes', { templateID: 'base', timeout: 600 })).json)
await sleep(2000)
const after = memAvailable()
let cg = 0
for (const b of boxes) cg += Number(readFileSync(`/sys/fs/cgroup/memory/${cold.cgroupParent}/${b.sandboxID}/memory.usage_in_bytes`, 'utf8'))
console.log(`memory per idle sandbox: ${(cg / M / 1048576).toFixed(2)} MiB charged to its cgroup (agent + its disk's page cache or tmpfs), ` +
  `${((before - after) / M / 1048576).toFixed(2)} MiB of host MemAvailable (incl. kernel: page tables, mounts, namespaces) (n=${M})`)
const pause = [], resume = []
for (const b of boxes) {
  let t0 = performance.now()
  const p = await cold.api('POST', `/sandboxes/${b.sandboxID}/pause`, {})
  pause.push(performance.now() - t0)
  t0 = performance.now()
  const r = await cold.api('POST', `/v2/sandboxes/${b.sandboxID}/connect`, { timeout: 60 })
  resume.push(performance.now() - t0)
  if (p.status !== 204 || r.status !== 201) throw new Error(`pause ${p.status} resume ${r.status}`)
}
console.log(`pause  (HTTP round trip, freeze settled)  ${fmt(pause)}`)
console.log(`resume (connect on a paused sandbox)      ${fmt(resume)}`)
await cold.stop()

const warm = await startSbxd(['--pool-size', '4', '--pool-templates', 'base'])
const w = await creates(warm, 4)
console.log(`create, warm pool    server ${fmt(w.server)}   client ${fmt(w.client)}`)
const burst = []
for (let i = 0; i < 40; i++) { // back to back: the pool drains, creates fall back to cold
  const t0 = performance.now()
  await warm.api('POST', '/v2/sandboxes', { templateID: 'base', timeout: 120 })
  burst.push(performance.now() - t0)
}
console.log(`create, 40 back to back with a pool of 4 (drains, then cold)  client ${fmt(burst)}`)
await warm.stop()
