// Cluster mode, templates and sandboxes between nodes (server/cluster/README.md "Templates on
// many nodes", "Failure and maintenance"): the same three-member etcd cluster and three sbxd
// nodes in network namespaces as cluster.test.mjs (cluster-lib.mjs), the unmodified SDK
// against node 0. A snapshot taken on one node starts on the others, which pull its layers
// (verified by hash); drain --move moves a sandbox with a file in it to another node under
// the same id. Bounded: every test has a timeout; after() removes everything it made.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { sleep } from './sbxd.mjs'
import { owners, hopSecret, hopValue, newCluster, startCluster, stopCluster, clusterSkip, importSdk, SBX } from './cluster-lib.mjs'

const skip = clusterSkip

const cl = newCluster()
const { nodes, key } = cl
let etcd
let e2b
const opts = () => ({ apiUrl: nodes[0].url, sandboxUrl: nodes[0].url, apiKey: key })
const auth = { Authorization: `Bearer ${key}` }
// The nodes' own Sbx-Cluster-Hop, signed with the cluster's secret (cluster/hop-auth.h).
const hop = async (method, target) => ({ 'Sbx-Cluster-Hop': hopValue(await hopSecret(etcd), method, target) })

before(async () => {
  if (skip) return
  e2b = await importSdk({ cli: true })
  await startCluster(cl)
  etcd = cl.etcd
})

after(() => stopCluster(cl, 'move-'))

// A sandbox created on node i itself (the hop header: no placement), then reached through
// node 0 with the SDK.
async function createOn(i, extra = {}) {
  const r = await fetch(`${nodes[i].url}/v2/sandboxes`, { method: 'POST',
    headers: { 'X-API-KEY': key, 'Content-Type': 'application/json', ...await hop('POST', '/v2/sandboxes') },
    body: JSON.stringify({ templateID: 'base', timeout: 300, ...extra }) })
  const j = await r.json()
  assert.equal(r.status, 201, JSON.stringify(j))
  return e2b.Sandbox.connect(j.sandboxID, opts())
}

// The CLI against node 0: { status, stdout, stderr }. Asynchronous: a blocked event loop would
// miss the nodes closing idle keep-alive connections, and the SDK's next call would fail.
function sbxRun(args) {
  const env = { ...process.env, SBX_URL: nodes[0].url, SBX_API_KEY: key }
  return new Promise((res) => execFile(SBX, args, { env, encoding: 'utf8', timeout: 150_000 },
    (err, stdout, stderr) => res({ status: err ? (err.code ?? 1) : 0, stdout, stderr })))
}
async function sbx(args) {
  const r = await sbxRun(args)
  assert.equal(r.status, 0, `sbx ${args.join(' ')}: exit ${r.status}: ${r.stderr}${r.stdout}`)
  return r.stdout
}

async function setDrain(name, on) {
  const r = await fetch(`${nodes[0].url}/v1/nodes/${name}/drain`, { method: on ? 'POST' : 'DELETE', headers: auth })
  assert.equal(r.status, 204)
  for (let i = 0; i < 30; i++) { // every node sees it at its next beat
    const views = await Promise.all(nodes.map((d) => fetch(`${d.url}/v1/nodes`, { headers: auth }).then((x) => x.json())))
    if (views.every((l) => l.find((n) => n.name === name)?.draining === on)) return
    await sleep(100)
  }
  assert.fail(`drain of ${name} not seen everywhere`)
}

test('a snapshot taken on one node starts on the others: they pull its layers', { skip, timeout: 180_000 }, async () => {
  const a = await createOn(1)
  await a.files.write('/home/user/note.txt', 'written-on-n1')
  const snap = await a.createSnapshot()
  const id = snap.snapshotId
  assert.ok(existsSync(join(nodes[1].state, 'templates', id)))
  assert.ok(!existsSync(join(nodes[0].state, 'templates', id)) && !existsSync(join(nodes[2].state, 'templates', id)))
  // the only node that has it takes nothing new: a create of it goes to a node that must pull
  await setDrain('n1', true)
  // two at once: each lands on n0 or n2; two on one node pull each layer once
  const made = await Promise.all([0, 1].map(() => e2b.Sandbox.create(id, { ...opts(), timeoutMs: 120_000, requestTimeoutMs: 150_000 })))
  const map = await owners(etcd)
  for (const b of made) {
    assert.ok(['n0', 'n2'].includes(map[b.sandboxId]), `placed on ${map[b.sandboxId]}`)
    assert.equal((await b.commands.run('cat /home/user/note.txt')).stdout, 'written-on-n1')
    const i = Number(map[b.sandboxId].slice(1))
    assert.ok(existsSync(join(nodes[i].state, 'templates', id)), 'the template is there now')
  }
  // the node-only routes: refused without the key, without the hop header, and with an
  // unsigned one
  const tt = `/v1/cluster/templates/${id}`
  const lr = await fetch(`${nodes[1].url}${tt}`, { headers: await hop('GET', tt) })
  assert.equal(lr.status, 401)
  const lh = await fetch(`${nodes[1].url}${tt}`, { headers: auth })
  assert.equal(lh.status, 403)
  const lu = await fetch(`${nodes[1].url}${tt}`, { headers: { ...auth, 'Sbx-Cluster-Hop': '1' } })
  assert.equal(lu.status, 401)
  const tj = await fetch(`${nodes[1].url}${tt}`, { headers: { ...auth, ...await hop('GET', tt) } }).then((r) => r.json())
  assert.ok(tj.layers.every((l) => /^sha256:[0-9a-f]{64}$/.test(l)))
  // one pull per layer and node: the two creates never both transferred the snapshot's layer
  // into one store (the second waited for the first, or went to the other node)
  const topLayer = tj.layers[tj.layers.length - 1].slice('sha256:'.length, 'sha256:'.length + 12)
  for (const [i, d] of nodes.entries()) {
    const pulls = d.stderr().split('\n').filter((l) => l.includes(`cluster: layer ${topLayer} pulled`))
    assert.ok(pulls.length <= 1, `node ${i} pulled layer ${topLayer} ${pulls.length} times`)
  }
  for (const b of made) await b.kill()
  await a.kill()
  await setDrain('n1', false)
})

