// List with state/metadata filters and limit/nextToken pagination, getInfo sizes, getMetrics,
// the Prometheus endpoint: npm `e2b` 2.51.0 against sbxd.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { api, API_URL, API_KEY, waitFor } from '../lib/env.mjs'

const made = []
after(async () => { for (const s of made) await s.kill().catch(() => {}) })
const tag = 'run-' + Math.random().toString(16).slice(2, 10)

async function all(paginator) {
  const out = []
  while (paginator.hasNext) out.push(...await paginator.nextItems())
  return out
}

test('list: metadata and state filters, limit + nextToken pagination', async () => {
  for (let i = 0; i < 5; i++) made.push(await Sandbox.create({ metadata: { tag, i: String(i) } }))
  await made[0].pause()
  await made[1].pause()
  const mine = await all(Sandbox.list({ query: { metadata: { tag } } }))
  assert.equal(mine.length, 5)
  const paused = await all(Sandbox.list({ query: { metadata: { tag }, state: ['paused'] } }))
  assert.deepEqual(paused.map((s) => s.sandboxId).sort(), [made[0].sandboxId, made[1].sandboxId].sort())
  assert.ok(paused.every((s) => s.state === 'paused'))
  const running = await all(Sandbox.list({ query: { metadata: { tag }, state: ['running'] } }))
  assert.equal(running.length, 3)
  const one = await all(Sandbox.list({ query: { metadata: { tag, i: '3' } } }))
  assert.deepEqual(one.map((s) => s.sandboxId), [made[3].sandboxId])

  const p = Sandbox.list({ query: { metadata: { tag } }, limit: 2 })
  const pages = []
  while (p.hasNext) pages.push(await p.nextItems())
  assert.deepEqual(pages.map((x) => x.length), [2, 2, 1])
  const seen = new Set(pages.flat().map((s) => s.sandboxId))
  assert.equal(seen.size, 5)
  const q = `/v2/sandboxes?limit=2&metadata=${encodeURIComponent(`tag=${tag}`)}`
  const raw = await api('GET', q)
  const first = raw.json.map((s) => s.sandboxID)
  assert.equal(first.length, 2)
  // the token is a cursor: killing a listed sandbox does not make the next page skip one
  const token = raw.headers.get('x-next-token')
  assert.match(token, /^[A-Za-z0-9_-]+=*$/, 'base64url, as E2B mints it')
  const doomed = made.find((s) => s.sandboxId === first[0])
  await doomed.kill()
  made.splice(made.indexOf(doomed), 1)
  const next = await api('GET', `${q}&nextToken=${token}`)
  const rest = [...next.json.map((s) => s.sandboxID)]
  let tok = next.headers.get('x-next-token')
  while (tok) {
    const more = await api('GET', `${q}&nextToken=${tok}`)
    rest.push(...more.json.map((s) => s.sandboxID))
    tok = more.headers.get('x-next-token')
  }
  assert.equal(rest.length, 3, JSON.stringify(rest))
  assert.ok(rest.every((id) => !first.includes(id)))
  assert.equal((await api('GET', `/v2/sandboxes?nextToken=10`)).status, 400)
})

test('list: newest first by default; order, startedAfter and template; cursors survive kills and creates', async () => {
  const t = tag + '-order'
  const metadata = { tag: t }
  const mk = async (extra = {}) => {
    const s = await Sandbox.create({ metadata: { ...metadata, ...extra } })
    made.push(s)
    return s.sandboxId
  }
  const ids = (l) => l.map((s) => s.sandboxId)
  const list = (opts = {}) => all(Sandbox.list({ ...opts, query: { metadata, ...opts.query } }))
  const a = await mk({ note: 'a b&c=d%20+' })
  const between = new Date()
  const b = await mk()
  const c = await mk()
  assert.deepEqual(ids(await list()), [c, b, a], 'newest first')
  assert.deepEqual(ids(await list({ order: 'desc' })), [c, b, a])
  assert.deepEqual(ids(await list({ order: 'asc' })), [a, b, c])
  assert.deepEqual(ids(await list({ query: { startedAfter: between } })), [c, b])
  assert.deepEqual(ids(await list({ query: { startedAfter: between }, order: 'asc' })), [b, c])
  assert.deepEqual(ids(await list({ query: { startedAfter: new Date(Date.now() + 3600_000) } })), [])
  assert.deepEqual(ids(await list({ query: { template: 'base' } })), [c, b, a])
  assert.deepEqual(ids(await list({ query: { template: 'code-interpreter-v1' } })), [])
  assert.deepEqual(ids(await list({ query: { template: 'no-such-template' } })), [])
  // metadata values with '&', '=', '%' and '+' (the SDK encodes each pair, then the whole)
  assert.deepEqual(ids(await list({ query: { metadata: { tag: t, note: 'a b&c=d%20+' } } })), [a])
  assert.deepEqual(ids(await list({ query: { metadata: { tag: t, note: 'a b' } } })), [])

  // X-Total-Running: the running matches before the page is cut
  const q = `/v2/sandboxes?metadata=${encodeURIComponent(`tag=${t}`)}`
  const one = await api('GET', `${q}&limit=1`)
  assert.equal(one.headers.get('x-total-running'), '3')
  assert.equal((await api('GET', `${q}&state=paused`)).headers.get('x-total-running'), null)

  // desc, one per page: a kill and a newer create between pages neither skip nor repeat
  const pd = Sandbox.list({ query: { metadata }, limit: 1 })
  assert.deepEqual(ids(await pd.nextItems()), [c])
  await Sandbox.kill(b)
  const d = await mk()
  assert.deepEqual(ids(await all(pd)), [a])
  // asc, one per page: the newer create shows up at the end, once
  const pa = Sandbox.list({ query: { metadata }, limit: 1, order: 'asc' })
  assert.deepEqual(ids(await pa.nextItems()), [a])
  await Sandbox.kill(c)
  const e = await mk()
  assert.deepEqual(ids(await all(pa)), [d, e])

  // bad values are 400s in E2B's error shape
  const desc = (await api('GET', `${q}&limit=1`)).headers.get('x-next-token')
  for (const bad of ['order=sideways', 'startedAfter=yesterday', 'startedAfter=2024-13-01T00:00:00Z',
    'limit=0', 'limit=101', 'limit=x', 'nextToken=garbage', `nextToken=${desc}&order=asc`, 'state=dead',
    'template=base:v1', 'template=../x', 'metadata=novalue']) {
    const r = await api('GET', `/v2/sandboxes?${bad}`)
    assert.equal(r.status, 400, `${bad}: ${r.text}`)
    assert.equal(r.json.code, 400, bad)
    assert.equal(typeof r.json.message, 'string', bad)
  }
  // a startedAfter with an offset means the same instant
  const iso = between.toISOString().replace('Z', '+00:00')
  const off = await api('GET', `${q}&startedAfter=${encodeURIComponent(iso)}&order=asc`)
  assert.deepEqual(off.json.map((s) => s.sandboxID), [d, e])
})

