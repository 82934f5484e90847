// Cluster mode on one machine: a three-member etcd cluster and three sbxd nodes, each in a
// network namespace of its own joined by a bridge and veths (cluster-lib.mjs makeNetwork), each
// with its own state dir, all driven through the unmodified e2b SDK against node 0. Skipped
// only when etcd is not installed (scripts/install-deps.sh installs it). Bounded: every test
// has a timeout; after() removes every sandbox, process, namespace, bridge, dir and cgroup.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { request } from 'node:http'
import { launch, newPage, signIn } from '../console/browser.mjs'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import WebSocket from 'ws'
import { sleep } from './sbxd.mjs'
import { websocket, SERVER } from '../compat/ports-lib.mjs'
import { startNode, owners, hopSecret, hopValue, newCluster, startCluster, stopCluster, clusterSkip, importSdk, SBX } from './cluster-lib.mjs'

const skip = clusterSkip

const cl = newCluster()
const { nodes, key } = cl
let etcd, net
let e2b
const opts = () => ({ apiUrl: nodes[0].url, sandboxUrl: nodes[0].url, apiKey: key })

before(async () => {
  if (skip) return
  e2b = await importSdk({ cli: true })
  await startCluster(cl)
  etcd = cl.etcd
  net = cl.net
})

after(() => stopCluster(cl))

const nodeOf = async (id) => (await owners(etcd))[id]

async function create(n) {
  const { Sandbox } = e2b
  const out = []
  for (let i = 0; i < n; i++) out.push(await Sandbox.create('base', { ...opts(), timeoutMs: 300_000, metadata: { suite: 'cluster' } }))
  return out
}

// A GET through node 0 routed by Host (<port>-<id>.<domain>): { status, body }.
function hostGet(id, port, path) {
  return new Promise((res, rej) => {
    const u = new URL(nodes[0].url)
    const r = request({ host: u.hostname, port: u.port, path, headers: { Host: `${port}-${id}.sbx.test` } }, (resp) => {
      let body = ''
      resp.on('data', (d) => { body += d })
      resp.on('end', () => res({ status: resp.statusCode, body }))
    })
    r.on('error', rej)
    r.end()
  })
}
const hostHealth = async (id) => (await hostGet(id, 49983, '/health')).status

let boxes = []

test('creates through one node spread over all three; the map is in etcd before the answer', { skip, timeout: 120_000 }, async () => {
  boxes = await create(9)
  const map = await owners(etcd)
  for (const b of boxes) assert.ok(map[b.sandboxId], `no mapping for ${b.sandboxId}`)
  const used = new Set(boxes.map((b) => map[b.sandboxId]))
  assert.deepEqual([...used].sort(), ['n0', 'n1', 'n2'])
  // a template no node has: E2B's 404, as on a single node
  const r = await fetch(`${nodes[0].url}/v2/sandboxes`, { method: 'POST', headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'no-such-template' }) })
  assert.equal(r.status, 404, await r.text())
})

test('commands, files, PTY and Host routing on sandboxes owned by other nodes', { skip, timeout: 60_000 }, async () => {
  const map = await owners(etcd)
  for (const node of ['n1', 'n2']) {
    const sbx = boxes.find((b) => map[b.sandboxId] === node)
    const r = await sbx.commands.run(`echo hi-from-${node}; echo err >&2`)
    assert.equal(r.stdout, `hi-from-${node}\n`)
    assert.equal(r.stderr, 'err\n')
    // a streamed upload and download of 3 MiB, both ways through the forwarder
    const big = 'x'.repeat(3 * 1024 * 1024)
    await sbx.files.write('/home/user/big.txt', big)
    assert.equal((await sbx.files.read('/home/user/big.txt')).length, big.length)
    assert.equal((await sbx.commands.run('wc -c < /home/user/big.txt')).stdout.trim(), String(big.length))
    let out = ''
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d) } })
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo pty-$((6*7))\n'))
    for (let i = 0; i < 50 && !out.includes('pty-42'); i++) await sleep(100)
    assert.ok(out.includes('pty-42'), out)
    await sbx.pty.kill(h.pid)
    assert.match(sbx.getHost(8080), new RegExp(`^8080-${sbx.sandboxId}\\.`))
    assert.equal(await hostHealth(sbx.sandboxId), 204)
    // the control plane too: getInfo and setTimeout answered by the owner
    assert.equal((await sbx.getInfo()).sandboxId, sbx.sandboxId)
    await sbx.setTimeout(200_000)
  }
})

