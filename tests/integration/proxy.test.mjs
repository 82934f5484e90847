// Sandbox lifecycle and the agent proxy, driven through a real sbxd whose jailer is
// fixtures/fake-jailer.py (no isolation; a Python agent speaking api/frames.md). Checks what
// sbxd itself does: create/kill/timeout bookkeeping, the /init call, token checks, query and
// header forwarding, streaming both ways, failed starts and cleanup.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startSbxd, fakeTemplate, FIXTURES, sleep } from './sbxd.mjs'

let d
let sbx

before(async () => {
  d = await startSbxd({
    jailer: join(FIXTURES, 'fake-jailer.py'), agent: '/bin/true', prepare: (s) => fakeTemplate(s),
  })
  const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', metadata: { who: 'proxy-test' }, envVars: { A: 'b' } } })
  assert.equal(r.status, 201, r.text)
  sbx = r.json
})
after(async () => {
  await d?.stop()
})

const envd = (path, init = {}, id = sbx.sandboxID, port = 49983) => fetch(d.url + path, {
  ...init, duplex: 'half',
  headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': String(port), ...(init.headers || {}) },
})
const tok = () => ({ 'X-Access-Token': sbx.envdAccessToken })
// A live (non-zombie) process; a pid that vanishes while being looked at is not alive.
const alive = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] !== 'Z'
  } catch {
    return false
  }
}

test('create answers 201 with the Sandbox shape', () => {
  assert.match(sbx.sandboxID, /^[a-z][a-z0-9]{19}$/)
  assert.equal(sbx.templateID, 'base')
  assert.equal(sbx.alias, 'base')
  assert.equal(sbx.clientID, 'sbx')
  assert.equal(sbx.envdVersion, '0.6.13')
  assert.match(sbx.envdAccessToken, /^[0-9a-f]{48}$/)
  assert.equal(sbx.trafficAccessToken, null)
  // sandbox.getHost(port) is <port>-<id>.<domain>: by default sbx.localhost with sbxd's port
  assert.equal(sbx.domain, `sbx.localhost:${d.port}`)
})

test('the sandbox dir holds sandbox.json and the agent got /init with the token', () => {
  const dir = join(d.state, 'sandboxes', sbx.sandboxID)
  const rec = JSON.parse(readFileSync(join(dir, 'sandbox.json'), 'utf8'))
  assert.equal(rec.sandboxID, sbx.sandboxID)
  assert.equal(rec.envdAccessToken, sbx.envdAccessToken)
  assert.ok(rec.pid > 1)
  assert.deepEqual(rec.envVars, { A: 'b' })
  const init = JSON.parse(readFileSync(join(dir, 'init.json'), 'utf8'))
  assert.deepEqual(init, { envVars: { A: 'b' }, defaultUser: 'user', defaultWorkdir: '/home/user', accessToken: sbx.envdAccessToken })
  const spec = JSON.parse(readFileSync(join(dir, 'spec.json'), 'utf8'))
  assert.equal(spec.id, sbx.sandboxID)
  assert.equal(spec.cgroup, `sbx/${sbx.sandboxID}`)
  assert.equal(spec.uid_count, 65536)
  assert.ok(spec.uid_base >= 1 << 20 && spec.uid_base % 65536 === 0)
  assert.equal(spec.memory_bytes, 256 * 1024 * 1024)
  assert.equal(spec.pids_max, 1024)
  assert.equal(spec.cpu_quota_us, 100000)
  assert.equal(spec.cpu_period_us, 100000)
  assert.equal(spec.disk_bytes, 128 * 1024 * 1024)
  assert.equal(spec.layers[0], join(d.state, 'templates/base/layer'))
  assert.equal(spec.rootfs, join(dir, 'rootfs'))
  assert.equal(spec.socket, join(dir, 'agent.sock'))
})

