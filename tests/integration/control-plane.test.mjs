// Control-plane error paths of a real sbxd (no sandbox needed): auth, not-found, validation,
// body bounds, routing refusals. Run: node --test tests/integration/
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { startSbxd } from './sbxd.mjs'

let d

before(async () => {
  d = await startSbxd()
})
after(async () => {
  await d?.stop()
})

const isJsonError = (r, code) => {
  assert.equal(r.status, code, r.text)
  assert.match(r.headers.get('content-type'), /^application\/json/)
  assert.equal(r.json.code, code)
  assert.equal(typeof r.json.message, 'string')
}

// Raw HTTP/1.1 for what fetch will not send (explicit chunking, odd headers).
function raw(port, { method = 'POST', path, headers = {}, chunks = [] }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let b = ''
      res.on('data', (c) => { b += c })
      res.on('end', () => {
        let json
        try { json = JSON.parse(b) } catch {}
        resolve({ status: res.statusCode, headers: res.headers, text: b, json })
      })
    })
    req.on('error', reject)
    for (const c of chunks) req.write(c)
    req.end()
  })
}

test('prints the four export lines and keeps the key in <state>/keys (0600)', async () => {
  const lines = d.stdout().trim().split('\n')
  assert.deepEqual(lines, [
    `export E2B_API_URL=${d.url}`, `export E2B_SANDBOX_URL=${d.url}`,
    `export E2B_VOLUME_API_URL=${d.url}`, `export E2B_API_KEY=${d.key}`,
  ])
  assert.match(d.key, /^e2b_[0-9a-f]{40}$/)
  const { statSync } = await import('node:fs')
  assert.equal(statSync(`${d.state}/keys`).mode & 0o777, 0o600)
  assert.equal(statSync(d.state).mode & 0o777, 0o700)
})

test('401 JSON without a key, with a wrong key, with a malformed key', async () => {
  for (const key of [null, '', 'e2b_' + '0'.repeat(40), 'nope', d.key + 'x', d.key.slice(0, -1)]) {
    isJsonError(await d.api('GET', '/v2/sandboxes', { key }), 401)
  }
  isJsonError(await d.api('POST', '/sandboxes', { key: null, body: { templateID: 'base' } }), 401)
  isJsonError(await d.api('DELETE', '/sandboxes/abc', { key: 'wrong' }), 401)
})

test('refusals decided before the body still reach a client that is sending one', async () => {
  const body = Buffer.alloc(4 << 20, 'x')
  isJsonError(await d.api('POST', '/sandboxes', { key: null, body, raw: true }), 401)
  isJsonError(await d.api('POST', '/nope', { body, raw: true }), 404)
  const r = await fetch(d.url + '/files?path=a', {
    method: 'POST', body, headers: { 'E2b-Sandbox-Id': 'nosuch', 'E2b-Sandbox-Port': '49983' },
  })
  assert.equal(r.status, 502)
  const chunked = await raw(d.port, { path: '/sandboxes', chunks: [body, body] })
  assert.equal(chunked.status, 401)
})

