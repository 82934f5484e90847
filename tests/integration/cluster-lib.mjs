// A cluster on one machine for the cluster test and bench: an etcd cluster of three members
// (Debian's etcd-server), and sbxd nodes with their own state dirs and cgroup parents, all
// with one API key. With makeNetwork() (the test) each node runs in a network namespace of its
// own, joined to the others by a bridge with a veth each (10.214.X.0/24: etcd on .1, node i on
// .11+i); without it (the bench) on distinct loopback addresses (127.0.0.11, .12, ...).
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync, existsSync, readdirSync, rmdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes, createHmac } from 'node:crypto'
import assert from 'node:assert/strict'
import { startSbxd, realTemplates, REAL, TOP, sleep } from './sbxd.mjs'

export const ETCD = ['/usr/bin/etcd', '/usr/local/bin/etcd'].find((p) => existsSync(p))
// Why the cluster tests skip: only a missing etcd (false when it is installed).
export const clusterSkip = !ETCD ? 'etcd not installed (scripts/install-deps.sh)' : false
export const SBX = join(TOP, 'build/cli/sbx')
const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')

// The e2b SDK's module, once what a cluster test runs is there: sbxd, the jailer and the agent
// built, the SDK installed, with cli the sbx CLI built. Anything missing is a failure, not a
// skip.
export async function importSdk({ cli = false } = {}) {
  const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
  assert.ok(!missing.length, `not built: ${missing.join(', ')}`)
  assert.ok(existsSync(SDK), 'e2b SDK not installed (npm ci in tests/)')
  if (cli) assert.ok(existsSync(SBX), 'the sbx CLI is not built')
  return import(SDK)
}

export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer()
    s.once('error', rej)
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)) })
  })
}

const sh = (...a) => execFileSync(a[0], a.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] })