test('GET /sandboxes/{id} and the lists show it', async () => {
  const g = await d.api('GET', `/sandboxes/${sbx.sandboxID}`)
  assert.equal(g.status, 200)
  const j = g.json
  for (const k of ['sandboxID', 'templateID', 'clientID', 'alias', 'startedAt', 'endAt', 'cpuCount', 'memoryMB', 'diskSizeMB', 'state', 'envdVersion', 'metadata', 'envdAccessToken', 'domain', 'lifecycle']) {
    assert.ok(k in j, `missing ${k}`)
  }
  assert.equal(j.state, 'running')
  assert.deepEqual(j.lifecycle, { autoResume: false, onTimeout: 'kill' })
  assert.deepEqual(j.metadata, { who: 'proxy-test' })
  assert.equal(j.cpuCount, 1)
  assert.equal(j.memoryMB, 256)
  assert.match(j.startedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  const dt = (Date.parse(j.endAt) - Date.parse(j.startedAt)) / 1000
  assert.ok(dt >= 299 && dt <= 301, `endAt - startedAt = ${dt}`)
  for (const p of ['/v2/sandboxes', '/sandboxes', '/v2/sandboxes?metadata=' + encodeURIComponent('who=proxy-test')]) {
    const l = await d.api('GET', p)
    assert.equal(l.status, 200)
    assert.deepEqual(l.json.map((s) => s.sandboxID), [sbx.sandboxID], p)
    assert.equal(l.json[0].envdAccessToken, undefined)
  }
  const none = await d.api('GET', '/v2/sandboxes?metadata=' + encodeURIComponent('who=other'))
  assert.deepEqual(none.json, [])
  const paused = await d.api('GET', '/v2/sandboxes?state=paused')
  assert.deepEqual(paused.json, [])
})

test('timeout and connect move endAt', async () => {
  let r = await d.api('POST', `/sandboxes/${sbx.sandboxID}/timeout`, { body: { timeout: 1000 } })
  assert.equal(r.status, 204)
  let j = (await d.api('GET', `/sandboxes/${sbx.sandboxID}`)).json
  const left = (Date.parse(j.endAt) - Date.now()) / 1000
  assert.ok(left > 990 && left <= 1001, `left ${left}`)
  // connect never shortens
  r = await d.api('POST', `/v2/sandboxes/${sbx.sandboxID}/connect`, { body: {} })
  assert.equal(r.status, 200)
  assert.equal(r.json.sandboxID, sbx.sandboxID)
  assert.equal(r.json.envdAccessToken, sbx.envdAccessToken)
  j = (await d.api('GET', `/sandboxes/${sbx.sandboxID}`)).json
  assert.ok(Date.parse(j.endAt) - Date.now() > 990e3)
  r = await d.api('POST', `/sandboxes/${sbx.sandboxID}/connect`, { body: { timeout: 5000 } })
  assert.equal(r.status, 200)
  j = (await d.api('GET', `/sandboxes/${sbx.sandboxID}`)).json
  assert.ok(Date.parse(j.endAt) - Date.now() > 4990e3)
  r = await d.api('POST', `/sandboxes/${sbx.sandboxID}/timeout`, { body: { timeout: 300 } })
  assert.equal(r.status, 204)
})

test('envd token: 401 JSON without or with a wrong token, /health exempt', async () => {
  for (const h of [{}, { 'X-Access-Token': 'wrong' }, { 'X-Access-Token': sbx.envdAccessToken + 'x' }]) {
    const r = await envd('/echo', { headers: h })
    assert.equal(r.status, 401)
    assert.equal((await r.json()).code, 401)
    const f = await envd('/files?path=%2Fetc%2Fpasswd', { headers: h })
    assert.equal(f.status, 401)
  }
  const h = await envd('/health')
  assert.equal(h.status, 204)
  // The code interpreter: /execute needs the token (the SDKs send it there), the rest is open.
  const c = await envd('/contexts', {}, sbx.sandboxID, 49999)
  assert.equal(c.status, 200)
  assert.equal((await c.json()).port, 49999)
  for (const h of [{}, { 'X-Access-Token': 'wrong' }]) {
    const x = await envd('/execute', { method: 'POST', headers: h, body: '{"code":"1"}' }, sbx.sandboxID, 49999)
    assert.equal(x.status, 401)
  }
  const x = await envd('/execute', { method: 'POST', headers: tok(), body: '{"code":"1"}' }, sbx.sandboxID, 49999)
  assert.equal(x.status, 200)
})

test('orchestrator-only paths are 404 from outside', async () => {
  for (const p of ['/init', '//init', '/init/', '/freeze', '/upgrade']) {
    const r = await envd(p, { method: 'POST', headers: tok(), body: '{"accessToken":"mine"}' })
    assert.equal(r.status, 404, p)
  }
  const init = JSON.parse(readFileSync(join(d.state, 'sandboxes', sbx.sandboxID, 'init.json'), 'utf8'))
  assert.equal(init.accessToken, sbx.envdAccessToken)
})

test('method, path, raw query and headers reach the agent; hop-by-hop ones do not', async () => {
  const r = await envd('/files?path=%2Fhome%2Fuser%2Fa%20b.txt&username=user&x=%2B+y', {
    headers: { ...tok(), 'X-Custom': 'v1', Connection: 'keep-alive' },
  })
  assert.equal(r.status, 200)
  assert.equal(r.headers.get('x-fake'), '1')
  const j = await r.json()
  assert.equal(j.port, 49983)
  assert.equal(j.method, 'GET')
  assert.equal(j.path, '/files')
  assert.equal(j.query, 'path=%2Fhome%2Fuser%2Fa%20b.txt&username=user&x=%2B+y')
  const names = j.headers.map(([k]) => k.toLowerCase())
  assert.ok(names.includes('x-custom'))
  assert.ok(names.includes('x-access-token'))
  for (const h of ['connection', 'e2b-sandbox-id', 'e2b-sandbox-port', 'transfer-encoding']) assert.ok(!names.includes(h), h)
  const p = await envd('/a%2Fb/c%20d', { headers: tok() })
  assert.equal((await p.json()).path, '/a/b/c d')
})

test('uploads stream through: 50 MB chunked body arrives intact', async () => {
  const chunk = Buffer.alloc(1 << 20, 7)
  const h = createHash('sha256')
  let sent = 0
  const body = new ReadableStream({
    pull(c) {
      if (sent >= 50) return c.close()
      sent++
      h.update(chunk)
      c.enqueue(chunk)
    },
  })
  const r = await envd('/echo', { method: 'POST', headers: { ...tok(), 'Content-Type': 'application/octet-stream' }, body })
  assert.equal(r.status, 200)
  const j = await r.json()
  assert.equal(j.bodyLen, 50 << 20)
  assert.equal(j.sha256, h.digest('hex'))
})

test('the agent may answer before reading the body', async () => {
  const r = await envd('/early401', { method: 'POST', headers: tok(), body: Buffer.alloc(4 << 20) })
  assert.equal(r.status, 401)
  assert.equal((await r.json()).message, 'early')
})

test('responses stream: the first line arrives while the agent is still writing', async () => {
  const t0 = Date.now()
  const r = await envd('/stream?n=4&ms=400', { headers: tok() })
  assert.equal(r.status, 200)
  assert.equal(r.headers.get('transfer-encoding'), 'chunked')
  const reader = r.body.getReader()
  const first = await reader.read()
  const tFirst = Date.now() - t0
  assert.equal(Buffer.from(first.value).toString(), 'tick 0\n')
  let rest = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    rest += Buffer.from(value).toString()
  }
  const total = Date.now() - t0
  assert.equal(rest, 'tick 1\ntick 2\ntick 3\n')
  assert.ok(tFirst < 300, `first chunk after ${tFirst} ms`)
  assert.ok(total >= 1200, `whole stream in ${total} ms`)
})

