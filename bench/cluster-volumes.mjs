// Cluster figures for volumes (server/cluster/cluster-volumes.c): three sbxd nodes on
// 127.0.0.11-13 and a three-member etcd (tests/integration/cluster-lib.mjs). Prints p50/p90 of
// reading a 1 KiB file of a volume through the volume content API (GET /volumecontent/<id>/file,
// the volume's token) at the node holding the volume (direct) and at another node (the volume's node
// read from etcd once, then cached; forwarded), and of GET /volumes (every node's list joined)
// asked of one node. Nothing here asserts a time.   node bench/cluster-volumes.mjs [N runs]
import { volumeOwners, newCluster, startCluster, stopCluster } from '../tests/integration/cluster-lib.mjs'
import { p50p90, timed } from './lifecycle-lib.mjs'

const N = Number(process.argv[2] || 200)

const cl = newCluster(3, { network: false })
const { nodes, key } = cl
let etcd

const vols = []
try {
  await startCluster(cl)
  etcd = cl.etcd
  for (let i = 0; i < 3; i++) {
    const r = await nodes[0].api('POST', '/volumes', { key, body: { name: `bench${i}`, sizeMB: 16 } })
    vols.push(r.json)
  }
  const map = await volumeOwners(etcd)
  const v = vols[0]
  const owner = Number(map[v.volumeID].slice(1))
  const other = (owner + 1) % 3
  const path = `/volumecontent/${v.volumeID}/file?path=/f.txt`
  const auth = { Authorization: `Bearer ${v.token}` }
  const put = await fetch(`${nodes[owner].url}${path}&force=true`, { method: 'PUT', headers: { ...auth, 'Content-Type': 'application/octet-stream' }, body: 'x'.repeat(1024) })
  if (put.status !== 200) throw new Error(`write: ${put.status} ${await put.text()}`)
  const get = (d) => () => fetch(`${d.url}${path}`, { headers: auth }).then((r) => { if (r.status !== 200) throw new Error(`status ${r.status}`); return r.text() })
  const direct = await timed(get(nodes[owner]), N)
  const fwd = await timed(get(nodes[other]), N)
  console.log(`volume readFile (1 KiB), volume of node ${owner}, ${N} runs: direct ${p50p90(direct)}; through node ${other} ${p50p90(fwd)}`)
  const list = await timed(() => nodes[0].api('GET', '/volumes', { key }).then((r) => { if (r.json.length !== 3) throw new Error(r.text) }), N)
  console.log(`GET /volumes (3 volumes on 3 nodes) asked of node 0, ${N} runs: ${p50p90(list)}`)
} finally {
  for (const v of vols) await nodes[0].api('DELETE', `/volumes/${v.volumeID}`, { key }).catch(() => {})
  await stopCluster(cl)
}
