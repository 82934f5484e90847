// Sandbox ports through the unmodified `e2b` SDK: a server listening on any port inside the
// sandbox (which has loopback only) is reached at `http://` + sandbox.getHost(port), routed by
// sbxd on the Host header and carried over the agent channel (api/frames.md, "User ports";
// docs/e2b-wire.md §1.7). getHost() uses the `domain` create answers (sbx.localhost:<sbxd port>
// by default), so no extra environment is needed; *.localhost is resolved to loopback by
// ports-lib.mjs's lookup, as browsers and curl do.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { Sandbox } from 'e2b'
import { request, json, websocket, startServer, byeWhileSending } from './ports-lib.mjs'

let sbx
const PORT = 8000

before(async () => {
  sbx = await Sandbox.create()
  await startServer(sbx, PORT)
})
after(async () => {
  await sbx?.kill().catch(() => {})
})

const url = (path, port = PORT, s = sbx) => `http://${s.getHost(port)}${path}`

test('getHost(port) is <port>-<id>.<domain> with the domain create answered', () => {
  const api = new URL(process.env.E2B_API_URL)
  assert.equal(sbx.getHost(PORT), `${PORT}-${sbx.sandboxId}.sbx.localhost:${api.port}`)
})

test('a GET reaches the server in the sandbox; its answer comes back whole', async () => {
  const r = await request(url('/host?x=1&y=%20'))
  assert.equal(r.status, 200)
  assert.equal(r.headers['content-type'], 'application/json')
  const o = json(r)
  assert.equal(o.host, sbx.getHost(PORT), 'the server sees the Host the client sent')
  assert.equal(o.url, '/host?x=1&y=%20', 'path and query as the client sent them')
  const nf = await request(url('/missing%2Fpath'))
  assert.equal(nf.status, 404)
  assert.equal(nf.body.toString(), 'no such page')
})

test('python3 -m http.server on another port serves a file', async () => {
  await sbx.files.write('/tmp/www/hello.txt', 'hello from the sandbox\n')
  await sbx.commands.run('cd /tmp/www && python3 -m http.server 8081 --bind 127.0.0.1', { background: true })
  let r
  for (let i = 0; i < 100; i++) {
    r = await request(url('/hello.txt', 8081))
    if (r.status === 200) break
    await new Promise((res) => setTimeout(res, 100))
  }
  assert.equal(r.status, 200)
  assert.equal(r.body.toString(), 'hello from the sandbox\n')
  assert.equal(r.headers['content-length'], '23')
})

test('a streamed answer arrives in pieces, while the server is still writing', async () => {
  let first
  const seenFirst = new Promise((r) => { first = r })
  const p = request(url('/stream'), { onChunk: (c) => first(c.toString()) })
  assert.equal(await seenFirst, 'part0\n', 'the first piece arrives before the answer ends')
  const rel = await request(url('/release'))
  assert.equal(rel.status, 200)
  const r = await p
  assert.equal(r.status, 200)
  assert.equal(r.body.toString(), 'part0\npart1\npart2\n')
})

test('a POST body streams in: the server reads the first part before the client ends', async () => {
  const a = randomBytes(300 * 1024), b = randomBytes(200 * 1024)
  const r = await request(url('/echo'), {
    method: 'POST',
    body: async (req) => {
      req.write(a)
      for (let i = 0; ; i++) {
        const p = json(await request(url('/progress')))
        if (p.received === a.length) break
        assert.ok(i < 200, `the server got ${p.received} of the first ${a.length} bytes`)
        await new Promise((res) => setTimeout(res, 50))
      }
      req.end(b)
    },
  })
  assert.equal(r.status, 200)
  const o = json(r)
  assert.equal(o.n, a.length + b.length)
  assert.equal(o.sha, createHash('sha256').update(a).update(b).digest('hex'))
  assert.equal(o.te, 'chunked', 'a body of unknown length reaches the server chunked')
})

test('a POST with Content-Length reaches the server with it', async () => {
  const body = randomBytes(70000)
  const r = await request(url('/echo'), { method: 'POST', body, headers: { 'Content-Length': body.length } })
  assert.equal(r.status, 200)
  assert.deepEqual(json(r), { n: 70000, sha: createHash('sha256').update(body).digest('hex'), te: null })
})