test('a misbehaving agent gets a 502 or a cut response, never a forged one', async () => {
  for (const kind of ['status101', 'header-crlf', 'garbage', 'huge-frame']) {
    const r = await envd(`/hostile/${kind}`, { headers: tok() })
    assert.equal(r.status, 502, kind)
    assert.equal((await r.json()).code, 502)
  }
  for (const kind of ['too-long', 'short', 'eof-mid-body']) {
    const r = await envd(`/hostile/${kind}`, { headers: tok() })
    assert.equal(r.status, 200, kind)
    await assert.rejects(r.arrayBuffer(), kind) // the body ends with an error, not silently
  }
  assert.equal((await envd('/health')).status, 204)
})

test('sized responses keep their Content-Length', async () => {
  const r = await envd('/big?n=3000000', { headers: tok() })
  assert.equal(r.status, 200)
  assert.equal(r.headers.get('content-length'), '3000000')
  const b = Buffer.from(await r.arrayBuffer())
  assert.equal(b.length, 3000000)
})

test('a client that goes away mid-stream does not wedge sbxd', async () => {
  const ac = new AbortController()
  const r = await envd('/stream?n=50&ms=100', { headers: tok(), signal: ac.signal })
  const reader = r.body.getReader()
  await reader.read()
  ac.abort()
  await sleep(200)
  const h = await envd('/health')
  assert.equal(h.status, 204)
})