test('getInfo reports cpu/memory/disk sizes; per-sandbox sizes from the request', async () => {
  const s = await Sandbox.create({ metadata: { tag } })
  made.push(s)
  const raw = await api('GET', `/sandboxes/${s.sandboxId}`)
  assert.equal(raw.json.cpuCount, 2)
  assert.equal(raw.json.memoryMB, 1024)
  assert.equal(raw.json.diskSizeMB, 1024)
  const r = await api('POST', '/v2/sandboxes', { body: { templateID: 'base', memoryMB: 256, diskSizeMB: 64, cpuCount: 1 } })
  assert.equal(r.status, 201, r.text)
  const d = await api('GET', `/sandboxes/${r.json.sandboxID}`)
  assert.deepEqual([d.json.cpuCount, d.json.memoryMB, d.json.diskSizeMB], [1, 256, 64])
  const mem = Number((await import('node:fs')).readFileSync(
    `/sys/fs/cgroup/memory/sbx/${r.json.sandboxID}/memory.limit_in_bytes`, 'utf8'))
  assert.equal(mem, 256 * 1024 * 1024)
  assert.equal((await api('DELETE', `/sandboxes/${r.json.sandboxID}`)).status, 204)
  const bad = await api('POST', '/v2/sandboxes', { body: { templateID: 'base', memoryMB: 1 } })
  assert.equal(bad.status, 400)
})

test('getMetrics: cgroup and disk accounting, sampled', async () => {
  const s = await Sandbox.create({ metadata: { tag } })
  made.push(s)
  await s.commands.run('dd if=/dev/zero of=/home/user/f bs=1M count=8 2>/dev/null')
  const m = await s.getMetrics()
  assert.ok(m.length >= 1)
  const last = m[m.length - 1]
  for (const k of ['cpuUsedPct', 'cpuCount', 'memUsed', 'memTotal', 'diskUsed', 'diskTotal']) assert.equal(typeof last[k], 'number', k)
  assert.ok(last.timestamp instanceof Date)
  assert.equal(last.memTotal, 1024 * 1024 * 1024)
  assert.ok(last.diskUsed >= 8 * 1024 * 1024, `diskUsed ${last.diskUsed}`)
  assert.ok(last.diskTotal >= last.diskUsed)
  const raw = await api('GET', `/sandboxes/${s.sandboxId}/metrics?start=1&end=2`)
  assert.equal(raw.status, 200)
  assert.deepEqual(raw.json, [], 'start/end filter')
  assert.equal((await api('GET', '/sandboxes/nosuchsandbox0/metrics')).status, 404)
})

test('Prometheus /metrics: sandboxes by state, creates, latency histogram (key required)', async () => {
  const noKey = await fetch(`${API_URL}/metrics`)
  assert.equal(noKey.status, 401)
  const res = await fetch(`${API_URL}/metrics`, { headers: { Authorization: `Bearer ${API_KEY}` } })
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const text = await res.text()
  for (const re of [/^sbx_sandboxes\{state="running"\} \d+$/m, /^sbx_sandboxes\{state="paused"\} \d+$/m,
    /^sbx_creates_total\{source="(pool|cold)"\} \d+$/m, /^sbx_create_duration_seconds_bucket\{le="0\.005"\} \d+$/m,
    /^sbx_create_duration_seconds_count \d+$/m, /^sbx_proxy_bytes_total\{direction="in"\} \d+$/m]) assert.match(text, re)
})
