// The front door under hostile load (server/README.md "Front door"): slow and idle
// connections cost the service nothing a real client needs, slow heads and bodies are cut,
// past --max-connections a request is answered 503 and closed, and the HTTP framing rules
// (CL + TE, unknown transfer codings) answer at once. Uses the real sbxd of test-node.sh
// (E2B_API_URL) for the SDK parts and a private one (fake jailer) for the bound.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startSbxd, fakeTemplate, FIXTURES, sleep } from './sbxd.mjs'

const URL_ = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const skip = URL_ ? false : 'needs the sbxd of scripts/test-node.sh (E2B_API_URL)'
const target = () => { const u = new URL(URL_); return { host: u.hostname, port: Number(u.port) } }

// One raw exchange: what came back until the server closed (or `wait` ms passed).
function raw(addr, data, { wait = 10_000 } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(addr)
    let out = ''
    const t0 = Date.now()
    const done = (closed) => { clearTimeout(timer); s.destroy(); resolve({ out, closed, ms: Date.now() - t0 }) }
    const timer = setTimeout(() => done(false), wait)
    s.on('connect', () => s.write(data))
    s.on('data', (d) => { out += d })
    s.on('end', () => done(true))
    s.on('error', () => done(true))
  })
}
const statusOf = (out) => Number((/^HTTP\/1\.1 (\d{3})/.exec(out) || [])[1])
const bodyOf = (out) => JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4))

// A connection that sends part of a request and then one byte every `every` ms; resolves
// when the server closes it (or after `wait` ms) with what came back.
function trickle(addr, start, { every = 1000, wait = 30_000 } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(addr)
    let out = ''
    const t0 = Date.now()
    const iv = setInterval(() => s.write('a'), every)
    const done = (closed) => {
      clearInterval(iv); clearTimeout(timer); s.destroy()
      resolve({ out, closed, ms: Date.now() - t0 })
    }
    const timer = setTimeout(() => done(false), wait)
    s.on('connect', () => s.write(start))
    s.on('data', (d) => { out += d })
    s.on('end', () => done(true))
    s.on('error', () => done(true))
  })
}

const PARTIAL_HEAD = 'GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-Slow: '
const SLOW_BODY = 'POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
  'Content-Length: 100000\r\n\r\n{'

// n connections kept open (one closed is opened again after a second): a third idle (nothing
// sent), a third trickling a request head, a third trickling a body after a whole head.
function flood(addr, n) {
  const socks = new Set()
  let stopped = false
  let opened = 0
  const open = (kind) => {
    if (stopped) return
    const s = net.connect(addr)
    s.kind = kind
    opened++
    s.on('connect', () => {
      s.up = true
      if (kind === 1) s.write(PARTIAL_HEAD)
      if (kind === 2) s.write(SLOW_BODY)
    })
    s.on('data', () => {})
    s.on('error', () => {})
    s.on('close', () => { socks.delete(s); if (!stopped) setTimeout(() => open(kind), 1000) })
    socks.add(s)
  }
  const iv = setInterval(() => { for (const s of socks) if (s.up && s.kind && s.writable) s.write('a') }, 2000)
  return {
    async start() {
      for (let i = 0; i < n; i++) {
        open(i % 3)
        if (i % 200 === 199) await sleep(50)
      }
      for (let i = 0; i < 100 && [...socks].filter((s) => s.up).length < n * 0.95; i++) await sleep(100)
    },
    open: () => [...socks].filter((s) => s.up).length,
    opened: () => opened,
    stop() { stopped = true; clearInterval(iv); for (const s of socks) s.destroy() },
  }
}

let own
after(async () => { await own?.stop() })

test('Content-Length with Transfer-Encoding: 400 and the connection closes', { skip }, async () => {
  const r = await raw(target(), 'POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n' +
    'Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n')
  assert.equal(statusOf(r.out), 400, r.out)
  assert.equal(bodyOf(r.out).code, 400)
  assert.match(bodyOf(r.out).message, /Transfer-Encoding/)
  assert.ok(r.closed, 'connection closed')
  // the same on a kept-alive connection, after a first request
  const r2 = await raw(target(), `GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${KEY}\r\n\r\n` +
    'POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')
  assert.match(r2.out, /^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 400 /, r2.out)
  assert.ok(r2.closed, 'connection closed')
})