const portHost = (id, port) => `${port}-${id}.sbx.test`

// The port server of ports-lib.mjs (/stream, /release, a WebSocket echo) on port 8080 of sbx,
// answering through node 0 (started once).
async function startPortServer(sbx) {
  if ((await hostGet(sbx.sandboxId, 8080, '/host').catch(() => null))?.status === 200) return
  await sbx.files.write('/tmp/srv.js', SERVER)
  await sbx.commands.run('node /tmp/srv.js 8080', { background: true })
  for (let i = 0; i < 100; i++) {
    const r = await hostGet(sbx.sandboxId, 8080, '/host').catch(() => null)
    if (r?.status === 200) return
    await sleep(100)
  }
  throw new Error('the port server did not come up')
}

test('WebSockets through node 0 to another node\'s sandbox: the native terminal and a sandbox port', { skip, timeout: 60_000 }, async () => {
  const map = await owners(etcd)
  const sbx = boxes.find((b) => map[b.sandboxId] === 'n1')
  const id = sbx.sandboxId
  // the native terminal (/v1/sandboxes/<id>/terminal)
  const ws = new WebSocket(`${nodes[0].url.replace(/^http/, 'ws')}/v1/sandboxes/${id}/terminal`, { headers: { Authorization: `Bearer ${key}` } })
  let out = ''
  ws.on('message', (d, bin) => { if (bin) out += d.toString() })
  const closed = new Promise((r) => ws.on('close', r))
  await new Promise((res, rej) => { ws.on('open', res); ws.on('error', rej); ws.on('unexpected-response', (q, r) => rej(new Error(`http ${r.statusCode}`))) })
  ws.send('echo $$ > /tmp/term.pid; echo term-$((6*7))\n')
  for (let i = 0; i < 100 && !out.includes('term-42'); i++) await sleep(100)
  assert.ok(out.includes('term-42'), out)
  // closing the socket on node 0 ends the shell on node 1: the owner saw the hang-up
  ws.close()
  await closed
  let alive = true
  for (let i = 0; i < 50 && alive; i++) {
    alive = (await sbx.commands.run('kill -0 $(cat /tmp/term.pid) 2>/dev/null && echo alive || echo gone')).stdout.trim() === 'alive'
    if (alive) await sleep(100)
  }
  assert.equal(alive, false, 'the terminal\'s shell outlived its closed WebSocket')
  // a WebSocket to port 8080 in the sandbox, by Host
  await startPortServer(sbx)
  const p = await websocket(`${nodes[0].url}/ws`, { headers: { Host: portHost(id, 8080) } })
  assert.equal(p.res.statusCode, 101)
  p.send(1, 'hello')
  assert.equal((await p.next()).payload.toString(), 'hello')
  const big = Buffer.alloc(200 * 1024, 7)
  p.send(2, big)
  assert.ok((await p.next()).payload.equals(big))
  await p.close()
  // a chunked request body (no length) of 1.5 MiB in pieces, relayed as it comes
  const echo = await new Promise((res, rej) => {
    const u = new URL(nodes[0].url)
    const r = request({ host: u.hostname, port: u.port, path: '/echo', method: 'POST', headers: { Host: portHost(id, 8080) } }, (resp) => {
      let b = ''
      resp.on('data', (d) => { b += d })
      resp.on('end', () => res(JSON.parse(b)))
    })
    r.on('error', rej)
    const piece = Buffer.alloc(512 * 1024, 'z')
    let n = 0
    const more = () => { if (n++ < 3) r.write(piece, () => setTimeout(more, 20)); else r.end() }
    more()
  })
  const sha = createHash('sha256').update(Buffer.alloc(1536 * 1024, 'z')).digest('hex')
  assert.deepEqual([echo.n, echo.sha], [1536 * 1024, sha])
})