test('older SDKs: Host <port>-<id>.<domain> routing', async () => {
  const r = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: d.port, path: '/echo?q=1', headers: { Host: `49983-${sbx.sandboxID}.e2b.local`, ...tok() } }, (res) => {
      let b = ''
      res.on('data', (c) => { b += c })
      res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(b) }))
    }).on('error', reject)
  })
  assert.equal(r.status, 200)
  assert.equal(r.json.query, 'q=1')
})

test('a failed start is a 500 naming the step, and leaves nothing behind', async () => {
  const f = await startSbxd({
    jailer: join(FIXTURES, 'fake-jailer-fail.sh'), agent: '/bin/true', prepare: (s) => fakeTemplate(s),
  })
  try {
    const r = await f.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 60 } })
    assert.equal(r.status, 500, r.text)
    assert.equal(r.json.code, 500)
    assert.match(r.json.message, /^sandbox start failed at mount-overlay: /)
    assert.deepEqual(readdirSync(join(f.state, 'sandboxes')), [])
    assert.deepEqual((await f.api('GET', '/v2/sandboxes')).json, [])
  } finally {
    await f.stop()
  }
  const m = await startSbxd({ jailer: '/nonexistent/sbx-jailer', agent: '/bin/true', prepare: (s) => fakeTemplate(s) })
  try {
    const r = await m.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 60 } })
    assert.equal(r.status, 500)
    assert.match(r.json.message, /^sandbox start failed at spawn: /)
    assert.deepEqual(readdirSync(join(m.state, 'sandboxes')), [])
  } finally {
    await m.stop()
  }
})

test('timeouts kill: a 2 s sandbox disappears with its dir and agent', async () => {
  // 2 s, not 1: on a loaded machine the checks right after create must still see it alive.
  const r = await d.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 2 } })
  assert.equal(r.status, 201)
  const id = r.json.sandboxID
  const dir = join(d.state, 'sandboxes', id)
  const pid = JSON.parse(readFileSync(join(dir, 'sandbox.json'), 'utf8')).pid
  assert.ok(alive(pid))
  let gone = false
  for (let i = 0; i < 80 && !gone; i++) {
    await sleep(100)
    gone = (await d.api('GET', `/sandboxes/${id}`)).status === 404
  }
  assert.ok(gone, 'still listed after 8 s')
  // unlisted first, then torn down
  for (let i = 0; i < 50 && existsSync(dir); i++) await sleep(20)
  assert.ok(!existsSync(dir), 'dir left behind')
  await sleep(100)
  assert.ok(!alive(pid), 'agent still running')
  const e = await envd('/health', {}, id)
  assert.equal(e.status, 502)
})

