// Volumes in cluster mode (server/cluster/README.md, "Volumes"): three etcd members and three
// sbxd nodes in network namespaces (cluster-lib.mjs), the unmodified e2b SDK. A volume lives on
// one node; every node lists, reads, writes and deletes it, a sandbox mounting it is created
// where it lives whichever node is asked, names are unique across nodes, a create naming
// volumes of two nodes is refused, a volume of a killed node answers "node lost". Also an MCP
// session's sandbox on a drained node: refused. Skipped only when etcd is not installed.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { sleep } from './sbxd.mjs'
import { startNode, owners, volumeOwners, hopSecret, hopValue, newCluster, startCluster, stopCluster, clusterSkip, importSdk } from './cluster-lib.mjs'

const skip = clusterSkip

const cl = newCluster()
const { nodes, key } = cl
let etcd, net
let e2b
const vols = [] // { id, name, token }
const at = (i) => ({ apiUrl: nodes[i].url, sandboxUrl: nodes[i].url, apiKey: key })
const idx = (name) => Number(name.slice(1)) // n2 -> 2
const api = (i, method, path, body) => nodes[i].api(method, path, { key, body })

before(async () => {
  if (skip) return
  e2b = await importSdk()
  await startCluster(cl)
  etcd = cl.etcd
  net = cl.net
})

after(() => stopCluster(cl))

// Volumes by node: { n0: [vol...], ... } from etcd's volumes/<id> keys.
async function byNode() {
  const map = await volumeOwners(etcd)
  const out = {}
  for (const v of vols) (out[map[v.id]] ??= []).push(v)
  return out
}

test('volumes are placed over the nodes, listed and read through any node, names unique', { skip, timeout: 120_000 }, async () => {
  for (let i = 0; i < 6; i++) {
    const r = await api(0, 'POST', '/volumes', { name: `cv${i}`, sizeMB: 16 })
    assert.equal(r.status, 201, r.text)
    vols.push({ id: r.json.volumeID, name: r.json.name, token: r.json.token })
  }
  const map = await volumeOwners(etcd)
  const holders = new Set(vols.map((v) => map[v.id]))
  assert.ok(holders.size >= 2, `all on ${[...holders]}: creates through node 0 are placed`)
  for (const v of vols) assert.match(map[v.id], /^n[012]$/)
  // every node lists all six, in E2B's Volume shape
  const want = vols.map((v) => ({ volumeID: v.id, name: v.name })).sort((a, b) => a.name.localeCompare(b.name))
  for (let i = 0; i < 3; i++) {
    const r = await api(i, 'GET', '/volumes')
    assert.equal(r.status, 200)
    assert.deepEqual(r.json.sort((a, b) => a.name.localeCompare(b.name)), want)
  }
  assert.deepEqual((await e2b.Volume.list(at(1))).map((x) => x.name).sort(), want.map((x) => x.name))
  // get through each node: the owner's answer, token included
  for (const v of vols) {
    for (let i = 0; i < 3; i++) {
      const r = await api(i, 'GET', `/volumes/${v.id}`)
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.token, v.token)
    }
  }
  const info = await e2b.Volume.getInfo(vols[0].id, at(2))
  assert.equal(info.name, 'cv0')
  // a name is the cluster's: taken on another node is E2B's 400, whichever node is asked
  for (let i = 0; i < 3; i++) {
    const r = await api(i, 'POST', '/volumes', { name: 'cv3', sizeMB: 16 })
    assert.deepEqual(r.json, { code: 400, message: "Volume with name 'cv3' already exists" })
  }
  // two creates of one name at once through two nodes: one volume
  const both = await Promise.all([1, 2].map((i) => api(i, 'POST', '/volumes', { name: 'race', sizeMB: 16 })))
  assert.deepEqual(both.map((x) => x.status).sort(), [201, 400], both.map((x) => x.text).join(' '))
  const won = both.find((x) => x.status === 201).json
  const names = (await api(0, 'GET', '/volumes')).json.filter((x) => x.name === 'race')
  assert.deepEqual(names, [{ volumeID: won.volumeID, name: 'race' }])
  assert.equal(await e2b.Volume.destroy(won.volumeID, at(0)), true)
  // unknown ids: E2B's answers, from any node
  let r = await api(1, 'GET', '/volumes/00000000-0000-4000-8000-000000000000')
  assert.deepEqual(r.json, { code: 404, message: 'Volume not found' })
  r = await api(1, 'GET', '/volumes/nope')
  assert.deepEqual(r.json, { code: 400, message: 'Invalid volume ID' })
  r = await nodes[2].api('GET', '/volumes', { key: null })
  assert.equal(r.status, 401)
})