test('a client hanging up mid-answer through node 0: the owner sees it at once', { skip, timeout: 30_000 }, async () => {
  const map = await owners(etcd)
  const sbx = boxes.find((b) => map[b.sandboxId] === 'n1')
  const owner = nodes[1]
  const logs = () => owner.stdout() + owner.stderr()
  await startPortServer(sbx)
  const before = (logs().match(/GET \/stream .*\(aborted\)/g) || []).length
  // /stream sends its first piece, then nothing until /release: the owner is silent
  await new Promise((res, rej) => {
    const u = new URL(nodes[0].url)
    const r = request({ host: u.hostname, port: u.port, path: '/stream', headers: { Host: portHost(sbx.sandboxId, 8080) } }, (resp) => {
      resp.once('data', (d) => { r.destroy(); d.toString() === 'part0\n' ? res() : rej(new Error(`${resp.statusCode} ${d}`)) })
    })
    r.on('error', (e) => { if (e.code !== 'ECONNRESET') rej(e) })
    r.end()
  })
  let seen = false
  for (let i = 0; i < 50 && !seen; i++) {
    seen = (logs().match(/GET \/stream .*\(aborted\)/g) || []).length > before
    if (!seen) await sleep(100)
  }
  assert.ok(seen, 'the owner still serves the stream the client left')
  await hostGet(sbx.sandboxId, 8080, '/release')
})

test('list across nodes, paged with a stable cursor', { skip, timeout: 30_000 }, async () => {
  const { Sandbox } = e2b
  const all = await Sandbox.list({ ...opts(), query: { metadata: { suite: 'cluster' } } }).nextItems()
  assert.deepEqual(all.map((s) => s.sandboxId).sort(), boxes.map((b) => b.sandboxId).sort())
  const pager = Sandbox.list({ ...opts(), limit: 4, query: { metadata: { suite: 'cluster' } } })
  const seen = []
  while (pager.hasNext) seen.push(...(await pager.nextItems()).map((s) => s.sandboxId))
  assert.deepEqual(seen, all.map((s) => s.sandboxId), 'pages in the same order, none twice')
  // every node answers the same list
  const other = await fetch(`${nodes[2].url}/v2/sandboxes?metadata=suite%3Dcluster`, { headers: { 'X-API-KEY': key } }).then((r) => r.json())
  assert.deepEqual(other.map((s) => s.sandboxID), seen)
  // each item names its node (the web console's node column), the one etcd maps it to
  const map = await owners(etcd)
  for (const s of other) assert.equal(s.node, map[s.sandboxID], s.sandboxID)
  const native = await fetch(`${nodes[1].url}/v1/sandboxes`, { headers: { Authorization: `Bearer ${key}` } }).then((r) => r.json())
  for (const s of native.sandboxes.filter((x) => map[x.id])) assert.equal(s.node, map[s.id], s.id)
})

test('the web console through node 0: every node\'s sandboxes with their node, a terminal on another node\'s', { skip, timeout: 60_000 }, async () => {
  const map = await owners(etcd)
  const far = boxes.find((b) => map[b.sandboxId] === 'n2')
  const browser = await launch()
  try {
    const page = await newPage(browser)
    await signIn(page, nodes[0].url, key)
    const row = page.locator(`tr[data-id="${far.sandboxId}"]`)
    await row.waitFor()
    assert.ok((await page.locator('thead th').allTextContents()).includes('Node'))
    assert.equal(await row.locator('td').nth(9).textContent(), 'n2')
    await row.locator('a').click()
    await page.click('[role=tab]:text-is("Terminal")')
    await page.waitForSelector('.term-status:text-is("Connected.")')
    await page.click('.term-wrap')
    await page.keyboard.type('echo node-$((6*7))\n')
    await page.waitForFunction(() => /^node-42\s*$/m.test([...document.querySelectorAll('.xterm-accessibility-tree > *')].map((r) => r.textContent).join('\n')))
    assert.deepEqual(page.problems, [])
  } finally {
    await browser.close()
  }
})

