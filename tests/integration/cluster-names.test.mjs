// Cluster node names are unique (server/cluster/README.md "Nodes"): a node whose name is held by
// another live node refuses to start and says so, rather than registering over it (hosts
// cloned from one image share their host name, the default name). The holder keeps working;
// a node killed and restarted at once takes its own name back when its old lease expires.
// One etcd member and two nodes on loopback addresses: small on purpose.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { REAL, sleep, startSbxd, realTemplates } from './sbxd.mjs'
import { startEtcd, newKey, cgroupParent, removeCgroupParent, cleanNode, hopSecret, clusterSkip, importSdk } from './cluster-lib.mjs'

const skip = clusterSkip

let etcd, e2b
const key = newKey()
const nodes = []

// A node named `name` on 127.0.0.(21+i) with its own state dir and cgroup parent.
function start(i, name, reuse) {
  const prepare = (state) => {
    writeFileSync(join(state, 'keys'), key + '\n', { mode: 0o600 })
    realTemplates(state)
  }
  return startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare, reuse, host: `127.0.0.${21 + i}`,
    args: ['--cluster', `etcd://${etcd.endpoints}`, '--node-name', name,
      '--cgroup-parent', cgroupParent(10 + i), '--disk-overcommit', '20'] })
}

const exited = (d) => new Promise((r) => d.proc.exitCode !== null || d.proc.signalCode ? r() : d.proc.once('exit', r))

before(async () => {
  if (skip) return
  e2b = await importSdk()
  etcd = await startEtcd(1)
  nodes[0] = await start(0, 'clone')
  await hopSecret(etcd)
})

after(async () => {
  for (const d of nodes) await cleanNode(d).catch(() => {})
  for (const d of nodes) await d?.stop().catch(() => {})
  await etcd?.stopAll()
  for (const i of [10, 11]) await removeCgroupParent(i)
})

test('a second node with a live node\'s name refuses to start, naming the holder', { skip, timeout: 60_000 }, async () => {
  const opts = { apiUrl: nodes[0].url, sandboxUrl: nodes[0].url, apiKey: key }
  const s = await e2b.Sandbox.create('base', opts)
  nodes[1] = await start(1, 'clone')
  await exited(nodes[1])
  assert.notEqual(nodes[1].proc.exitCode, 0, 'the second node must not keep running')
  assert.match(nodes[1].stderr(), /node name clone is held by another live node \(at 127\.0\.0\.21:\d+\)/)
  await nodes[1].stop() // its state dir (templates, storage pool) goes with it
  nodes[1] = null
  // the holder was not disturbed: its record, its sandboxes, commands through it
  const list = await fetch(`${opts.apiUrl}/v1/nodes`, { headers: { Authorization: `Bearer ${key}` } }).then((r) => r.json())
  assert.deepEqual(list.map((n) => n.name), ['clone'])
  assert.equal((await s.commands.run('echo still mine')).stdout, 'still mine\n')
  await s.kill()
})

test('a node killed and restarted at once gets its own name back', { skip, timeout: 60_000 }, async () => {
  const old = nodes[0]
  old.proc.kill('SIGKILL')
  await exited(old)
  nodes[0] = await start(0, 'clone', old) // its lease is still alive: the start waits it out
  let list = []
  for (let i = 0; i < 100 && !list.length; i++) {
    list = await fetch(`${nodes[0].url}/v1/nodes`, { headers: { Authorization: `Bearer ${key}` } })
      .then((r) => r.json()).catch(() => [])
    if (!list.length) await sleep(100)
  }
  assert.deepEqual(list.map((n) => n.name), ['clone'])
  assert.equal(nodes[0].proc.exitCode, null)
  const s = await e2b.Sandbox.create('base', { apiUrl: nodes[0].url, sandboxUrl: nodes[0].url, apiKey: key })
  assert.equal((await s.commands.run('echo back')).stdout, 'back\n')
  await s.kill()
})