test('content through a non-owner; a sandbox mounting the volume runs where it lives', { skip, timeout: 180_000 }, async () => {
  const groups = await byNode()
  const [holder, [v]] = Object.entries(groups)[0]
  const other = [0, 1, 2].find((i) => i !== idx(holder))
  const vol = new e2b.Volume(v.id, v.name, v.token)
  process.env.E2B_VOLUME_API_URL = nodes[other].url
  await vol.writeFile('/hello.txt', 'from-volume\n')
  assert.equal(await vol.readFile('/hello.txt'), 'from-volume\n')
  // 2 MiB up and down through the forwarding node, streamed
  const big = Buffer.alloc(2 << 20, 7)
  await vol.writeFile('/big.bin', new Blob([big]))
  const back = Buffer.from(await vol.readFile('/big.bin', { format: 'bytes' }))
  assert.equal(back.length, big.length)
  assert.ok(back.equals(big))
  const listed = (await vol.list('/')).map((e) => e.name)
  assert.ok(listed.includes('big.bin') && listed.includes('hello.txt'), listed.join(' '))
  // the token is checked by the owner: a wrong one is 401 through the other node too
  const bad = await fetch(`${nodes[other].url}/volumecontent/${v.id}/file?path=/hello.txt`, { headers: { Authorization: 'Bearer nope' } })
  assert.equal(bad.status, 401)

  // a create through a node that does not hold the volume lands on the one that does
  const s = await e2b.Sandbox.create('base', { ...at(other), timeoutMs: 120_000, volumeMounts: { '/mnt/v': v.name } })
  try {
    assert.equal((await owners(etcd))[s.sandboxId], holder)
    assert.equal((await s.commands.run('cat /mnt/v/hello.txt')).stdout, 'from-volume\n')
    await s.commands.run('echo from-sandbox > /mnt/v/s.txt')
    assert.equal(await vol.readFile('/s.txt'), 'from-sandbox\n')
    // in use: the owner's 409, through another node
    await assert.rejects(e2b.Volume.destroy(v.id, at(other)), /409: volume '.*' is in use/)
  } finally {
    await s.kill()
  }

  // volumes of two nodes in one create: refused, in E2B's shape
  const [a, b] = [Object.values(groups)[0][0], Object.values(groups)[1][0]]
  const r = await api(0, 'POST', '/sandboxes', { templateID: 'base', volumeMounts: [{ name: a.name, path: '/a' }, { name: b.name, path: '/b' }] })
  assert.equal(r.status, 400, r.text)
  assert.equal(r.json.code, 400)
  assert.match(r.json.message, /invalid mounts: volumes '.+' \(node n\d\) and '.+' \(node n\d\) live on different nodes/)
  await assert.rejects(e2b.Sandbox.create('base', { ...at(1), volumeMounts: { '/a': a.name, '/b': b.name } }), /400: invalid mounts/)
})