// A bridge in this namespace and n network namespaces, each with a veth on the bridge.
// nsenter switches only the network namespace (ip netns exec would also remount /sys and
// hide the cgroup tree sbxd needs).
export function makeNetwork(n) {
  const tag = process.pid % 100000
  const net = `10.214.${process.pid % 250}`
  const br = `sbxcl${tag}`
  const ns = (i) => `sbxcl-${tag}-n${i}`
  function remove() {
    for (let i = 0; i < n; i++) try { sh('ip', 'netns', 'del', ns(i)) } catch {}
    try { sh('ip', 'link', 'del', br) } catch {}
  }
  remove() // a stale one of a pid reused
  sh('ip', 'link', 'add', br, 'type', 'bridge')
  sh('ip', 'addr', 'add', `${net}.1/24`, 'dev', br)
  sh('ip', 'link', 'set', br, 'up')
  for (let i = 0; i < n; i++) {
    sh('ip', 'netns', 'add', ns(i))
    sh('ip', 'link', 'add', `${br}h${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns(i))
    sh('ip', 'link', 'set', `${br}h${i}`, 'master', br, 'up')
    sh('ip', '-n', ns(i), 'addr', 'add', `${net}.${11 + i}/24`, 'dev', 'eth0')
    sh('ip', '-n', ns(i), 'link', 'set', 'eth0', 'up')
    sh('ip', '-n', ns(i), 'link', 'set', 'lo', 'up')
  }
  return { etcdHost: `${net}.1`, host: (i) => `${net}.${11 + i}`, wrap: (i) => ['nsenter', `--net=/run/netns/${ns(i)}`], remove }
}

// Three etcd members on host; returns { host, endpoints, members: [{name, proc, client}],
// stop(i), stopAll() }.
export async function startEtcd(n = 3, host = '127.0.0.1') {
  const root = mkdtempSync(join(tmpdir(), 'sbx-etcd-'))
  const ms = []
  for (let i = 0; i < n; i++) ms.push({ name: `e${i}`, client: await freePort(), peer: await freePort() })
  const initial = ms.map((m) => `${m.name}=http://${host}:${m.peer}`).join(',')
  for (const m of ms) {
    m.proc = spawn(ETCD, ['--name', m.name, '--data-dir', join(root, m.name),
      '--listen-client-urls', `http://${host}:${m.client}`,
      '--advertise-client-urls', `http://${host}:${m.client}`,
      '--listen-peer-urls', `http://${host}:${m.peer}`,
      '--initial-advertise-peer-urls', `http://${host}:${m.peer}`,
      '--initial-cluster', initial, '--initial-cluster-state', 'new',
      '--initial-cluster-token', `sbx-test-${process.pid}`,
      '--heartbeat-interval', '100', '--election-timeout', '1000'], { stdio: ['ignore', 'ignore', 'pipe'] })
    m.log = ''
    m.proc.stderr.on('data', (d) => { if (m.log.length < 200000) m.log += d })
  }
  const endpoints = ms.map((m) => `${host}:${m.client}`).join(',')
  for (let i = 0; i < 200; i++) {
    const ok = await Promise.all(ms.map((m) => fetch(`http://${host}:${m.client}/health`)
      .then((r) => r.json()).then((j) => j.health === 'true').catch(() => false)))
    if (ok.every(Boolean)) break
    await sleep(50)
  }
  async function stop(i) {
    const m = ms[i]
    if (m.proc.exitCode !== null || m.proc.signalCode) return
    m.proc.kill('SIGKILL')
    await new Promise((r) => m.proc.exitCode !== null || m.proc.signalCode ? r() : m.proc.once('exit', r))
  }
  async function stopAll() {
    for (let i = 0; i < ms.length; i++) await stop(i)
    rmSync(root, { recursive: true, force: true })
  }
  return { host, endpoints, members: ms, stop, stopAll }
}

export const cgroupParent = (i) => `sbx-cluster-${process.pid}-n${i}`

// Remove node i's cgroup parent in every hierarchy, retrying while the kernel finishes removing
// the sandboxes' own cgroups below it (up to 3 s).
export async function removeCgroupParent(i) {
  const dirs = () => [...readdirSync('/sys/fs/cgroup').map((h) => `/sys/fs/cgroup/${h}/${cgroupParent(i)}`),
    `/sys/fs/cgroup/${cgroupParent(i)}`].filter((d) => existsSync(d))
  for (let k = 0; k < 30 && dirs().length; k++) {
    for (const d of dirs()) try { rmdirSync(d) } catch {}
    if (dirs().length) await sleep(100)
  }
}

export const newKey = () => 'e2b_' + randomBytes(20).toString('hex')

// Node i of a cluster: real jailer and agent, real templates (templates/build-all.sh, cached),
// the shared key, its own cgroup parent.
export const nodeHost = (i, net) => net ? net.host(i) : `127.0.0.${11 + i}`

export async function startNode(i, etcd, key, { reuse, net } = {}) {
  const name = `n${i}`
  const prepare = (state) => {
    writeFileSync(join(state, 'keys'), key + '\n', { mode: 0o600 })
    realTemplates(state)
  }
  return startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare, reuse, host: nodeHost(i, net),
    wrap: net ? net.wrap(i) : [],
    args: ['--cluster', `etcd://${etcd.endpoints}`, '--node-name', name,
      '--cgroup-parent', cgroupParent(i), '--max-sandboxes', '64',
      // sparse sandbox disks: three nodes on one shared test machine must not fill its disk
      '--disk-overcommit', '20'] })
}

// Keys under a prefix in etcd, from the key layout (server/cluster/README.md): { rest: value }.
async function etcdRange(etcd, prefix, exact = false) {
  const ep = etcd.members.find((m) => m.proc.exitCode === null && !m.proc.signalCode)
  const b64 = (s) => Buffer.from(s).toString('base64')
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
  const res = await fetch(`http://${etcd.host}:${ep.client}/v3/kv/range`, {
    method: 'POST', body: JSON.stringify(exact ? { key: b64(prefix) } : { key: b64(prefix), range_end: b64(end) }),
  })
  const j = await res.json()
  const out = {}
  for (const kv of j.kvs || []) {
    out[Buffer.from(kv.key, 'base64').toString().slice(prefix.length)] = Buffer.from(kv.value, 'base64').toString()
  }
  return out
}

