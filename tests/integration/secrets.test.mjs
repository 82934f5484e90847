// Credentials the code never sees (docs/e2b-wire.md "Secrets", server/README.md
// "Credentials"): E2B's /secrets through the unmodified SDK, values never readable back; and
// network transform rules whose headers the egress proxy adds to a sandbox's HTTP(S) requests,
// seen by an outside server while nothing inside the sandbox holds the secret.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL, TOP } from './sbxd.mjs'
import { OUT, outsideUp, curlIn } from './egress-net.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false
const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')

let d, outside, e2b
const created = []
const opts = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key, timeoutMs: 120000 })
async function create(o = {}) {
  const s = await e2b.Sandbox.create('base', { ...opts(), ...o })
  created.push(s)
  return s
}
const api = (method, path, body) => fetch(`${d.url}${path}`, {
  method, headers: { 'X-API-KEY': d.key, 'Content-Type': 'application/json' },
  body: body === undefined ? undefined : JSON.stringify(body),
})

before(async () => {
  if (skip) return
  e2b = await import(SDK)
  outside = await outsideUp()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--egress-dns', OUT.dns] })
})

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
  await d?.stop()
  outside?.down()
})

const VALUE = 'sk-live-' + 'q7Zr2'.repeat(6)

test('secrets: create, get, list, update, delete; the value is never returned', { skip }, async () => {
  const S = e2b.Secret
  const a = await S.create('Api-Key', VALUE, { ...opts(), metadata: { team: 'x' } })
  assert.match(a.secretId, /^sec_[0-9a-f]{24}$/)
  assert.equal(a.name, 'api-key', 'names are lowercased')
  assert.equal(a.version, 1)
  assert.deepEqual(a.metadata, { team: 'x' })
  assert.ok(a.createdAt instanceof Date && !isNaN(a.createdAt))
  await assert.rejects(S.create('api-key', 'other', opts()), /already exists/)
  const byName = await S.getInfo('api-key', opts())
  const byId = await S.getInfo(a.secretId, opts())
  assert.equal(byName.secretId, a.secretId)
  assert.equal(byId.name, 'api-key')
  assert.equal(await S.exists('nope', opts()), false)

  const b = await S.create('second', 'v2', opts())
  const pager = S.list({ ...opts(), limit: 1 })
  const seen = []
  while (pager.hasNext) seen.push(...(await pager.nextItems()))
  assert.deepEqual(seen.map((s) => s.name), ['api-key', 'second'], 'oldest first, paged')

  const u = await S.update('api-key', VALUE + 'x', opts())
  assert.equal(u.version, 2)
  const u2 = await S.update(a.secretId, VALUE, opts())
  assert.equal(u2.version, 3)

  // no read surface carries a value, raw answers included
  for (const path of ['/secrets', `/secrets/${a.secretId}`, '/secrets/api-key']) {
    const text = await (await api('GET', path)).text()
    assert.ok(!text.includes(VALUE) && !text.includes('"value"'), text)
  }
  // bad input: 400 in E2B's shape
  for (const body of [{ name: 'a{b}', value: 'x' }, { name: 'sec_x', value: 'x' },
    { name: 'ok', value: '' }, { name: 'ok', value: 'a\nb' }, { name: 'ok' },
    { name: 'x'.repeat(64), value: 'x' }, { name: 'ok', value: 'x', metadata: { k: 1 } }]) {
    const r = await api('POST', '/secrets', body)
    assert.equal(r.status, 400, JSON.stringify(body))
    assert.equal((await r.json()).code, 400)
  }
  assert.equal((await api('GET', '/secrets?limit=0')).status, 400)
  assert.equal((await api('POST', '/secrets/nope', { value: 'x' })).status, 404)

  // on disk: owner-only files in an owner-only dir
  const dir = join(d.state, 'secrets')
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  for (const f of readdirSync(dir)) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f)

  assert.equal(await S.destroy(b.secretId, opts()), true)
  assert.equal(await S.destroy(b.secretId, opts()), false)
  assert.equal(await S.exists('second', opts()), false)
})