test('delete through a non-owner: gone everywhere, the name free again', { skip, timeout: 60_000 }, async () => {
  const map = await volumeOwners(etcd)
  const v = vols.find((x) => map[x.id])
  const other = [0, 1, 2].find((i) => i !== idx(map[v.id]))
  assert.equal(await e2b.Volume.destroy(v.id, at(other)), true)
  vols.splice(vols.indexOf(v), 1)
  assert.equal((await volumeOwners(etcd))[v.id], undefined)
  for (let i = 0; i < 3; i++) {
    assert.equal((await api(i, 'GET', `/volumes/${v.id}`)).status, 404)
    assert.ok(!(await api(i, 'GET', '/volumes')).json.some((x) => x.volumeID === v.id))
  }
  assert.equal(await e2b.Volume.destroy(v.id, at(other)), false)
  const r = await api(other, 'POST', '/volumes', { name: v.name, sizeMB: 16 })
  assert.equal(r.status, 201, r.text)
  vols.push({ id: r.json.volumeID, name: r.json.name, token: r.json.token })
})

test('a drained node takes no volume, and refuses an MCP session\'s sandbox', { skip, timeout: 120_000 }, async () => {
  const auth = { Authorization: `Bearer ${key}` }
  // a volume on n1 for sure: asked of n1 alone (the signed hop header: no placement)
  const t = '/volumes'
  const p = await nodes[1].api('POST', t, { key, body: { name: 'on-n1', sizeMB: 16 }, headers: { 'Sbx-Cluster-Hop': hopValue(await hopSecret(etcd), 'POST', t) } })
  assert.equal(p.status, 201, p.text)
  vols.push({ id: p.json.volumeID, name: p.json.name, token: p.json.token })
  assert.equal((await volumeOwners(etcd))[p.json.volumeID], 'n1')
  assert.equal((await fetch(`${nodes[0].url}/v1/nodes/n1/drain`, { method: 'POST', headers: auth })).status, 204)
  try {
    for (let i = 0; i < 30; i++) { // every node sees it at its next beat
      const ls = await Promise.all(nodes.map((d) => fetch(`${d.url}/v1/nodes`, { headers: auth }).then((r) => r.json())))
      if (ls.every((l) => l.find((n) => n.name === 'n1').draining)) break
      await sleep(100)
    }
    const made = []
    for (let i = 0; i < 4; i++) {
      const r = await api(1, 'POST', '/volumes', { name: `dr${i}`, sizeMB: 16 })
      assert.equal(r.status, 201, r.text)
      made.push({ id: r.json.volumeID, name: r.json.name, token: r.json.token })
    }
    const map = await volumeOwners(etcd)
    for (const v of made) assert.notEqual(map[v.id], 'n1')
    vols.push(...made)
    // a volume on the drained node: a sandbox mounting it is refused, clearly
    const r0 = await api(0, 'POST', '/sandboxes', { templateID: 'base', volumeMounts: [{ name: 'on-n1', path: '/v' }] })
    assert.equal(r0.status, 503, r0.text)
    assert.equal(r0.json.message, "volume 'on-n1' lives on node n1, which is drained: it takes no new sandboxes")
    // MCP: the session's sandbox is made on the session's node; drained, it says so
    const h = { ...auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }
    const rpc = async (sid, id, method, params) => {
      const res = await fetch(`${nodes[1].url}/mcp`, { method: 'POST', headers: sid ? { ...h, 'Mcp-Session-Id': sid } : h, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) })
      return { sid: res.headers.get('mcp-session-id'), json: JSON.parse(await res.text()) }
    }
    const init = await rpc(null, 1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } })
    assert.match(init.sid, /^n1-/)
    const before = Object.keys(await owners(etcd)).length
    const r = await rpc(init.sid, 2, 'tools/call', { name: 'run_python', arguments: { code: 'print(1)' } })
    assert.equal(r.json.result.isError, true, JSON.stringify(r.json))
    assert.match(JSON.stringify(r.json.result.content), /node n1 is drained: it creates no new sandboxes/)
    assert.equal(Object.keys(await owners(etcd)).length, before)
    await fetch(`${nodes[1].url}/mcp`, { method: 'DELETE', headers: { ...auth, 'Mcp-Session-Id': init.sid } })
  } finally {
    await fetch(`${nodes[0].url}/v1/nodes/n1/drain`, { method: 'DELETE', headers: auth })
  }
})

