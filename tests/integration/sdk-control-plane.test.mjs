// The unmodified e2b SDK (tests/node_modules, installed by `npm ci` in tests/) against sbxd's
// control plane and router, with the fake jailer so no real sandbox is needed. Skipped when
// the SDK is not installed.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { startSbxd, fakeTemplate, FIXTURES, TOP } from './sbxd.mjs'

const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')
const skip = existsSync(SDK) ? false : 'e2b SDK not installed (npm ci in tests/)'
let d
let e2b
const opts = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key })

before(async () => {
  if (skip) return
  d = await startSbxd({ jailer: join(FIXTURES, 'fake-jailer.py'), agent: '/bin/true', prepare: (s) => fakeTemplate(s) })
  e2b = await import(SDK)
})
after(async () => {
  await d?.stop()
})

test('create, getInfo, isRunning, setTimeout, list, connect, kill', { skip }, async () => {
  const { Sandbox } = e2b
  const sbx = await Sandbox.create({ ...opts(), metadata: { suite: 'sdk' } })
  assert.match(sbx.sandboxId, /^[a-z0-9]{20}$/)
  const info = await sbx.getInfo()
  assert.equal(info.templateId, 'base')
  assert.equal(info.state, 'running')
  assert.deepEqual(info.metadata, { suite: 'sdk' })
  assert.ok(info.endAt > info.startedAt)
  assert.equal(await sbx.isRunning(), true) // GET /health through the router
  await sbx.setTimeout(60_000)
  const left = (await sbx.getInfo()).endAt - Date.now()
  assert.ok(left > 55_000 && left <= 61_000, `left ${left}`)
  const pager = Sandbox.list({ ...opts(), query: { metadata: { suite: 'sdk' } } })
  const items = await pager.nextItems()
  assert.deepEqual(items.map((s) => s.sandboxId), [sbx.sandboxId])
  assert.equal(pager.hasNext, false)
  const again = await Sandbox.connect(sbx.sandboxId, opts())
  assert.equal(again.sandboxId, sbx.sandboxId)
  assert.equal(await sbx.kill(), true)
  assert.equal(await Sandbox.kill(sbx.sandboxId, opts()), false)
  assert.equal(await sbx.isRunning(), false) // 502 from the router
})

test('errors map to the SDK exceptions', { skip }, async () => {
  const { Sandbox, SandboxNotFoundError, SandboxError, AuthenticationError } = e2b
  await assert.rejects(Sandbox.connect('nosuchsandbox00000000', opts()), SandboxNotFoundError)
  await assert.rejects(Sandbox.getInfo('nosuchsandbox00000000', opts()), SandboxNotFoundError)
  await assert.rejects(Sandbox.create('nosuch', opts()), (e) => {
    assert.ok(e instanceof SandboxError)
    assert.match(e.message, /404: template 'nosuch' not found/)
    return true
  })
  await assert.rejects(Sandbox.list({ ...opts(), apiKey: 'e2b_' + '0'.repeat(40) }).nextItems(),
    AuthenticationError)
})
