// Cluster figures for requests that name no sandbox id (server/cluster/owner-find.c): three
// sbxd nodes on 127.0.0.11-13 and a three-member etcd (tests/integration/cluster-lib.mjs).
// Prints p50/p90 of:
//  - an MCP `ping` in a session of node 1, sent to node 1 (direct) and to node 0 (forwarded by
//    the node name in the session id);
//  - fetching a secure sandbox's signed download URL (no sandbox headers) for a sandbox of node
//    1, through node 1 (its own) and through node 0 (one probe per other node, then forwarded).
// Nothing here asserts a time.   node bench/cluster-owner-find.mjs [N runs]
import { join } from 'node:path'
import { TOP } from '../tests/integration/sbxd.mjs'
import { owners, newCluster, startCluster, stopCluster } from '../tests/integration/cluster-lib.mjs'
import { p50p90, timed } from './lifecycle-lib.mjs'

const { Sandbox } = await import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))
const N = Number(process.argv[2] || 200)

const cl = newCluster(3, { network: false })
const { nodes, key } = cl
let etcd

try {
  await startCluster(cl)
  etcd = cl.etcd
  const h = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }
  const post = (d, sid, body) => fetch(`${d.url}/mcp`, { method: 'POST', headers: sid ? { ...h, 'Mcp-Session-Id': sid } : h, body: JSON.stringify(body) })
  const init = await post(nodes[1], null, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '1' } } })
  const sid = init.headers.get('mcp-session-id')
  await init.text()
  const ping = (d) => () => post(d, sid, { jsonrpc: '2.0', id: 1, method: 'ping' }).then((r) => r.text())
  const mDirect = await timed(ping(nodes[1]), N)
  const mFwd = await timed(ping(nodes[0]), N)
  console.log(`MCP ping, session of node 1, ${N} runs: direct ${p50p90(mDirect)}; through node 0 ${p50p90(mFwd)}`)
  await fetch(`${nodes[1].url}/mcp`, { method: 'DELETE', headers: { ...h, 'Mcp-Session-Id': sid } })

  let box
  for (let i = 0; i < 20 && !box; i++) {
    const b = await Sandbox.create('base', { apiUrl: nodes[0].url, sandboxUrl: nodes[0].url, apiKey: key, secure: true, timeoutMs: 300_000 })
    if ((await owners(etcd))[b.sandboxId] === 'n1') box = b
    else await b.kill()
  }
  await box.files.write('/home/user/f.txt', 'x'.repeat(1024))
  const url0 = await box.downloadUrl('/home/user/f.txt')
  const url1 = url0.replace(nodes[0].url, nodes[1].url)
  const get = (u) => () => fetch(u).then((r) => { if (r.status !== 200) throw new Error(`status ${r.status}`); return r.text() })
  const fDirect = await timed(get(url1), N)
  const fFwd = await timed(get(url0), N)
  console.log(`signed download URL (1 KiB), sandbox of node 1, ${N} runs: through node 1 ${p50p90(fDirect)}; through node 0 ${p50p90(fFwd)}`)
} finally {
  await stopCluster(cl)
}
