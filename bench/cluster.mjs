// Cluster figures (issue 15): a three-member etcd cluster and sbxd nodes on 127.0.0.11-13
// (tests/integration/cluster-lib.mjs), driven through the unmodified e2b SDK. Prints:
//  - commands.run('true') on a sandbox of node 1: through node 0 (forwarded) and through node
//    1 itself (direct); p50/p90 and the forwarding's added p50;
//  - the relay alone: GET /health of that sandbox's envd by `49983-<id>` Host (no process
//    started), 5N times each way on one kept-alive connection, alternating;
//  - creates per second through node 0 with one node in the cluster, then with three
//    (C creates, 3 at a time);
//  - the time from a node's death to its sandboxes answering "node lost": kill -9 (the
//    forward is refused at once) and SIGSTOP (the node hangs: its lease must expire).
// Nothing here asserts a time.   node bench/cluster.mjs [N runs] [C creates]
import { join } from 'node:path'
import http from 'node:http'
import { TOP, sleep } from '../tests/integration/sbxd.mjs'
import { startEtcd, startNode, owners, cleanNode, hopSecret, newCluster, stopCluster } from '../tests/integration/cluster-lib.mjs'
import { pct } from './lifecycle-lib.mjs'

const { Sandbox } = await import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))
const N = Number(process.argv[2] || 200)
const C = Number(process.argv[3] || 9)
const ms = (x) => `${x.toFixed(2)} ms`

const cl = newCluster(3, { network: false })
const { nodes, key } = cl
const etcd = (cl.etcd = await startEtcd(3))
const opts = (d) => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: key })

async function createRate(through) {
  const t0 = performance.now()
  const made = []
  for (let i = 0; i < C; i += 3) {
    made.push(...await Promise.all(Array.from({ length: Math.min(3, C - i) }, () => Sandbox.create('base', { ...opts(through), timeoutMs: 120_000 }))))
  }
  const s = (performance.now() - t0) / 1000
  for (const b of made) await b.kill()
  return C / s
}

try {
  nodes.push(await startNode(0, etcd, key))
  await hopSecret(etcd) // cleanNode signs its calls with it
  await sleep(1500)
  const rate1 = await createRate(nodes[0])
  nodes.push(await startNode(1, etcd, key), await startNode(2, etcd, key))
  await sleep(1500)
  const rate3 = await createRate(nodes[0])
  console.log(`creates/s through node 0, ${C} creates 3 at a time: one node ${rate1.toFixed(2)}, three nodes ${rate3.toFixed(2)}`)

  // a sandbox on node 1
  let box
  for (let i = 0; i < 20 && !box; i++) {
    const b = await Sandbox.create('base', { ...opts(nodes[0]), timeoutMs: 300_000 })
    if ((await owners(etcd))[b.sandboxId] === 'n1') box = b
    else await b.kill()
  }
  const fwd = await Sandbox.connect(box.sandboxId, opts(nodes[0]))
  const direct = await Sandbox.connect(box.sandboxId, opts(nodes[1]))
  const times = { fwd: [], direct: [] }
  for (let i = 0; i < 20; i++) { await fwd.commands.run('true'); await direct.commands.run('true') }
  for (let i = 0; i < N; i++) {
    for (const [k, s] of [['fwd', fwd], ['direct', direct]]) {
      const t = performance.now()
      await s.commands.run('true')
      times[k].push(performance.now() - t)
    }
  }
  console.log(`commands.run('true'), ${N} runs: direct p50 ${ms(pct(times.direct, 50))} p90 ${ms(pct(times.direct, 90))}; ` +
    `forwarded p50 ${ms(pct(times.fwd, 50))} p90 ${ms(pct(times.fwd, 90))}; added p50 ${ms(pct(times.fwd, 50) - pct(times.direct, 50))}`)

  // the relay alone: envd's /health by Host, one kept-alive connection per node
  const agents = [new http.Agent({ keepAlive: true, maxSockets: 1 }), new http.Agent({ keepAlive: true, maxSockets: 1 })]
  const health = (d, agent) => new Promise((res, rej) => {
    const u = new URL(d.url)
    const r = http.request({ host: u.hostname, port: u.port, path: '/health', agent, headers: { Host: `49983-${box.sandboxId}.sbx.test` } },
      (resp) => { resp.resume(); resp.on('end', () => resp.statusCode === 204 ? res() : rej(new Error(`health ${resp.statusCode}`))) })
    r.on('error', rej)
    r.end()
  })
  const ht = { fwd: [], direct: [] }
  for (let i = 0; i < 5 * N + 50; i++) {
    for (const [k, d, a] of [['fwd', nodes[0], agents[0]], ['direct', nodes[1], agents[1]]]) {
      const t = performance.now()
      await health(d, a)
      if (i >= 50) ht[k].push(performance.now() - t)
    }
  }
  agents.forEach((a) => a.destroy())
  console.log(`envd /health by Host, ${5 * N} runs: direct p50 ${ms(pct(ht.direct, 50))} p90 ${ms(pct(ht.direct, 90))}; ` +
    `forwarded p50 ${ms(pct(ht.fwd, 50))} p90 ${ms(pct(ht.fwd, 90))}; added p50 ${ms(pct(ht.fwd, 50) - pct(ht.direct, 50))}`)

  // death to "node lost", polled every 20 ms through node 0
  async function untilLost() {
    const t0 = performance.now()
    for (;;) {
      const e = await fwd.commands.run('true', { requestTimeoutMs: 1000 }).then(() => null, (x) => x)
      if (e && /node lost/.test(e.message)) return performance.now() - t0
      await sleep(20)
    }
  }
  nodes[1].proc.kill('SIGSTOP')
  const tStop = await untilLost()
  nodes[1].proc.kill('SIGCONT')
  for (let i = 0; i < 100; i++) { // registered again
    if (await fwd.commands.run('true').then(() => true, () => false)) break
    await sleep(100)
  }
  const old = nodes[1]
  old.proc.kill('SIGKILL')
  await new Promise((r) => old.proc.exitCode !== null || old.proc.signalCode ? r() : old.proc.once('exit', r))
  const tKill = await untilLost()
  console.log(`death to node lost: kill -9 ${ms(tKill)}; SIGSTOP (lease of 5 s must expire) ${ms(tStop)}`)
  nodes[1] = await startNode(1, etcd, key, { reuse: old })
} finally {
  await stopCluster(cl)
}