test('a WebSocket upgrade works end to end (text, and a 200 KiB binary message)', async () => {
  const ws = await websocket(url('/ws'))
  assert.equal(ws.res.statusCode, 101)
  ws.send(1, 'hello')
  const m = await ws.next()
  assert.equal(m.opcode, 1)
  assert.equal(m.payload.toString(), 'hello')
  const big = randomBytes(200 * 1024)
  ws.send(2, big)
  const m2 = await ws.next()
  assert.equal(m2.opcode, 2)
  assert.ok(m2.payload.equals(big))
  await ws.close()
})

test('a server that says its last word and closes while the client is still sending: the client gets it, then an orderly end', async () => {
  // sbxd stops reading the client once the sandbox side has ended: the bytes the client sent
  // since must not make the close a reset (ECONNRESET), and the last frame must not be lost
  for (let i = 0; i < 3; i++) assert.deepEqual(await byeWhileSending(url('/bye')), { bye: 'bye', how: 'end', errors: [] })
})

test('an idle WebSocket and a silent stream outlive the front door\'s idle cut (6 s)', async () => {
  const ws = await websocket(url('/ws'))
  ws.send(1, 'a')
  assert.equal((await ws.next()).payload.toString(), 'a')
  await new Promise((r) => setTimeout(r, 9000))
  ws.send(1, 'b')
  assert.equal((await ws.next()).payload.toString(), 'b', 'the WebSocket is still open')
  await ws.close()
  let first
  const seen = new Promise((r) => { first = r })
  const p = request(url('/stream'), { onChunk: () => first() })
  await seen
  await new Promise((r) => setTimeout(r, 9000))
  await request(url('/release'))
  assert.equal((await p).body.toString(), 'part0\npart1\npart2\n')
})

test('WebSockets to one sandbox stop at a cap with a 429; the SDK\'s own calls still get through', async () => {
  const open = []
  try {
    for (let i = 0; i < 192; i++) open.push(await websocket(url('/ws')))
    const past = await websocket(url('/ws')).then(() => null, (e) => e)
    assert.equal(past?.status, 429, 'the 193rd WebSocket is refused')
    // envd (the SDK) is not starved: its connections are kept in reserve
    assert.equal((await sbx.commands.run('echo still here')).stdout, 'still here\n')
    assert.equal((await sbx.files.read('/etc/hostname')).length > 0, true)
    // and the count goes down as they close
    await open.pop().close()
    await new Promise((r) => setTimeout(r, 300))
    const again = await websocket(url('/ws'))
    open.push(again)
    again.send(1, 'x')
    assert.equal((await again.next()).payload.toString(), 'x')
  } finally {
    await Promise.all(open.map((w) => w.close().catch(() => {})))
  }
})

test('a cookie a sandbox sets stays its own: a Domain wider than its host is dropped', async () => {
  const cookies = ['wide=1; Domain=sbx.localhost; Path=/', 'dot=1; Domain=.sbx.localhost',
    `own=1; Domain=8083-${sbx.sandboxId}.sbx.localhost`, 'other=1; Domain=8083-abcdefghij.sbx.localhost',
    'plain=1; HttpOnly']
  await sbx.commands.run(`python3 -c '
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        for c in ${JSON.stringify(cookies)}: self.send_header("Set-Cookie", c)
        self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
http.server.HTTPServer(("127.0.0.1", 8083), H).serve_forever()'`, { background: true })
  let r
  for (let i = 0; i < 100 && r?.status !== 200; i++) {
    r = await request(url('/', 8083))
    if (r.status !== 200) await new Promise((res) => setTimeout(res, 100))
  }
  assert.deepEqual(r.headers['set-cookie'], ['wide=1; Path=/', 'dot=1',
    `own=1; Domain=8083-${sbx.sandboxId}.sbx.localhost`, 'other=1', 'plain=1; HttpOnly'])
})

test('a port nobody listens on is E2B\'s 502 with its JSON body', async () => {
  const r = await request(url('/', 8999))
  assert.equal(r.status, 502)
  assert.deepEqual(json(r), {
    sandboxId: sbx.sandboxId, message: 'The sandbox is running but port is not open', port: 8999, code: 502,
  })
})

