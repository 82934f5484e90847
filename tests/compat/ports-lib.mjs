// Helpers for the sandbox-port tests (ports.test.mjs, ports-tls.test.mjs): an HTTP client that
// opens `http(s)://` + sandbox.getHost(port) with *.localhost resolved to loopback (as
// browsers, curl and systemd-resolved do; glibc's plain `files dns` does not), a small
// WebSocket client, and the server the tests run inside the sandbox.
import http from 'node:http'
import https from 'node:https'
import dns from 'node:dns'
import { createHash, randomBytes } from 'node:crypto'

// *.localhost → 127.0.0.1 (RFC 6761 §6.3); anything else through the system resolver.
export function lookup(host, opts, cb) {
  if (host === 'localhost' || host.endsWith('.localhost')) {
    if (opts.all) return cb(null, [{ address: '127.0.0.1', family: 4 }])
    return cb(null, '127.0.0.1', 4)
  }
  return dns.lookup(host, opts, cb)
}

// One request to url; resolves { status, headers, body (Buffer), chunks (Buffer[]) }.
// body: a Buffer/string, or an async function (req) => {} that writes and ends it itself.
// onChunk(chunk, res): called for each piece of the answer as it arrives.
export function request(url, { method = 'GET', headers = {}, body, ca, onChunk } = {}) {
  const u = new URL(url)
  const mod = u.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = mod.request(u, { method, headers, lookup, ca, agent: false }, (res) => {
      const chunks = []
      res.on('data', (c) => {
        chunks.push(c)
        onChunk?.(c, res)
      })
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), chunks }))
      res.on('error', reject)
    })
    req.on('error', reject)
    if (typeof body === 'function') body(req).catch(reject)
    else req.end(body)
  })
}

export const json = (r) => JSON.parse(r.body.toString())

// ---- a WebSocket client (RFC 6455), just enough for an echo ----

function encodeFrame(opcode, payload) {
  const mask = randomBytes(4)
  const n = payload.length
  const head = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n])
    : n < 65536 ? Buffer.from([0x80 | opcode, 0x80 | 126, n >> 8, n & 255])
      : Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b })()])
  const body = Buffer.from(payload)
  for (let i = 0; i < n; i++) body[i] ^= mask[i & 3]
  return Buffer.concat([head, mask, body])
}

// Parse one unmasked server frame from buf: { opcode, payload, len } or null.
function decodeFrame(buf) {
  if (buf.length < 2) return null
  let n = buf[1] & 127, off = 2
  if (n === 126) { if (buf.length < 4) return null; n = buf.readUInt16BE(2); off = 4 }
  else if (n === 127) { if (buf.length < 10) return null; n = Number(buf.readBigUInt64BE(2)); off = 10 }
  if (buf.length < off + n) return null
  return { opcode: buf[0] & 15, payload: buf.subarray(off, off + n), len: off + n }
}