test('kill: 204, then 404; the dir and the agent are gone; slots are reused', async () => {
  const a = await d.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 60 } })
  const id = a.json.sandboxID
  const uidA = JSON.parse(readFileSync(join(d.state, 'sandboxes', id, 'spec.json'), 'utf8')).uid_base
  const pid = JSON.parse(readFileSync(join(d.state, 'sandboxes', id, 'sandbox.json'), 'utf8')).pid
  assert.equal((await d.api('DELETE', `/sandboxes/${id}`)).status, 204)
  assert.equal((await d.api('DELETE', `/sandboxes/${id}`)).status, 404)
  assert.ok(!existsSync(join(d.state, 'sandboxes', id)))
  assert.ok(!alive(pid))
  const b = await d.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 60 } })
  const uidB = JSON.parse(readFileSync(join(d.state, 'sandboxes', b.json.sandboxID, 'spec.json'), 'utf8')).uid_base
  assert.equal(uidB, uidA)
  assert.equal((await d.api('DELETE', `/sandboxes/${b.json.sandboxID}`)).status, 204)
})

test('an agent that dies on its own takes its sandbox with it', async () => {
  const r = await d.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 600 } })
  const id = r.json.sandboxID
  const dir = join(d.state, 'sandboxes', id)
  const pid = JSON.parse(readFileSync(join(dir, 'sandbox.json'), 'utf8')).pid
  process.kill(pid, 'SIGKILL')
  let gone = false
  for (let i = 0; i < 50 && !gone; i++) {
    await sleep(100)
    gone = (await d.api('GET', `/sandboxes/${id}`)).status === 404 && !existsSync(dir)
  }
  assert.ok(gone, 'sandbox still listed or its dir still there')
})

test('a restarted sbxd adopts running sandboxes and clears dead ones; one sbxd per state dir', async () => {
  const tpl = (s) => fakeTemplate(s)
  const jailer = join(FIXTURES, 'fake-jailer.py')
  const a = await startSbxd({ jailer, agent: '/bin/true', prepare: tpl })
  let b
  try {
    const live = (await a.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 600, metadata: { k: 'v' } } })).json
    const dead = (await a.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 600 } })).json
    const deadPid = JSON.parse(readFileSync(join(a.state, 'sandboxes', dead.sandboxID, 'sandbox.json'), 'utf8')).pid
    await a.stop({ keep: true })
    process.kill(deadPid, 'SIGKILL')
    await sleep(100)
    b = await startSbxd({ jailer, agent: '/bin/true', reuse: a })
    const l = (await b.api('GET', '/v2/sandboxes')).json
    assert.deepEqual(l.map((s) => s.sandboxID), [live.sandboxID])
    assert.deepEqual(l[0].metadata, { k: 'v' })
    const g = (await b.api('GET', `/sandboxes/${live.sandboxID}`)).json
    assert.equal(g.envdAccessToken, live.envdAccessToken)
    assert.ok(!existsSync(join(b.state, 'sandboxes', dead.sandboxID)), 'dead sandbox dir left')
    const r = await fetch(b.url + '/echo', { headers: { 'E2b-Sandbox-Id': live.sandboxID, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': live.envdAccessToken } })
    assert.equal(r.status, 200)
    // a second sbxd on the same state dir refuses to start
    await assert.rejects(startSbxd({ jailer, agent: '/bin/true', reuse: b }), /in use by another sbxd/)
  } finally {
    await (b ?? a).stop()
  }
})

test('list pagination: limit and X-Next-Token', async () => {
  const ids = []
  for (let i = 0; i < 3; i++) ids.push((await d.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 60, metadata: { page: 'yes' } } })).json.sandboxID)
  try {
    const q = '/v2/sandboxes?limit=2&metadata=' + encodeURIComponent('page=yes')
    const p1 = await d.api('GET', q)
    assert.equal(p1.json.length, 2)
    const next = p1.headers.get('x-next-token')
    assert.ok(next)
    const p2 = await d.api('GET', q + '&nextToken=' + next)
    assert.equal(p2.json.length, 1)
    assert.ok(!p2.headers.get('x-next-token'))
    assert.deepEqual([...p1.json, ...p2.json].map((s) => s.sandboxID).sort(), [...ids].sort())
  } finally {
    for (const id of ids) await d.api('DELETE', `/sandboxes/${id}`)
  }
})
