// How many idle `base` sandboxes this machine holds: create (4 at a time) until 2,000, a
// refusal, or MemAvailable under 2 GiB, whichever comes first; print the count, the memory
// used and how create latency grew; then kill every one and stop. Run it once, on a quiet
// machine. Usage: SBX_BUILD=build-life node bench/lifecycle-max.mjs [LIMIT=2000]
import { performance } from 'node:perf_hooks'
import { readFileSync } from 'node:fs'
import { startSbxd, fmt, memAvailable } from './lifecycle-lib.mjs'

const LIMIT = Number(process.argv[2] || 2000)
const FLOOR = 2 * 1024 ** 3
// 2,000 preallocated 1 GiB disks need 2 TB: the count is about memory and the kernel, so the
// disks are sparse here (--disk-overcommit; server/README.md "Limits")
const d = await startSbxd(['--pool-size', '0', '--max-sandboxes', String(LIMIT), '--disk-overcommit', '1000'])
const mem0 = memAvailable()
const t0 = performance.now()
let n = 0, stop = null
const lat = []
const ids = []
async function worker() {
  while (!stop && n < LIMIT) {
    n++
    const t = performance.now()
    const r = await d.api('POST', '/v2/sandboxes', { templateID: 'base', timeout: 3600 })
    if (r.status !== 201) { stop = `create ${r.status}: ${r.text}`; n--; break }
    lat.push(performance.now() - t)
    ids.push(r.json.sandboxID)
    if (ids.length % 250 === 0) {
      console.log(`${ids.length} sandboxes, MemAvailable ${(memAvailable() / 1024 ** 3).toFixed(2)} GiB, ` +
        `last 250 creates ${fmt(lat.slice(-250))}, ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    }
    if (memAvailable() < FLOOR) stop = 'MemAvailable under 2 GiB'
    if (performance.now() - t0 > 600_000) stop = '10 minutes passed'
  }
}
await Promise.all([worker(), worker(), worker(), worker()])
const mem1 = memAvailable()
const load = readFileSync('/proc/loadavg', 'utf8').trim()
console.log(`held ${ids.length} idle base sandboxes (${stop || `reached the limit of ${LIMIT}`}) in ` +
  `${((performance.now() - t0) / 1000).toFixed(1)} s; MemAvailable ${(mem0 / 1024 ** 3).toFixed(2)} → ` +
  `${(mem1 / 1024 ** 3).toFixed(2)} GiB = ${((mem0 - mem1) / ids.length / 1048576).toFixed(2)} MiB each; loadavg ${load}`)
console.log(`create latency: first 100 ${fmt(lat.slice(0, 100))}; last 100 ${fmt(lat.slice(-100))}`)
const h = await d.api('GET', '/v2/sandboxes?limit=1')
console.log(`list still answers: ${h.status}`)
const stoppedMs = await d.stop()
console.log(`killed all and stopped in ${(stoppedMs / 1000).toFixed(1)} s`)