// Every refusal sbxd decides before a request's body (bad key, unknown sandbox or route, a
// sandbox's traffic for a sandbox that is gone) on one kept-alive connection, as the SDKs and
// the Python client send them: with no body, a sized one, a chunked one. Each is answered and
// the connection stays open: a client reusing it must never meet a connection closed under it,
// nor pay a new one (a TLS handshake) per 401 or 404.
test('refusals keep a kept-alive connection: with or without a body, E2B, /v1 and envd', async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  let sockets = 0
  const createConnection = agent.createConnection.bind(agent)
  agent.createConnection = (...a) => { sockets++; return createConnection(...a) }
  const gone = 'nosuchsandbox0000000'
  const json = Buffer.from(JSON.stringify({ cmd: ['sh', '-c', 'echo hi'], env: { A: 'x'.repeat(3000) } }))
  const bearer = { Authorization: `Bearer ${d.key}` }
  const envd = { Host: `49983-${gone}.sbx.localhost:${d.port}`, 'X-Access-Token': 't' }
  const cases = [
    ['GET', `/v1/sandboxes/${gone}/processes`, bearer, 404],
    ['DELETE', `/v1/sandboxes/${gone}/processes/7`, bearer, 404],
    ['POST', `/v1/sandboxes/${gone}/processes`, bearer, 404, json],
    ['POST', `/v1/sandboxes/${gone}/processes/7/stdin?close=true`, bearer, 404, Buffer.alloc(0)],
    ['GET', '/v1/sandboxes', { Authorization: 'Bearer wrong' }, 401],
    ['POST', `/v1/sandboxes/${gone}/processes`, { Authorization: 'Bearer wrong' }, 401, json],
    ['GET', '/v1/nope', bearer, 404],
    ['GET', '/v2/sandboxes', { 'X-API-KEY': 'wrong' }, 401],
    ['DELETE', `/sandboxes/${gone}`, {}, 401],
    ['POST', '/sandboxes', { 'X-API-KEY': 'wrong' }, 401, json],
    ['GET', '/nope', { 'X-API-KEY': d.key }, 404],
    ['GET', '/envs/vars', envd, 502],
    ['POST', '/process.Process/Start', envd, 502, json],
  ]
  const send = (method, path, headers, body, chunked) => new Promise((resolve, reject) => {
    const h = { ...headers }
    if (body && !chunked) h['Content-Length'] = body.length
    const req = http.request({ host: '127.0.0.1', port: d.port, method, path, headers: h, agent }, (res) => {
      let text = ''
      res.on('data', (c) => { text += c })
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }))
    })
    req.on('error', reject)
    if (body && chunked) for (let i = 0; i < body.length; i += 1000) req.write(body.subarray(i, i + 1000))
    req.end(body && !chunked ? body : undefined)
  })
  try {
    for (let round = 0; round < 2; round++) {
      for (const [m, p, h, status, body] of cases) {
        for (const chunked of body?.length ? [false, true] : [false]) {
          const what = `${m} ${p}${body ? (chunked ? ' chunked' : ` ${body.length} B`) : ''}`
          const r = await send(m, p, h, body, chunked)
          assert.equal(r.status, status, `${what}: ${r.text}`)
          assert.match(r.headers['content-type'], /^application\/json/, what)
          JSON.parse(r.text)
          assert.notEqual(r.headers.connection, 'close', `${what} closed the connection`)
        }
      }
    }
    assert.equal(sockets, 1, 'every refusal on one connection')
  } finally {
    agent.destroy()
  }
})

test('list is an empty array with the right key, no X-Next-Token', async () => {
  for (const p of ['/v2/sandboxes', '/sandboxes', '/v2/sandboxes?limit=5&state=running,paused']) {
    const r = await d.api('GET', p)
    assert.equal(r.status, 200)
    assert.deepEqual(r.json, [])
    assert.ok(!r.headers.get('x-next-token'))
  }
  for (const p of ['/v2/sandboxes?limit=0', '/v2/sandboxes?limit=101', '/v2/sandboxes?state=dead']) {
    isJsonError(await d.api('GET', p), 400)
  }
})

test('404 JSON for an unknown sandbox: GET, DELETE, timeout, connect', async () => {
  for (const id of ['nosuchsandbox00000000', 'abc', 'UPPER', '..%2F..%2Fetc']) {
    isJsonError(await d.api('GET', `/sandboxes/${id}`), 404)
    isJsonError(await d.api('DELETE', `/sandboxes/${id}`), 404)
    isJsonError(await d.api('POST', `/sandboxes/${id}/timeout`, { body: { timeout: 30 } }), 404)
    isJsonError(await d.api('POST', `/sandboxes/${id}/connect`, { body: { timeout: 30 } }), 404)
    isJsonError(await d.api('POST', `/v2/sandboxes/${id}/connect`, { body: {} }), 404)
  }
})

test('400 for bad timeouts, before anything else is looked up', async () => {
  // (0 is valid there: "expire now", as on E2B)
  for (const timeout of [-5, 1.5, 86401, 9223372036854775807, 'abc', null, {}]) {
    const r = await d.api('POST', '/sandboxes/abc/timeout', { body: { timeout } })
    isJsonError(r, 400)
  }
  isJsonError(await d.api('POST', '/sandboxes/abc/timeout', { body: {} }), 400)
  for (const timeout of [0, -1, 86401]) {
    isJsonError(await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout } }), 400)
    isJsonError(await d.api('POST', '/sandboxes', { body: { templateID: 'base', timeout } }), 400)
  }
})

