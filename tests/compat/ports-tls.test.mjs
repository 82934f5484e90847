// HTTPS on sbxd's port (--tls-cert/--tls-key, GnuTLS inside libmicrohttpd) with a test CA, as
// server/README.md "Sandbox ports" tells an operator to run it: a certificate for
// sbx.localhost, *.sbx.localhost and 127.0.0.1, and clients trusting the CA through
// NODE_EXTRA_CA_CERTS. The unmodified SDK then talks to sbxd over https:// (control plane and
// envd), and `https://` + sandbox.getHost(port) reaches a server in the sandbox, a WebSocket
// upgrade included. The SDK runs in a child node (NODE_EXTRA_CA_CERTS is read at start-up).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startSbxd, realTemplates, REAL, makeTestCerts } from '../integration/sbxd.mjs'
import { request } from './ports-lib.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
let d, dir


before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sbx-tls-'))
  makeTestCerts(dir)
  d = await startSbxd({
    jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')],
  })
})
after(async () => {
  try {
    // startSbxd's stop() cleans up over http://: kill what is left over https first
    if (d) {
      const ca = readFileSync(join(dir, 'ca.pem'))
      const base = `https://127.0.0.1:${d.port}`
      const l = await request(`${base}/v2/sandboxes`, { headers: { 'X-API-KEY': d.key }, ca }).catch(() => null)
      for (const s of l?.status === 200 ? JSON.parse(l.body) : []) {
        await request(`${base}/sandboxes/${s.sandboxID}`, { method: 'DELETE', headers: { 'X-API-KEY': d.key }, ca })
      }
    }
    await d?.stop()
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
})

// Runs source (an ES module) in a child node with the test CA trusted and the SDK pointed at
// sbxd over https (NODE_EXTRA_CA_CERTS is read at start-up); returns its last stdout line,
// parsed: what it saw.
async function runChild(name, source, timeout = 120000) {
  const script = join(HERE, `.tls-${name}-${process.pid}.mjs`)
  writeFileSync(script, source)
  try {
    const out = await new Promise((resolve, reject) => {
      execFile(process.execPath, [script], {
        cwd: HERE, timeout,
        env: {
          ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem'), E2B_API_KEY: d.key,
          E2B_API_URL: `https://127.0.0.1:${d.port}`, E2B_SANDBOX_URL: `https://127.0.0.1:${d.port}`,
        },
      }, (err, stdout, stderr) => err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))
    })
    return JSON.parse(out.trim().split('\n').pop())
  } finally {
    rmSync(script, { force: true })
  }
}

// The SDK side: prints one JSON line of what it saw.
const CHILD = String.raw`
import { Sandbox } from 'e2b'
import { request, json, websocket, startServer } from './ports-lib.mjs'
const sbx = await Sandbox.create()
try {
  await startServer(sbx, 8000, { scheme: 'https' })
  const r = await request('https://' + sbx.getHost(8000) + '/host')
  const ws = await websocket('https://' + sbx.getHost(8000) + '/ws')
  ws.send(1, 'over tls')
  const m = await ws.next()
  await ws.close()
  const closed = await request('https://' + sbx.getHost(8123) + '/')
  console.log(JSON.stringify({ host: sbx.getHost(8000), status: r.status, seen: json(r), ws: m.payload.toString(), closed: closed.status }))
} finally {
  await sbx.kill()
}
`

test('https:// + getHost(port) reaches the sandbox with a test CA (SDK over TLS too)', async () => {
  assert.match(d.stdout(), /^export E2B_API_URL=https:\/\/127\.0\.0\.1:\d+$/m, 'sbxd announces https')
  const o = await runChild('child', CHILD)
  assert.equal(o.host.endsWith(`.sbx.localhost:${d.port}`), true, o.host)
  assert.equal(o.status, 200)
  assert.equal(o.seen.host, o.host)
  assert.equal(o.ws, 'over tls')
  assert.equal(o.closed, 502)
})

// The ends of upgraded connections over TLS, as a client sees them (in a child, the SDK
// trusting the CA): a server in the sandbox that says its last word and closes while the
// client is still sending, and WebSocket closes started by the client. sbxd stops reading the
// client when the sandbox side ends: what the client sent since (frames, its TLS
// close_notify) must not make the kernel reset the connection, which would reach the client as
// ECONNRESET and could drop sbxd's last bytes. The close races the client's close_notify, so
// the closes are repeated.
const CLOSE_CHILD = String.raw`
import { Sandbox } from 'e2b'
import { websocket, startServer, byeWhileSending } from './ports-lib.mjs'
const sbx = await Sandbox.create()
try {
  await startServer(sbx, 8000, { scheme: 'https' })
  const base = 'https://' + sbx.getHost(8000)
  const bye = await byeWhileSending(base + '/bye')
  const closes = []
  for (let i = 0; i < CLOSES; i++) {
    const ws = await websocket(base + '/ws')
    ws.send(1, 'n' + i)
    const m = await ws.next()
    closes.push(await ws.close().then(() => m.payload.toString(), (e) => e.code || e.message))
  }
  console.log(JSON.stringify({ bye, closes }))
} finally {
  await sbx.kill()
}
`
const CLOSES = 30

test('upgraded connections over https end cleanly: no reset when the client is still sending', async () => {
  const o = await runChild('close', CLOSE_CHILD.replace('CLOSES', String(CLOSES)))
  assert.deepEqual(o.bye, { bye: 'bye', how: 'end', errors: [] }, 'the last frame, then an orderly end')
  assert.deepEqual(o.closes, Array.from({ length: CLOSES }, (_, i) => `n${i}`), 'every close clean')
})