test('allowPublicTraffic: false needs the trafficAccessToken; another sandbox\'s does not do', async () => {
  const priv = await Sandbox.create({ network: { allowPublicTraffic: false, maskRequestHost: 'app.internal:${PORT}' } })
  try {
    assert.match(priv.trafficAccessToken, /^[0-9a-f]{48}$/)
    const tok = { 'e2b-traffic-access-token': priv.trafficAccessToken }
    // envd does not need it: the SDK's own calls work without it
    await startServer(priv, PORT, { headers: tok })

    const none = await request(url('/host', PORT, priv))
    assert.equal(none.status, 403)
    assert.deepEqual(json(none), {
      sandboxId: priv.sandboxId, code: 403,
      message: "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing",
    })
    const bad = await request(url('/host', PORT, priv), { headers: { 'e2b-traffic-access-token': 'x'.repeat(48) } })
    assert.equal(bad.status, 403)
    assert.match(json(bad).message, /Provided token in header 'e2b-traffic-access-token' is invalid/)
    const ws = await websocket(url('/ws', PORT, priv)).catch((e) => e)
    assert.equal(ws.status, 403, 'an upgrade without the token is refused too')

    const ok = await request(url('/host', PORT, priv), { headers: { ...tok, 'X-Forwarded-Host': 'spoofed.example' } })
    assert.equal(ok.status, 200)
    // maskRequestHost: the server sees the mask with ${PORT} filled in, X-Forwarded-Host the
    // client's Host (one it sent itself is replaced)
    assert.deepEqual(json(ok), { host: `app.internal:${PORT}`, xfh: priv.getHost(PORT), url: '/host' })

    // the private sandbox's token opens no other sandbox: the public one ignores it, and a
    // second private one refuses it
    const priv2 = await Sandbox.create({ network: { allowPublicTraffic: false } })
    try {
      const other = await request(url('/host', PORT, priv2), { headers: tok })
      assert.equal(other.status, 403)
      assert.match(json(other).message, /is invalid/)
      assert.equal(json(other).sandboxId, priv2.sandboxId)
    } finally {
      await priv2.kill()
    }
    // the same Host with the first sandbox's id but port spelled for envd: envd's own token
    // still applies (the traffic token is not an envd token)
    const envd = await request(url('/process.Process/List', 49983, priv), { method: 'POST', headers: { ...tok, 'content-type': 'application/json' }, body: '{}' })
    assert.equal(envd.status, 401)
  } finally {
    await priv.kill()
  }
})

test('a fork of a private sandbox is private, with a token of its own', async () => {
  const src = await Sandbox.create({ network: { allowPublicTraffic: false } })
  try {
    const [f] = await src.fork({ count: 1 })
    try {
      assert.match(f.trafficAccessToken, /^[0-9a-f]{48}$/)
      assert.notEqual(f.trafficAccessToken, src.trafficAccessToken)
      // nothing listens in the fork (a fork keeps files, not processes): the token is
      // checked first
      const none = await request(url('/', PORT, f))
      assert.equal(none.status, 403)
      const other = await request(url('/', PORT, f), { headers: { 'e2b-traffic-access-token': src.trafficAccessToken } })
      assert.equal(other.status, 403)
      const own = await request(url('/', PORT, f), { headers: { 'e2b-traffic-access-token': f.trafficAccessToken } })
      assert.equal(own.status, 502)
      assert.equal(json(own).message, 'The sandbox is running but port is not open')
    } finally {
      await f.kill()
    }
  } finally {
    await src.kill()
  }
})

test('a request to a port of a paused sandbox with autoResume resumes it', async () => {
  const s = await Sandbox.create({ lifecycle: { onTimeout: 'pause', autoResume: true }, network: { allowPublicTraffic: false } })
  try {
    const tok = { 'e2b-traffic-access-token': s.trafficAccessToken }
    await startServer(s, PORT, { headers: tok })
    assert.equal(await s.pause(), true)
    assert.equal((await s.getInfo()).state, 'paused')

    // without the token: E2B's refusal, and the sandbox stays paused
    const denied = await request(url('/host', PORT, s))
    assert.equal(denied.status, 403)
    assert.deepEqual(json(denied), {
      sandboxId: s.sandboxId, code: 403,
      message: "This sandbox can't be resumed with the credentials provided. Check your access token and try again.",
    })
    assert.equal((await s.getInfo()).state, 'paused')

    const r = await request(url('/host', PORT, s), { headers: tok })
    assert.equal(r.status, 200)
    assert.equal(json(r).host, s.getHost(PORT))
    assert.equal((await s.getInfo()).state, 'running')
  } finally {
    await s.kill()
  }
})

test('a paused sandbox without autoResume is not woken by port traffic', async () => {
  const s = await Sandbox.create()
  try {
    await startServer(s, PORT)
    await s.pause()
    const r = await request(url('/host', PORT, s))
    assert.equal(r.status, 502)
    assert.equal((await s.getInfo()).state, 'paused')
  } finally {
    await s.kill()
  }
})