test('drain --move: a sandbox moves by snapshot to another node under the same id, its files kept', { skip, timeout: 180_000 }, async () => {
  const c = await createOn(2, { envVars: { MOVED_ENV: 'still-here' } })
  const id = c.sandboxId
  await c.files.write('/home/user/moved.txt', 'kept-across-the-move')
  assert.equal((await owners(etcd))[id], 'n2')
  // one that cannot move: it mounts a volume of n2 (asked on n2 itself, alone: the hop header,
  // else the volume is placed on any node)
  const vr = await fetch(`${nodes[2].url}/volumes`, { method: 'POST',
    headers: { 'X-API-KEY': key, 'Content-Type': 'application/json', ...await hop('POST', '/volumes') }, body: JSON.stringify({ name: 'stays', sizeMB: 16 }) })
  assert.equal(vr.status, 201, await vr.text())
  const v = await createOn(2, { volumeMounts: [{ name: 'stays', path: '/mnt/v' }] })
  // one paused (with its memory): it moves paused, and a connect resumes it on its new node
  const p = await createOn(2)
  await p.files.write('/home/user/paused.txt', 'paused-then-moved')
  assert.equal(await p.pause(), true)
  const r = await sbxRun(['node', 'drain', 'n2', '--move'])
  const out = r.stdout
  assert.equal(r.status, 3, `some stayed: exit 3\n${r.stderr}${out}`)
  assert.match(out, new RegExp(`${id} +moved +n[01]`), out)
  assert.match(out, new RegExp(`${v.sandboxId} +kept +it mounts volumes`), out)
  assert.match(out, new RegExp(`${p.sandboxId} +moved +n[01]`), out)
  assert.match(out, /2 moved, 1 kept/, out)
  const pi = await e2b.Sandbox.getInfo(p.sandboxId, opts())
  assert.equal(pi.state, 'paused', 'moved as it was: paused')
  const pr = await e2b.Sandbox.connect(p.sandboxId, opts())
  assert.equal((await pr.commands.run('cat /home/user/paused.txt')).stdout, 'paused-then-moved')
  await pr.kill()
  // the one that stayed still runs on n2
  assert.equal((await owners(etcd))[v.sandboxId], 'n2')
  assert.equal((await v.commands.run('echo stayed')).stdout, 'stayed\n')
  await v.kill()
  const to = (await owners(etcd))[id]
  assert.ok(['n0', 'n1'].includes(to), `mapped to ${to}`)
  // the same id answers from its new node, through node 0: its file and env vars are there
  const again = await e2b.Sandbox.connect(id, opts())
  assert.equal(again.sandboxId, id)
  assert.equal((await again.commands.run('cat /home/user/moved.txt')).stdout, 'kept-across-the-move')
  assert.equal((await again.commands.run('echo $MOVED_ENV')).stdout, 'still-here\n')
  assert.equal((await again.getInfo()).state, 'running')
  // gone from n2: asked alone (the hop header), it does not know the sandbox any more
  const n2 = await fetch(`${nodes[2].url}/sandboxes/${id}`, { headers: { 'X-API-KEY': key, ...await hop('GET', `/sandboxes/${id}`) } })
  assert.equal(n2.status, 404)
  assert.ok(!existsSync(join(nodes[2].state, 'sandboxes', id)))
  // a drained node with nothing on it: nothing to move
  const none = JSON.parse(await sbx(['--json', 'node', 'drain', 'n2', '--move']))
  assert.deepEqual([none.moved, none.kept], [0, 0])
  await setDrain('n2', false)
  await again.kill()
})