test('the /v1 terminal WebSocket works over https too', async () => {
  const { default: WebSocket } = await import('ws')
  const ca = readFileSync(join(dir, 'ca.pem'))
  const base = `https://127.0.0.1:${d.port}`
  const c = await request(`${base}/v2/sandboxes`, {
    method: 'POST', ca, headers: { 'X-API-KEY': d.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'base' }),
  })
  assert.equal(c.status, 201)
  const id = JSON.parse(c.body).sandboxID
  try {
    const ws = new WebSocket(`wss://127.0.0.1:${d.port}/v1/sandboxes/${id}/terminal`, { headers: { Authorization: `Bearer ${d.key}` }, ca })
    const out = await new Promise((resolve, reject) => {
      let text = ''
      ws.on('open', () => ws.send('echo tls-$((20+3))\n'))
      ws.on('message', (m) => { text += m.toString(); if (text.includes('tls-23')) resolve(text) })
      ws.on('error', reject)
      setTimeout(() => reject(new Error(`no output over wss: ${JSON.stringify(text)}`)), 20000)
    })
    assert.match(out, /tls-23/)
    ws.close()
  } finally {
    await request(`${base}/sandboxes/${id}`, { method: 'DELETE', ca, headers: { 'X-API-KEY': d.key } })
  }
})

// Template.build() with a copy() step over https: the SDK PUTs the files to the upload link
// sbxd hands out, which must be https:// like the URL the client used.
const BUILD_CHILD = String.raw`
import { Template, Sandbox } from 'e2b'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
const ctx = mkdtempSync(join(tmpdir(), 'sbx-tls-build-'))
try {
  writeFileSync(join(ctx, 'hello.txt'), 'copied over tls\n')
  const tpl = Template({ fileContextPath: ctx }).fromTemplate('base').copy('hello.txt', '/home/user/hello.txt')
  await Template.build(tpl, 'tls-copy')
  const sbx = await Sandbox.create('tls-copy')
  try {
    console.log(JSON.stringify({ text: await sbx.files.read('/home/user/hello.txt') }))
  } finally {
    await sbx.kill()
  }
} finally {
  rmSync(ctx, { recursive: true, force: true })
}
`

test('every URL sbxd hands out over https is https: upload links, and a copy() build works', async () => {
  const ca = readFileSync(join(dir, 'ca.pem'))
  const base = `https://127.0.0.1:${d.port}`
  const t = await request(`${base}/v3/templates`, {
    method: 'POST', ca, headers: { 'X-API-KEY': d.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'tls-link' }),
  })
  assert.equal(t.status, 202, t.body)
  const link = await request(`${base}/templates/${JSON.parse(t.body).templateID}/files/${'a'.repeat(64)}`, { ca, headers: { 'X-API-KEY': d.key } })
  assert.equal(link.status, 201)
  assert.ok(JSON.parse(link.body).url.startsWith(`${base}/build-uploads/`), link.body)
  const c = await request(`${base}/v2/sandboxes`, {
    method: 'POST', ca, headers: { 'X-API-KEY': d.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'base' }),
  })
  assert.equal(JSON.parse(c.body).domain, `sbx.localhost:${d.port}`)
  await request(`${base}/sandboxes/${JSON.parse(c.body).sandboxID}`, { method: 'DELETE', ca, headers: { 'X-API-KEY': d.key } })

  assert.equal((await runChild('build', BUILD_CHILD, 300000)).text, 'copied over tls\n')
})

test('--public-url: sbxd behind a proxy hands out the proxy\'s URLs', async () => {
  const p = await startSbxd({
    jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--public-url', 'https://sbx.example.test:8443/'],
  })
  try {
    assert.match(p.stdout(), /^export E2B_API_URL=https:\/\/sbx\.example\.test:8443$/m)
    assert.match(p.stdout(), /^export E2B_SANDBOX_URL=https:\/\/sbx\.example\.test:8443$/m)
    const t = await p.api('POST', '/v3/templates', { body: { name: 'pub-link' } })
    const link = await p.api('GET', `/templates/${t.json.templateID}/files/${'a'.repeat(64)}`)
    assert.equal(link.status, 201)
    assert.ok(link.json.url.startsWith('https://sbx.example.test:8443/build-uploads/'), link.text)
    const c = await p.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } })
    assert.equal(c.status, 201, c.text)
    assert.equal(c.json.domain, 'sbx.example.test:8443', 'the proxy\'s host is the default domain')
  } finally {
    await p.stop()
  }
  // the upload link follows the Host the client used when no --public-url is set
  const q = await startSbxd({})
  try {
    const t = await q.api('POST', '/v3/templates', { body: { name: 'host-link' } })
    const link = await request(`${q.url}/templates/${t.json.templateID}/files/${'a'.repeat(64)}`, { headers: { Host: 'sbx.internal:7000', 'X-API-KEY': q.key } })
    assert.ok(JSON.parse(link.body).url.startsWith('http://sbx.internal:7000/build-uploads/'), link.body)
  } finally {
    await q.stop()
  }
})

test('a client that does not trust the CA is refused; plain HTTP on the TLS port is not served', async () => {
  await assert.rejects(request(`https://127.0.0.1:${d.port}/health`), /self-signed|unable to verify|certificate/)
  await assert.rejects(request(`http://127.0.0.1:${d.port}/v2/sandboxes`, { headers: { 'X-API-KEY': d.key } }))
})