test('an unknown transfer coding: 501 at once and the connection closes', { skip }, async () => {
  const r = await raw(target(), 'POST /sandboxes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nxx')
  assert.equal(statusOf(r.out), 501, r.out)
  assert.deepEqual(Object.keys(bodyOf(r.out)).sort(), ['code', 'message'])
  assert.ok(r.closed && r.ms < 5000, `closed after ${r.ms} ms`)
  const r2 = await raw(target(), `GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${KEY}\r\n\r\n` +
    'POST /sandboxes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nxx')
  assert.match(r2.out, /HTTP\/1\.1 501 /, r2.out)
  assert.ok(r2.closed && r2.ms < 5000, `closed after ${r2.ms} ms`)
})

test('envVars keys with = or NUL: 400', { skip }, async () => {
  for (const body of ['{"templateID":"base","envVars":{"A=B":"1"}}',
    '{"templateID":"base","envVars":{"A\\u0000B":"1"}}',
    '{"templateID":"base","envVars":{"A":"x\\u0000"}}']) {
    const res = await fetch(`${URL_}/sandboxes`, {
      method: 'POST', headers: { 'X-API-KEY': KEY, 'Content-Type': 'application/json' }, body,
    })
    const j = await res.json()
    assert.equal(res.status, 400, `${body}: ${JSON.stringify(j)}`)
    assert.equal(j.code, 400)
  }
})

test('a trickled head and a trickled body are cut', { skip }, async () => {
  const [head, body, idle] = await Promise.all([
    trickle(target(), PARTIAL_HEAD),
    trickle(target(), SLOW_BODY, { every: 500 }),
    raw(target(), '', { wait: 30_000 }),
  ])
  console.log(`# cut after: head ${head.ms} ms, body ${body.ms} ms, idle ${idle.ms} ms`)
  assert.ok(head.closed && head.ms < 20_000, `head trickle still open after ${head.ms} ms`)
  assert.equal(statusOf(head.out), 408, head.out)
  assert.ok(body.closed && body.ms < 20_000, `body trickle still open after ${body.ms} ms`)
  assert.equal(statusOf(body.out), 408, body.out)
  assert.ok(idle.closed && idle.ms < 20_000, `idle connection still open after ${idle.ms} ms`)
})

test('with 2,000 slow or idle connections open, a new SDK client creates and runs', { skip }, async () => {
  const f = flood(target(), 2000)
  let sbx
  try {
    await f.start()
    await sleep(6000) // past the gate's deadlines: the flood is being cut and opened again
    const before = f.open()
    const t0 = performance.now()
    sbx = await Sandbox.create({ requestTimeoutMs: 30_000 })
    const r = await sbx.commands.run('echo hi', { requestTimeoutMs: 30_000 })
    const ms = performance.now() - t0
    console.log(`# create + echo with ${before} slow/idle connections open (${f.open()} after, ` +
      `${f.opened()} opened in all): ${ms.toFixed(0)} ms`)
    assert.equal(r.stdout, 'hi\n')
    assert.ok(before >= 1500, `only ${before} flood connections were open`)
  } finally {
    f.stop()
    await sbx?.kill().catch(() => {})
  }
})

test('a command silent for longer than the idle timeout completes; idle connections reused', { skip }, async () => {
  const sbx = await Sandbox.create()
  try {
    const t0 = Date.now()
    const r = await sbx.commands.run('sleep 8; echo done', { timeoutMs: 60_000 })
    assert.equal(r.stdout, 'done\n')
    assert.ok(Date.now() - t0 >= 8000)
    await sleep(6500) // past the 5 s keep-alive idle: the server closed the client's connections
    assert.equal((await sbx.commands.run('echo again')).stdout, 'again\n')
    assert.equal(await sbx.isRunning(), true)
  } finally {
    await sbx.kill().catch(() => {})
  }
})

test('past --max-connections a request is answered 503 and closed', async () => {
  own = await startSbxd({ jailer: join(FIXTURES, 'fake-jailer.py'), agent: '/bin/true',
    prepare: (s) => fakeTemplate(s), args: ['--max-connections', '8'] })
  const addr = { host: '127.0.0.1', port: own.port }
  const holders = []
  for (let i = 0; i < 8; i++) holders.push(trickle(addr, SLOW_BODY, { every: 300, wait: 20_000 }))
  await sleep(1000)
  const r = await raw(addr, `GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${own.key}\r\n\r\n`)
  assert.equal(statusOf(r.out), 503, r.out)
  assert.match(r.out, /\r\nRetry-After: 1\r\n/i)
  assert.equal(bodyOf(r.out).code, 503)
  assert.ok(r.closed, 'connection closed')
  await Promise.all(holders) // cut by the body rule in the meantime
  const ok = await own.api('GET', '/v2/sandboxes')
  assert.equal(ok.status, 200)
})