// The owner of each sandbox.
export const owners = (etcd) => etcdRange(etcd, '/sbx/v1/sandboxes/')
// The node of each volume (server/cluster/cluster-volumes.h).
export const volumeOwners = (etcd) => etcdRange(etcd, '/sbx/v1/volumes/')

// The cluster's hop secret (server/cluster/hop-auth.h), read once while etcd has quorum.
let secret
export async function hopSecret(etcd) {
  secret ??= (await etcdRange(etcd, '/sbx/v1/hop-secret', true))['']
  return secret
}

// A signed Sbx-Cluster-Hop value for method + target (raw path and query), as a node sends it.
export function hopValue(key, method, target, ts = Math.floor(Date.now() / 1000)) {
  const mac = createHmac('sha256', key).update(`sbx-cluster-hop v1\n${ts}\n${method}\n${target}`).digest('hex')
  return `v1 ${ts} ${mac}`
}

// Remove every sandbox of a node, asking it alone (the signed hop header: no forwarding, no
// fan-out).
export async function cleanNode(d) {
  if (!d || d.proc.exitCode !== null || d.proc.signalCode || !secret) return
  const h = (method, target) => ({ 'X-API-KEY': d.key, 'Sbx-Cluster-Hop': hopValue(secret, method, target) })
  const lt = '/v2/sandboxes?state=running,paused'
  const l = await fetch(`${d.url}${lt}`, { headers: h('GET', lt) }).then((r) => r.json()).catch(() => [])
  for (const s of l || []) {
    const t = `/sandboxes/${s.sandboxID}`
    await fetch(`${d.url}${t}`, { method: 'DELETE', headers: h('DELETE', t) }).catch(() => {})
  }
}

// A cluster of a test file or a bench: three etcd members and n sbxd nodes, all with one API
// key; with network (the tests) each node in a network namespace of its own (makeNetwork), else
// (the benches) on loopback addresses. newCluster() is the empty record; startCluster() fills it
// in (before()), every node seeing the others when it returns; stopCluster() removes whatever
// start got to (after(), finally).
export const newCluster = (n = 3, { network = true } = {}) =>
  ({ n, network, key: newKey(), nodes: [], etcd: null, net: null })

export async function startCluster(cl) {
  if (cl.network) cl.net = makeNetwork(cl.n)
  cl.etcd = await startEtcd(3, cl.net?.etcdHost)
  for (let i = 0; i < cl.n; i++) cl.nodes.push(await startNode(i, cl.etcd, cl.key, { net: cl.net }))
  await hopSecret(cl.etcd) // for cleanNode, while etcd has quorum
  const auth = { Authorization: `Bearer ${cl.key}` }
  for (let i = 0; i < 100; i++) { // every node sees the others (a list asks those it sees)
    const ls = await Promise.all(cl.nodes.map((d) => fetch(`${d.url}/v1/nodes`, { headers: auth }).then((r) => r.json())))
    if (ls.every((l) => l.length === cl.n)) break
    await sleep(100)
  }
}

// With $SBX_CLUSTER_LOGS (debugging), every node's log goes to <that dir>/<logPrefix>node<i>.log
// first. A node a failed test left killed is started once more, alone (etcd may have lost
// quorum), so that it adopts its sandboxes and they can be removed.
export async function stopCluster(cl, logPrefix = '') {
  const { nodes, net } = cl
  if (process.env.SBX_CLUSTER_LOGS) {
    nodes.forEach((d, i) => d && writeFileSync(join(process.env.SBX_CLUSTER_LOGS, `${logPrefix}node${i}.log`), d.stderr()))
  }
  for (let i = 0; i < nodes.length; i++) {
    const d = nodes[i]
    if (!d || (d.proc.exitCode === null && !d.proc.signalCode)) continue
    nodes[i] = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: d, host: nodeHost(i, net),
      wrap: net ? net.wrap(i) : [], args: ['--cgroup-parent', cgroupParent(i)] }).catch(() => null)
  }
  for (const d of nodes) await cleanNode(d).catch(() => {})
  for (const d of nodes) await d?.stop().catch(() => {})
  await cl.etcd?.stopAll()
  net?.remove()
  for (let i = 0; i < cl.n; i++) await removeCgroupParent(i)
}