test('X-Total-Running is the sum over the nodes', { skip, timeout: 30_000 }, async () => {
  const h = { 'X-API-KEY': key }
  const all = await fetch(`${nodes[1].url}/v2/sandboxes?state=running`, { headers: h }).then((r) => r.json())
  assert.ok(all.length > 2)
  const r = await fetch(`${nodes[1].url}/v2/sandboxes?state=running&limit=2`, { headers: h })
  assert.equal((await r.json()).length, 2)
  assert.equal(r.headers.get('x-total-running'), String(all.length))
  // each node's own count (asked alone, under a signed hop header) adds up to it
  let sum = 0
  const secret = await hopSecret(etcd)
  for (const d of nodes) {
    const t = '/v2/sandboxes?state=running&limit=1'
    const own = await fetch(`${d.url}${t}`, { headers: { ...h, 'Sbx-Cluster-Hop': hopValue(secret, 'GET', t) } })
    assert.equal(own.status, 200)
    sum += Number(own.headers.get('x-total-running'))
  }
  assert.equal(sum, all.length)
  // paused ones only: no running asked for, no header (as on one node)
  const p = await fetch(`${nodes[0].url}/v2/sandboxes?state=paused`, { headers: h })
  assert.equal(p.headers.get('x-total-running'), null)
})

test('Sbx-Cluster-Hop from a client: unsigned, forged or expired is refused 401', { skip, timeout: 30_000 }, async () => {
  const map = await owners(etcd)
  const remote = boxes.find((b) => map[b.sandboxId] === 'n1')
  const secret = await hopSecret(etcd)
  const now = Math.floor(Date.now() / 1000)
  const t = '/v2/sandboxes'
  const bad = {
    unsigned: '1',
    forged: hopValue('f'.repeat(64), 'GET', t),
    expired: hopValue(secret, 'GET', t, now - 120),
    'other target': hopValue(secret, 'GET', '/sandboxes'),
  }
  for (const [what, v] of Object.entries(bad)) {
    const r = await fetch(`${nodes[0].url}${t}`, { headers: { 'X-API-KEY': key, 'Sbx-Cluster-Hop': v } })
    assert.equal(r.status, 401, what)
    assert.match((await r.json()).message, /Sbx-Cluster-Hop is for sbxd nodes/, what)
  }
  // on envd traffic for another node's sandbox too (it would have been answered locally: 404)
  const e = await fetch(`${nodes[0].url}/health`, { headers: { 'E2b-Sandbox-Id': remote.sandboxId, 'E2b-Sandbox-Port': '49983', 'Sbx-Cluster-Hop': '1' } })
  assert.equal(e.status, 401)
  // the native API answers in its own shape
  const n = await fetch(`${nodes[0].url}/v1/sandboxes`, { headers: { Authorization: `Bearer ${key}`, 'Sbx-Cluster-Hop': '1' } })
  assert.equal(n.status, 401)
  assert.match((await n.json()).error.message, /Sbx-Cluster-Hop/)
  // signed by the cluster's secret: answered by that node alone (its own sandboxes only)
  const own = await fetch(`${nodes[0].url}${t}`, { headers: { 'X-API-KEY': key, 'Sbx-Cluster-Hop': hopValue(secret, 'GET', t) } }).then((r) => r.json())
  const mine = Object.entries(map).filter(([, n]) => n === 'n0').map(([id]) => id).sort()
  assert.deepEqual(own.map((x) => x.sandboxID).sort(), mine)
  // and the node-only calls are refused to clients, whatever key they hold
  for (const path of ['/v1/cluster/files-owner?path=/x&signature=v1_x', '/v1/cluster/layers/' + '0'.repeat(64)]) {
    const q = await fetch(`${nodes[0].url}${path}`, { headers: { Authorization: `Bearer ${key}` } })
    assert.equal(q.status, 403, path)
    assert.match((await q.json()).error.message, /between cluster nodes/)
  }
})