test('unknown template: 404 "template \'x\' not found"; bad names 400', async () => {
  const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'nosuch' } })
  isJsonError(r, 404)
  assert.equal(r.json.message, "template 'nosuch' not found")
  isJsonError(await d.api('POST', '/sandboxes', { body: { templateID: 'nosuch', timeout: 10 } }), 404)
  for (const templateID of ['../../etc', '../base', 'a/b', '', '.hidden', 'x'.repeat(193), 5]) {
    isJsonError(await d.api('POST', '/sandboxes', { body: { templateID } }), 400)
  }
  // an alias with a tag as long as E2B takes (a name of 192) is a name, and not found here
  isJsonError(await d.api('POST', '/sandboxes', { body: { templateID: `${'n'.repeat(40)}:${'t'.repeat(128)}` } }), 404)
  isJsonError(await d.api('POST', '/sandboxes', { body: {} }), 400)
})

test('metadata and envVars must be bounded maps of strings', async () => {
  const bad = [
    { metadata: { a: 1 } }, { metadata: [] }, { envVars: 'x' }, { envVars: { '': 'x' } },
    { metadata: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, 'v'])) },
    { envVars: { k: 'v'.repeat(17 * 1024) } },
  ]
  for (const extra of bad) {
    isJsonError(await d.api('POST', '/sandboxes', { body: { templateID: 'base', ...extra } }), 400)
  }
})

test('413 JSON for an oversized body, sized or chunked', async () => {
  const big = '{"templateID":"base","metadata":{"a":"' + 'x'.repeat(2 * 1024 * 1024) + '"}}'
  isJsonError(await d.api('POST', '/sandboxes', { body: big }), 413)
  const r = await raw(d.port, {
    path: '/sandboxes', headers: { 'X-API-KEY': d.key, 'Content-Type': 'application/json' },
    chunks: Array.from({ length: 40 }, () => 'x'.repeat(64 * 1024)),
  })
  assert.equal(r.headers['transfer-encoding'] ?? 'chunked', 'chunked')
  assert.equal(r.status, 413)
  assert.equal(r.json.code, 413)
})

test('deeply nested or malformed JSON is rejected with 400', async () => {
  for (const body of ['['.repeat(100000) + ']'.repeat(100000), '{"a":' + '['.repeat(40) + ']'.repeat(40) + '}',
    '{"templateID":', 'null', '[]', '"base"']) {
    isJsonError(await d.api('POST', '/sandboxes', { body }), 400)
  }
})

test('chunked JSON bodies are accepted (the JS SDK sends them)', async () => {
  const r = await raw(d.port, {
    path: '/v2/sandboxes', headers: { 'X-API-KEY': d.key, 'Content-Type': 'application/json' },
    chunks: ['{"templateID"', ':"nosuch",', '"timeout":60}'],
  })
  assert.equal(r.status, 404, r.text) // parsed: the template lookup ran
  assert.equal(r.json.message, "template 'nosuch' not found")
})

test('unknown routes are 404 JSON', async () => {
  // (GET / leads to the web console: tests/console)
  for (const [m, p] of [['POST', '/'], ['GET', '/nope'], ['PUT', '/sandboxes'], ['GET', '/v2/sandboxes/x'],
    ['POST', '/sandboxes/abc/nope'], ['GET', '/sandboxes/abc/timeout']]) {
    isJsonError(await d.api(m, p), 404)
  }
})

test('sandbox routing: bad E2b-Sandbox-Port is 400, unknown sandbox 502 like E2B', async () => {
  // any port 1..65535 is a sandbox port (a user port past 49983/49999: docs/e2b-wire.md §1.7)
  for (const port of ['0', '65536', '-1', 'abc', '49983x', '', '99999']) {
    const r = await fetch(d.url + '/health', { headers: { 'E2b-Sandbox-Id': 'x', 'E2b-Sandbox-Port': port } })
    assert.equal(r.status, 400, `port ${JSON.stringify(port)}`)
    assert.equal((await r.json()).code, 400)
  }
  for (const id of ['nosuchsandbox00000000', '', '../../etc']) {
    for (const port of ['49983', '49999', '22', '3000']) {
      const r = await fetch(d.url + '/health', { headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': port } })
      assert.equal(r.status, 502)
      const j = await r.json()
      assert.deepEqual(j, { sandboxId: id, message: 'The sandbox was not found', code: 502 })
    }
  }
  // Host-based routing (older SDKs): <port>-<id>.<domain>
  const r = await raw(d.port, { method: 'GET', path: '/health', headers: { Host: '49983-nosuch.example.test' } })
  assert.equal(r.status, 502)
  assert.equal(r.json.sandboxId, 'nosuch')
})
