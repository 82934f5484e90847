// Templates and sandboxes between cluster nodes (server/cluster/README.md "Templates on many
// nodes", "Failure and maintenance"): a three-member etcd cluster and three sbxd nodes on
// 127.0.0.11-13 (tests/integration/cluster-lib.mjs). Prints:
//  - a layer of known size (a snapshot holding M MiB of random bytes) between two nodes: the raw
//    stream (GET /v1/cluster/layers/<hex>, read and dropped) and a create of the snapshot on a
//    node that lacks it (pull, verify by hash, store, start), against a create of it where it
//    is (MB/s of the layer over the create's extra time);
//  - drain --move of a node holding one sandbox with M MiB written in it: the whole call and
//    the sandbox's first command answered through its new node; then once more, when both
//    stores hold the template's own layers already.
// Nothing here asserts a time.   node bench/cluster-move.mjs [M MiB]
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { TOP, sleep } from '../tests/integration/sbxd.mjs'
import { owners, hopSecret, hopValue, newCluster, startCluster, stopCluster } from '../tests/integration/cluster-lib.mjs'

const { Sandbox } = await import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))
const M = Number(process.argv[2] || 256)
const cl = newCluster(3, { network: false })
const { nodes, key } = cl
let etcd
const opts = (d) => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: key, requestTimeoutMs: 600_000 })
// a node's own call: the key and the hop header signed with the cluster's secret
const node = async (method, target) => ({ Authorization: `Bearer ${key}`, 'Sbx-Cluster-Hop': hopValue(await hopSecret(etcd), method, target) })
const mbps = (bytes, ms) => (bytes / 1e6 / (ms / 1000)).toFixed(1)

// What the nodes logged about pulls since the last call: the per-layer figures.
const seen = new Map()
function pullLog() {
  for (const [i, d] of nodes.entries()) {
    const lines = d.stderr().split('\n')
    for (const l of lines.slice(seen.get(i) || 0)) {
      const m = l.match(/"msg":"(cluster: (layer|template) [^"]*(pulled|looked at)[^"]*|cluster: sandbox [^"]* moved here[^"]*)"/)
      if (m) console.log(`  n${i}: ${m[1]}`)
    }
    seen.set(i, lines.length)
  }
}

async function createOn(d) {
  const r = await fetch(`${d.url}/v2/sandboxes`, { method: 'POST',
    headers: { 'X-API-KEY': key, 'Content-Type': 'application/json', 'Sbx-Cluster-Hop': hopValue(await hopSecret(etcd), 'POST', '/v2/sandboxes') },
    body: JSON.stringify({ templateID: 'base', timeout: 600 }) })
  return Sandbox.connect((await r.json()).sandboxID, opts(nodes[0]))
}

async function drain(name, on, move = false) {
  const t = performance.now()
  const r = await fetch(`${nodes[0].url}/v1/nodes/${name}/drain${move ? '?move=1' : ''}`,
    { method: on ? 'POST' : 'DELETE', headers: { Authorization: `Bearer ${key}` } })
  const body = r.status === 200 ? await r.json() : null
  await sleep(2500) // every node's next beat
  return { ms: performance.now() - t - 2500, body }
}

try {
  await startCluster(cl)
  etcd = cl.etcd
  pullLog()

  // a snapshot of M MiB of random bytes on node 1
  const a = await createOn(nodes[1])
  await a.commands.run(`head -c ${M}M /dev/urandom > /home/user/blob`, { timeoutMs: 600_000 })
  const snap = (await a.createSnapshot()).snapshotId
  const tj = JSON.parse(readFileSync(join(nodes[1].state, 'templates', snap, 'template.json'), 'utf8'))
  const top = tj.layers[tj.layers.length - 1].slice('sha256:'.length)

  // the raw stream, node 1 to here
  let t = performance.now()
  const res = await fetch(`${nodes[1].url}/v1/cluster/layers/${top}`, { headers: await node('GET', `/v1/cluster/layers/${top}`) })
  let bytes = 0
  for await (const chunk of res.body) bytes += chunk.length
  const streamMs = performance.now() - t
  console.log(`layer stream (GET /v1/cluster/layers), ${(bytes / 1048576).toFixed(1)} MiB: ${streamMs.toFixed(0)} ms, ${mbps(bytes, streamMs)} MB/s`)

  // a create where it is, then where it is not (node 1 drained: placed on 0 or 2, which pulls)
  t = performance.now()
  const here = await Sandbox.create(snap, opts(nodes[1]))
  const localMs = performance.now() - t
  await here.kill()
  await drain('n1', true)
  t = performance.now()
  const there = await Sandbox.create(snap, opts(nodes[0]))
  const pullMs = performance.now() - t
  const on = (await owners(etcd))[there.sandboxId]
  console.log(`create of the snapshot on its node: ${localMs.toFixed(0)} ms; on ${on}, which pulls it: ${pullMs.toFixed(0)} ms ` +
    `(${mbps(bytes, pullMs - localMs)} MB/s of the layer over the extra time)`)
  pullLog()
  await there.kill()
  await a.kill()
  await drain('n1', false)

  // drain --move of node 2 holding one sandbox with M MiB written in it
  const c = await createOn(nodes[2])
  await c.commands.run(`head -c ${M}M /dev/urandom > /home/user/blob`, { timeoutMs: 600_000 })
  const mv = await drain('n2', true, true)
  t = performance.now()
  const again = await Sandbox.connect(c.sandboxId, opts(nodes[0]))
  const size = (await again.commands.run('stat -c %s /home/user/blob')).stdout.trim()
  const firstMs = performance.now() - t
  console.log(`drain --move of a node with 1 sandbox (${M} MiB written): ${mv.ms.toFixed(0)} ms ` +
    `(${JSON.stringify(mv.body?.sandboxes?.map((s) => s.outcome))}); first command through its new node ${firstMs.toFixed(0)} ms, blob ${size} bytes`)
  pullLog()
  await again.kill()
  await drain('n2', false)
  // once more: the template's own layers are in both stores now (steady state)
  const c2 = await createOn(nodes[2])
  await c2.commands.run(`head -c ${M}M /dev/urandom > /home/user/blob`, { timeoutMs: 600_000 })
  const mv2 = await drain('n2', true, true)
  console.log(`drain --move again (the template's layers already in both stores): ${mv2.ms.toFixed(0)} ms ` +
    `(${JSON.stringify(mv2.body?.sandboxes?.map((s) => s.outcome))})`)
  pullLog()
  await (await Sandbox.connect(c2.sandboxId, opts(nodes[0]))).kill()
  await drain('n2', false)
} finally {
  await stopCluster(cl)
}