test('native POST /v1/sandboxes is placed over the nodes, answered in the native shape', { skip, timeout: 120_000 }, async () => {
  const auth = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }
  const ids = []
  try {
    for (let i = 0; i < 6; i++) {
      const r = await fetch(`${nodes[0].url}/v1/sandboxes`, { method: 'POST', headers: auth, body: JSON.stringify({ template: 'base', timeout: 120, metadata: { suite: 'native' } }) })
      const j = await r.json()
      assert.equal(r.status, 201, JSON.stringify(j))
      assert.equal(j.template, 'base')
      assert.equal(j.state, 'running')
      assert.match(j.id, /^[a-z0-9]{20}$/)
      ids.push(j.id)
    }
    const map = await owners(etcd)
    const used = new Set(ids.map((id) => map[id]))
    assert.ok(used.size >= 2, `all on ${[...used]}`)
    // the native list, asked of any node, has every node's
    for (const d of [nodes[0], nodes[2]]) {
      const l = await fetch(`${d.url}/v1/sandboxes`, { headers: auth }).then((r) => r.json())
      const listed = new Set(l.sandboxes.map((s) => s.id))
      for (const id of ids) assert.ok(listed.has(id), `${id} (on ${map[id]}) not listed by ${d.url}`)
    }
    for (const id of ids) {
      const g = await fetch(`${nodes[0].url}/v1/sandboxes/${id}`, { headers: auth })
      assert.equal(g.status, 200)
      assert.equal((await g.json()).id, id)
    }
    // a template no node has: the native 404, as on one node
    const r = await fetch(`${nodes[0].url}/v1/sandboxes`, { method: 'POST', headers: auth, body: JSON.stringify({ template: 'no-such-template' }) })
    assert.equal(r.status, 404)
    assert.ok((await r.json()).error.message)
  } finally {
    for (const id of ids) await fetch(`${nodes[0].url}/v1/sandboxes/${id}`, { method: 'DELETE', headers: auth })
  }
})

test('a signed files URL (secure sandbox, no sandbox headers) for another node works through node 0', { skip, timeout: 120_000 }, async () => {
  const { Sandbox } = e2b
  const made = []
  let sbx
  try {
    for (let i = 0; i < 8 && !sbx; i++) {
      const s = await Sandbox.create('base', { ...opts(), secure: true, timeoutMs: 120_000 })
      made.push(s)
      if ((await nodeOf(s.sandboxId)) !== 'n0') sbx = s
    }
    assert.ok(sbx, 'no secure sandbox landed on another node')
    await sbx.files.write('/home/user/signed.txt', 'signed-content')
    const down = await sbx.downloadUrl('/home/user/signed.txt')
    assert.ok(down.startsWith(`${nodes[0].url}/files?`), down)
    assert.match(down, /signature=/)
    const g = await fetch(down)
    assert.equal(g.status, 200)
    assert.equal(await g.text(), 'signed-content')
    // upload through the signed URL (multipart), read back through the SDK
    const up = await sbx.uploadUrl('/home/user/up.txt')
    const form = new FormData()
    form.append('file', new Blob(['uploaded-through-node-0']), 'up.txt')
    const p = await fetch(up, { method: 'POST', body: form })
    assert.equal(p.status, 200, await p.text())
    assert.equal(await sbx.files.read('/home/user/up.txt'), 'uploaded-through-node-0')
    // a wrong signature is still refused (no node signs it): envd's 401
    const w = await fetch(down.replace(/signature=[^&]+/, 'signature=v1_AAAA'))
    assert.equal(w.status, 401)
  } finally {
    for (const s of made) await s.kill().catch(() => {})
  }
})