test('kill -9 of a volume\'s node: node lost through the others; back after a restart', { skip, timeout: 120_000 }, async () => {
  const map = await volumeOwners(etcd)
  const v = vols.find((x) => map[x.id] && map[x.id] !== 'n0')
  const lost = idx(map[v.id])
  const old = nodes[lost]
  old.proc.kill('SIGKILL')
  await new Promise((r) => old.proc.exitCode !== null || old.proc.signalCode ? r() : old.proc.once('exit', r))
  let r
  for (let i = 0; i < 100; i++) { // refused at once by a dead node, or after its lease
    r = await api(0, 'GET', `/volumes/${v.id}`)
    if (r.status === 503) break
    await sleep(100)
  }
  assert.equal(r.status, 503, r.text)
  assert.equal(r.json.code, 503)
  assert.match(r.json.message, new RegExp(`^node lost: volume ${v.id} lives on node n${lost}`))
  const c = await fetch(`${nodes[0].url}/volumecontent/${v.id}/file?path=/x`, { headers: { Authorization: `Bearer ${v.token}` } })
  assert.equal(c.status, 503)
  assert.match((await c.json()).message, /node lost/)
  // a create mounting it: at once the node does not answer (502, as any create placed on a dead
  // node); once its lease is gone (5 s), 503 naming the volume
  let s
  for (let i = 0; i < 100; i++) {
    s = await api(0, 'POST', '/sandboxes', { templateID: 'base', volumeMounts: [{ name: v.name, path: '/v' }] })
    assert.match(s.json.message, /^node lost: /, s.text)
    if (s.status === 503) break
    await sleep(100)
  }
  assert.equal(s.status, 503, s.text)
  assert.match(s.json.message, new RegExp(`node lost: volume '${v.name}' lives on node n${lost}, which is not live`))
  for (let i = 0; i < 30; i++) { // the other node's view loses it at its next beat
    r = await api(1 + (lost === 1 ? 1 : 0), 'GET', `/volumes/${v.id}`)
    if (/which is not live/.test(r.json.message)) break
    await sleep(100)
  }
  assert.equal(r.status, 503, r.text)
  assert.match(r.json.message, new RegExp(`^node lost: volume ${v.id} lives on node n${lost}, which is not live`))
  // still listed (from etcd): its name stays taken
  const listed = (await api(0, 'GET', '/volumes')).json
  assert.deepEqual(listed.map((x) => x.volumeID).sort(), vols.map((x) => x.id).sort())
  r = await api(0, 'POST', '/volumes', { name: v.name, sizeMB: 16 })
  assert.deepEqual(r.json, { code: 400, message: `Volume with name '${v.name}' already exists` })
  // the others' volumes still answer
  const alive = [0, 1, 2].find((i) => i !== 0 && i !== lost)
  for (const x of vols.filter((y) => map[y.id] !== `n${lost}`)) {
    assert.equal((await api(0, 'GET', `/volumes/${x.id}`)).status, 200)
    assert.equal((await api(alive, 'GET', `/volumes/${x.id}`)).status, 200)
  }
  // restarted on its state dir: served again, through node 0
  nodes[lost] = await startNode(lost, etcd, key, { reuse: old, net })
  for (let i = 0; i < 50; i++) {
    r = await api(0, 'GET', `/volumes/${v.id}`)
    if (r.status === 200) break
    await sleep(200)
  }
  assert.equal(r.status, 200, r.text)
  assert.equal(r.json.token, v.token)
  // every volume is removed through node 0, whichever node holds it
  for (const x of vols) assert.equal(await e2b.Volume.destroy(x.id, at(0)), true, x.name)
  assert.deepEqual(await volumeOwners(etcd), {})
  for (let i = 0; i < 3; i++) assert.deepEqual((await api(i, 'GET', '/volumes')).json, [])
})