// Open a WebSocket to url (http/https); resolves { send(opcode, data), next(), close(), res, sock }.
// send() returns false when the socket's buffer is full (wait for sock's 'drain'). close() sends
// a close frame, ends the socket and resolves once it is closed; it rejects on a socket error
// (a reset instead of the server's orderly end).
export function websocket(url, { headers = {}, ca } = {}) {
  const u = new URL(url)
  const mod = u.protocol === 'https:' ? https : http
  const key = randomBytes(16).toString('base64')
  return new Promise((resolve, reject) => {
    const req = mod.request(u, {
      lookup, ca, agent: false,
      headers: { ...headers, Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' },
    })
    req.on('response', (res) => reject(Object.assign(new Error(`no upgrade: ${res.statusCode}`), { status: res.statusCode })))
    req.on('error', reject)
    req.on('upgrade', (res, sock, head) => {
      const want = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
      if (res.headers['sec-websocket-accept'] !== want) return reject(new Error('bad Sec-WebSocket-Accept'))
      let buf = head
      const waiting = []
      const frames = []
      const pump = () => {
        for (let f; (f = decodeFrame(buf));) {
          buf = buf.subarray(f.len)
          frames.push(f)
        }
        while (waiting.length && frames.length) waiting.shift()(frames.shift())
      }
      sock.on('data', (d) => { buf = Buffer.concat([buf, d]); pump() })
      resolve({
        res,
        send: (opcode, data) => sock.write(encodeFrame(opcode, Buffer.from(data))),
        next: () => new Promise((r) => { waiting.push(r); pump() }),
        close: () => new Promise((r, j) => { sock.on('error', j); sock.on('close', r); sock.end(encodeFrame(8, Buffer.alloc(0))) }),
        sock,
      })
    })
    req.end()
  })
}

// The exchange on the server's /bye: the client streams binary frames from its first one on
// (max bytes at most) and reads until the connection ends. Resolves { bye: the first frame's
// text, how: 'end' (the server's orderly end, FIN after TLS's close_notify) or what ended it
// instead, errors: the socket's errors until it closed }. A reset (ECONNRESET) is what a client
// must never see here.
export async function byeWhileSending(url, { ca, max = 16 << 20 } = {}) {
  const ws = await websocket(url, { ca })
  const errors = []
  const closed = new Promise((r) => ws.sock.on('close', r))
  const how = await new Promise((resolve) => {
    let sent = 0
    let done = false
    const finish = (h) => { if (!done) { done = true; resolve(h) } }
    ws.sock.on('end', () => finish('end'))
    ws.sock.on('error', (e) => { errors.push(e.code || e.message); finish(e.code || e.message) })
    const blob = Buffer.alloc(60000, 7)
    const pump = () => {
      while (!done && sent < max) {
        sent += blob.length
        if (!ws.send(2, blob)) return ws.sock.once('drain', pump)
      }
      if (!done) setTimeout(() => finish(`still open 10 s after ${sent} bytes sent`), 10000)
    }
    pump()
  })
  if (how === 'end') await Promise.race([closed, new Promise((r) => setTimeout(r, 10000))])
  else ws.sock.destroy()
  const frame = await Promise.race([ws.next(), new Promise((r) => setTimeout(r, 1000, null))])
  return { bye: frame?.payload.toString() ?? null, how, errors }
}

// ---- the server the tests start inside the sandbox (node, CommonJS) ----
// /stream: "part0\n" at once, the rest only after GET /release (so the test sees the first
// piece arrive while the answer is still open); /echo: reads the body, answers its length and
// sha256, and /progress tells how much of it the running /echo has read; /host: the Host and
// X-Forwarded-Host it got; Upgrade: a WebSocket echo (text and binary), answered at once
// (before any body the request announced), and /upgrades tells how many it answered; or on
// /bye a server that answers the client's first frame with a text frame "bye" and ends the
// connection at once, while the client may still be sending (what it sends next is read and
// dropped).
export const SERVER = String.raw`
const http = require('http'), crypto = require('crypto')
let release = null, received = 0, upgrades = 0
const s = http.createServer((req, res) => {
  const send = (o) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(o)) }
  if (req.url === '/stream') {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('part0\n')
    release = () => { res.write('part1\n'); setTimeout(() => res.end('part2\n'), 50) }
    return
  }
  if (req.url === '/release') { if (release) release(); release = null; return send({ ok: true }) }
  if (req.url === '/progress') return send({ received })
  if (req.url === '/upgrades') return send({ upgrades })
  if (req.url === '/echo') {
    const h = crypto.createHash('sha256'); received = 0
    req.on('data', (c) => { h.update(c); received += c.length })
    req.on('end', () => send({ n: received, sha: h.digest('hex'), te: req.headers['transfer-encoding'] || null }))
    return
  }
  if (req.url.startsWith('/host')) return send({ host: req.headers.host, xfh: req.headers['x-forwarded-host'] || null, url: req.url })
  res.writeHead(404, { 'content-type': 'text/plain' }); res.end('no such page')
})
s.on('upgrade', (req, sock, head) => {
  upgrades++
  sock.on('error', () => {}) // a client gone mid-way: the relay resets it
  const acc = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
  sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + acc + '\r\n\r\n')
  if (req.url === '/bye') {
    let said = false
    sock.on('data', () => { if (!said) { said = true; sock.end(Buffer.from([0x81, 3, 0x62, 0x79, 0x65])) } })
    return
  }
  let buf = head
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d])
    for (;;) {
      if (buf.length < 2) return
      let n = buf[1] & 127, off = 2
      if (n === 126) { if (buf.length < 4) return; n = buf.readUInt16BE(2); off = 4 }
      else if (n === 127) { if (buf.length < 10) return; n = Number(buf.readBigUInt64BE(2)); off = 10 }
      if (buf.length < off + 4 + n) return
      const op = buf[0] & 15, mask = buf.subarray(off, off + 4)
      const p = Buffer.from(buf.subarray(off + 4, off + 4 + n))
      for (let i = 0; i < n; i++) p[i] ^= mask[i & 3]
      buf = buf.subarray(off + 4 + n)
      if (op === 8) { sock.end(Buffer.from([0x88, 0])); return }
      const h = n < 126 ? Buffer.from([0x80 | op, n]) : n < 65536 ? Buffer.from([0x80 | op, 126, n >> 8, n & 255])
        : (() => { const b = Buffer.alloc(10); b[0] = 0x80 | op; b[1] = 127; b.writeBigUInt64BE(BigInt(n), 2); return b })()
      sock.write(Buffer.concat([h, p]))
    }
  })
})
s.listen(+process.argv[2], '127.0.0.1', () => console.log('listening'))
`

// Start SERVER on port in sbx and wait until it answers through sbxd.
export async function startServer(sbx, port, { headers = {}, scheme = 'http', ca } = {}) {
  await sbx.files.write('/tmp/srv.js', SERVER)
  await sbx.commands.run(`node /tmp/srv.js ${port}`, { background: true })
  const url = `${scheme}://${sbx.getHost(port)}/host`
  for (let i = 0; i < 100; i++) {
    const r = await request(url, { headers, ca }).catch(() => null)
    if (r && r.status === 200) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`the server on port ${port} did not come up`)
}