test('an MCP session lives on its node and is reached through any node', { skip, timeout: 240_000 }, async () => {
  let n = 1
  async function rpc(node, sid, method, params) {
    const h = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }
    if (sid) h['Mcp-Session-Id'] = sid
    const res = await fetch(`${nodes[node].url}/mcp`, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: n++, method, params }) })
    const text = await res.text()
    return { status: res.status, sid: res.headers.get('mcp-session-id'), json: text ? JSON.parse(text) : undefined }
  }
  const out = (r) => r.json.result.content.filter((c) => c.type === 'text').map((c) => c.text).join('')
  const init = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }
  const before = new Set(Object.keys(await owners(etcd)))
  const sids = []
  try {
    // initialized through node 0: the session is n0's
    const i0 = await rpc(0, null, 'initialize', init)
    assert.equal(i0.status, 200)
    assert.match(i0.sid, /^n0-[0-9a-f]{32}$/)
    sids.push([0, i0.sid])
    // its calls through node 1, then node 2: one session, one kernel
    let r = await rpc(1, i0.sid, 'tools/call', { name: 'run_python', arguments: { code: 'x = 41\nprint("set")' } })
    assert.equal(r.status, 200, JSON.stringify(r.json))
    assert.equal(out(r), 'set\n')
    r = await rpc(2, i0.sid, 'tools/call', { name: 'run_python', arguments: { code: 'x + 1' } })
    assert.equal(out(r), '42\n')
    // a call answered as an event stream streams through the forwarder: progress first
    const t0 = Date.now()
    const res = await fetch(`${nodes[1].url}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': i0.sid },
      body: JSON.stringify({ jsonrpc: '2.0', id: n++, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time\ntime.sleep(4.5)\nprint(x)' }, _meta: { progressToken: 'p' } } }),
    })
    assert.match(res.headers.get('content-type'), /^text\/event-stream/)
    let body = ''
    let firstAt
    for await (const chunk of res.body) { firstAt ??= Date.now() - t0; body += new TextDecoder().decode(chunk) }
    assert.ok(firstAt < 4000, `first event after ${firstAt} ms: not streamed`)
    const events = body.split('\n\n').filter((e) => e.trim()).map((e) => JSON.parse(e.split('\n').find((l) => l.startsWith('data: ')).slice(6)))
    assert.ok(events.filter((e) => e.method === 'notifications/progress').length >= 2, body)
    assert.equal(events.at(-1).result.content[0].text, '41\n')
    const made = Object.entries(await owners(etcd)).filter(([id]) => !before.has(id))
    assert.deepEqual(made.map(([, node]) => node), ['n0'], 'the session\'s sandbox is on its node')
    // a session of node 2 used through node 0
    const i2 = await rpc(2, null, 'initialize', init)
    assert.match(i2.sid, /^n2-[0-9a-f]{32}$/)
    sids.push([2, i2.sid])
    r = await rpc(0, i2.sid, 'tools/call', { name: 'run_shell', arguments: { command: 'echo from-n2' } })
    assert.match(out(r), /from-n2/)
    // ended through node 1; then unknown everywhere
    const d = await fetch(`${nodes[1].url}/mcp`, { method: 'DELETE', headers: { Authorization: `Bearer ${key}`, 'Mcp-Session-Id': i0.sid } })
    assert.equal(d.status, 204)
    sids.shift()
    assert.equal((await rpc(2, i0.sid, 'ping', {})).status, 404)
    // a session of a node that is not there: MCP's 404, the client starts over
    const gone = await rpc(0, 'zz-' + '0'.repeat(32), 'ping', {})
    assert.equal(gone.status, 404)
    assert.match(gone.json.error.message, /node zz is not live/)
    // without a key, refused by the node that owns the session as by any
    const u = await fetch(`${nodes[1].url}/mcp`, { method: 'POST', headers: { 'Mcp-Session-Id': i2.sid, 'Content-Type': 'application/json' }, body: '{}' })
    assert.equal(u.status, 401)
  } finally {
    for (const [node, sid] of sids) await fetch(`${nodes[node].url}/mcp`, { method: 'DELETE', headers: { Authorization: `Bearer ${key}`, 'Mcp-Session-Id': sid } }).catch(() => {})
  }
})

test('kill -9 of a node: its sandboxes say node lost, the others are untouched; it comes back and re-adopts', { skip, timeout: 90_000 }, async () => {
  const map = await owners(etcd)
  const lostBox = boxes.find((b) => map[b.sandboxId] === 'n2')
  const liveBox = boxes.find((b) => map[b.sandboxId] === 'n1')
  const old = nodes[2]
  old.proc.kill('SIGKILL')
  await new Promise((r) => old.proc.exitCode !== null || old.proc.signalCode ? r() : old.proc.once('exit', r))
  const t0 = Date.now()
  let err
  for (let i = 0; i < 100; i++) {
    err = await lostBox.commands.run('true').then(() => null, (e) => e)
    if (err && /node lost/.test(err.message)) break
    await sleep(100)
  }
  assert.match(String(err?.message), /node lost/, 'a clear node-lost error, not a hang or a 404')
  assert.ok(Date.now() - t0 < 10_000, `node lost after ${Date.now() - t0} ms`)
  assert.equal((await liveBox.commands.run('echo alive')).stdout, 'alive\n')
  // back on the same state dir: adopted and registered again, traffic flows through node 0
  nodes[2] = await startNode(2, etcd, key, { reuse: old, net })
  let r
  for (let i = 0; i < 50; i++) {
    r = await lostBox.commands.run('echo back').catch((e) => e)
    if (r?.stdout === 'back\n') break
    await sleep(200)
  }
  assert.equal(r?.stdout, 'back\n', String(r?.message))
  assert.equal((await owners(etcd))[lostBox.sandboxId], 'n2')
})

test('drain: no new placements on the drained node', { skip, timeout: 60_000 }, async () => {
  const auth = { Authorization: `Bearer ${key}` }
  // the CLI against node 0: sbx node drain n1
  const env = { ...process.env, SBX_URL: nodes[0].url, SBX_API_KEY: key }
  assert.match(execFileSync(SBX, ['node', 'drain', 'n1'], { env, encoding: 'utf8' }), /n1 draining/)
  assert.match(execFileSync(SBX, ['node', 'ls'], { env, encoding: 'utf8' }), /n1 .* draining/)
  let l
  for (let i = 0; i < 30; i++) { // the other nodes see it at their next beat
    l = await fetch(`${nodes[2].url}/v1/nodes`, { headers: auth }).then((r) => r.json())
    if (l.find((n) => n.name === 'n1').draining) break
    await sleep(100)
  }
  assert.equal(l.find((n) => n.name === 'n1').draining, true)
  const more = await create(4)
  const map = await owners(etcd)
  for (const b of more) assert.notEqual(map[b.sandboxId], 'n1')
  boxes.push(...more)
  assert.match(execFileSync(SBX, ['node', 'undrain', 'n1'], { env, encoding: 'utf8' }), /n1 ready/)
  // the drained node's own sandboxes kept serving
  const onN1 = boxes.find((b) => map[b.sandboxId] === 'n1')
  assert.equal((await onN1.commands.run('echo still')).stdout, 'still\n')
})

test('one etcd member of three down changes nothing; quorum lost: traffic flows, creates refused', { skip, timeout: 90_000 }, async () => {
  await etcd.stop(2)
  const [b] = await create(1)
  boxes.push(b)
  assert.equal((await b.commands.run('echo ok')).stdout, 'ok\n')
  await etcd.stop(1)
  const map = await owners(etcd).catch(() => null)
  const remote = boxes.find((x) => map?.[x.sandboxId] === 'n1') || boxes[0]
  assert.equal((await remote.commands.run('echo no-quorum')).stdout, 'no-quorum\n')
  const { Sandbox } = e2b
  const t0 = Date.now()
  const e = await Sandbox.create('base', opts()).then((s) => { boxes.push(s); return null }, (x) => x)
  assert.ok(e, 'a create without quorum is refused')
  assert.match(e.message, /cluster store unavailable/)
  assert.ok(Date.now() - t0 < 20_000)
})
