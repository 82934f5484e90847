// GET /v1/templates: every template a sandbox can start from, whatever made it; a name it lists
// is one a create takes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { v1, assertError, createSandbox, killSandbox, URL_, KEY } from './v1-lib.mjs'

const e2b = (method, path, body) => fetch(URL_ + path, {
  method, headers: { 'X-API-KEY': KEY, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body)
}).then(async (r) => ({ status: r.status, json: await r.json().catch(() => undefined) }))

test('the built-in templates, then a snapshot, listed by name with their kind and sizes', async () => {
  assertError(await v1('GET', '/v1/templates', { key: null }), 401, 'unauthorized')
  let r = await v1('GET', '/v1/templates')
  assert.equal(r.status, 200, r.text)
  const names = r.json.templates.map((t) => t.name)
  assert.deepEqual(names, [...names].sort(), 'sorted by name')
  const base = r.json.templates.find((t) => t.name === 'base')
  assert.deepEqual({ kind: base.kind, cpu: base.cpuCount, mem: base.memoryMB, disk: base.diskSizeMB },
    { kind: 'builtin', cpu: 2, mem: 1024, disk: 1024 })
  assert.ok(base.layers >= 1)
  assert.ok(names.includes('code-interpreter-v1'))

  const id = await createSandbox()
  let snap
  try {
    const s = await e2b('POST', `/sandboxes/${id}/snapshots`, { name: 'console-list-snap' })
    assert.equal(s.status, 201)
    snap = s.json.snapshotID
  } finally {
    await killSandbox(id)
  }
  r = await v1('GET', '/v1/templates')
  const listed = r.json.templates.filter((t) => t.kind === 'snapshot').map((t) => t.name)
  assert.ok(listed.includes('console-list-snap'), JSON.stringify(listed))
  // a listed name starts a sandbox
  const again = await createSandbox({ template: 'console-list-snap' })
  await killSandbox(again)
  assert.equal((await e2b('DELETE', `/templates/${snap}`)).status, 204)
  r = await v1('GET', '/v1/templates')
  assert.ok(!r.json.templates.some((t) => t.name === 'console-list-snap' || t.name === snap))
})
