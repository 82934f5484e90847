// Escape battery group F (API and proxy) against a real sbxd and sandbox, with raw HTTP so the
// exact statuses and bodies are visible.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { api, sandboxFetch, envelope, parseEnvelopes } from '../lib/env.mjs'

let sbx, token

before(async () => {
  sbx = await Sandbox.create()
  const r = await api('GET', `/sandboxes/${sbx.sandboxId}`)
  token = r.json.envdAccessToken
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
})

const startBody = (cmd) => envelope({ process: { cmd: '/bin/sh', args: ['-c', cmd] } })
const startHeaders = (extra = {}) => ({
  'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1', ...extra,
})

test('F1: control plane rejects a missing or wrong API key with 401 JSON', async () => {
  for (const key of [null, '', 'e2b_' + '0'.repeat(40), 'not-a-key']) {
    const r = await api('GET', '/v2/sandboxes', { key })
    assert.equal(r.status, 401, `key ${key}`)
    assert.equal(r.json.code, 401)
    assert.equal(typeof r.json.message, 'string')
  }
  const c = await api('POST', '/sandboxes', { key: null, body: { templateID: 'base' } })
  assert.equal(c.status, 401)
})

test('F2: envd routes need the sandbox access token', async () => {
  assert.ok(token, 'create issued no envdAccessToken')
  for (const t of [undefined, 'wrong', token + 'x']) {
    const h = t === undefined ? {} : { 'X-Access-Token': t }
    const r = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Start', {
      method: 'POST', headers: startHeaders(h), body: startBody('echo no'),
    })
    assert.equal(r.status, 401, `token ${t}`)
    const body = await r.json()
    assert.equal(body.code, 401)
  }
  // Another sandbox's token does not open this one (F3, IDOR).
  const other = await Sandbox.create()
  try {
    const otherTok = (await api('GET', `/sandboxes/${other.sandboxId}`)).json.envdAccessToken
    const r = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Start', {
      method: 'POST', headers: startHeaders({ 'X-Access-Token': otherTok }), body: startBody('true'),
    })
    assert.equal(r.status, 401)
  } finally {
    await other.kill()
  }
  // /health is exempt.
  const h = await sandboxFetch(sbx.sandboxId, 49983, '/health')
  assert.equal(h.status, 204)
})

test('F4: malformed sandbox ports and ids are refused', async () => {
  for (const port of ['0', '65536', '-1', 'abc', '49983x', '']) {
    const r = await sandboxFetch(sbx.sandboxId, port, '/health')
    assert.ok([400, 404].includes(r.status), `port ${JSON.stringify(port)} → ${r.status}`)
  }
  // any other port is a user port (a server inside the sandbox): nothing listens on 22, and
  // nothing of the agent's answers there
  const u = await sandboxFetch(sbx.sandboxId, '22', '/health')
  assert.equal(u.status, 502)
  assert.deepEqual(await u.json(), { sandboxId: sbx.sandboxId, message: 'The sandbox is running but port is not open', port: 22, code: 502 })
  for (const id of ['../../etc', 'nosuchsandbox00000000', '']) {
    const r = await sandboxFetch(id, 49983, '/health', { headers: { 'X-Access-Token': token } })
    assert.ok(r.status >= 400, `id ${JSON.stringify(id)} → ${r.status}`)
    assert.notEqual(r.status, 204)
  }
})

test('F5: orchestrator-only routes are unreachable through the proxy', async () => {
  for (const path of ['/init', '/freeze', '/unfreeze', '/collapse', '/fsfreeze', '/fsthaw', '/upgrade']) {
    const r = await sandboxFetch(sbx.sandboxId, 49983, path, {
      method: 'POST', headers: { 'X-Access-Token': token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ envVars: { PWNED: '1' }, accessToken: 'mine', defaultUser: 'root' }),
    })
    assert.equal(r.status, 404, `${path} → ${r.status}`)
  }
  // The sandbox's defaults were not changed by the attempts above.
  const r = await sbx.commands.run('whoami; echo "[$PWNED]"')
  assert.equal(r.stdout, 'user\n[]\n')
})

test('Start stream framing: start first, data, end, then the end-of-stream frame', async () => {
  const r = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Start', {
    method: 'POST', headers: startHeaders({ 'X-Access-Token': token }),
    body: startBody('echo hi; exit 7'),
  })
  assert.equal(r.status, 200)
  assert.match(r.headers.get('content-type'), /^application\/connect\+json/)
  const frames = parseEnvelopes(Buffer.from(await r.arrayBuffer()))
  assert.ok(frames[0].msg.event.start.pid > 0)
  const last = frames.at(-1)
  assert.equal(last.flags, 2)
  assert.deepEqual(last.msg, {})
  const end = frames.at(-2).msg.event.end
  assert.equal(end.exitCode, 7)
  assert.equal(end.exited, true)
  assert.equal(end.status, 'exit status 7')
  const out = frames.filter((f) => f.msg.event?.data?.stdout)
    .map((f) => Buffer.from(f.msg.event.data.stdout, 'base64').toString()).join('')
  assert.equal(out, 'hi\n')
})

test('unknown user is unauthenticated', async () => {
  const basic = 'Basic ' + Buffer.from('mallory:').toString('base64')
  const r = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Start', {
    method: 'POST', headers: startHeaders({ 'X-Access-Token': token, Authorization: basic }),
    body: startBody('true'),
  })
  assert.equal(r.status, 200)
  const frames = parseEnvelopes(Buffer.from(await r.arrayBuffer()))
  assert.equal(frames.at(-1).flags, 2)
  assert.equal(frames.at(-1).msg.error.code, 'unauthenticated')
})

test('F12: LD_PRELOAD in envs affects only the sandboxed process, never the agent', async () => {
  const r = await sbx.commands.run('echo $LD_PRELOAD; true', { envs: { LD_PRELOAD: '/nonexistent.so' } })
  assert.match(r.stdout, /nonexistent/)
  const again = await sbx.commands.run('echo ok')
  assert.equal(again.stdout, 'ok\n')
})

test('F8/F10: oversized bodies and absurd timeouts are refused with JSON errors', async () => {
  for (const timeout of [-5, 9223372036854775807, 'abc']) { // 0 is "expire now"
    const r = await api('POST', `/sandboxes/${sbx.sandboxId}/timeout`, { body: { timeout } })
    assert.equal(r.status, 400, `timeout ${timeout} → ${r.status} ${r.text}`)
    assert.equal(r.json.code, 400)
  }
  const big = '{"templateID":"base","metadata":{"a":"' + 'x'.repeat(2 * 1024 * 1024) + '"}}'
  const r = await api('POST', '/sandboxes', { body: big })
  assert.equal(r.status, 413)
  const deep = '['.repeat(100000) + ']'.repeat(100000)
  const d = await api('POST', '/sandboxes', { body: deep })
  assert.equal(d.status, 400)
  const t = await api('POST', '/sandboxes', { body: { templateID: '../../etc' } })
  assert.ok([400, 404].includes(t.status))
})
