// The front door under hostile load (server/README.md "Front door"): slow and idle
// connections cost the service nothing a real client needs, slow heads and bodies are cut,
// the oldest waiting connection makes room for a new one, past --max-connections a slow body
// makes room or a request is answered 503 and closed, and the HTTP framing rules (CL + TE,
// unknown transfer codings) answer at once; envVars keys with '=' or NUL are 400. Uses the
// real sbxd of test-node.sh (E2B_API_URL) for the SDK parts and a private one (fake jailer,
// 1024 fds, --max-connections 8) for the bounds.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startSbxd, fakeTemplate, FIXTURES, sleep } from './sbxd.mjs'
import { raw, trickle, flood, statusOf, bodyOf, PARTIAL_HEAD, SLOW_BODY } from './flood-lib.mjs'

const URL_ = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const skip = URL_ ? false : 'needs the sbxd of scripts/test-node.sh (E2B_API_URL)'
// sbxd (started beside this process, with the same hard limit) holds RLIMIT_NOFILE / 4
// waiting connections: 2,000 need a hard limit of 8,192 or more (this process needs 2,000).
const hardNofile = Number((/^Max open files\s+\S+\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8')) || [])[1]) || Infinity
const skipFlood = skip || (hardNofile < 8192 ? `the hard fd limit is ${hardNofile} (< 8192)` : false)
const target = () => { const u = new URL(URL_); return { host: u.hostname, port: Number(u.port) } }

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

test('with 2,000 slow or idle connections open, a new SDK client creates and runs', { skip: skipFlood }, async () => {
  const f = flood(target(), 2000)
  let sbx
  try {
    await f.start()
    await sleep(6000) // past the gate's deadlines: the flood is being cut and opened again
    for (let i = 0; i < 50 && f.open() < 1900; i++) await sleep(100)
    const before = f.open()
    const t0 = performance.now()
    sbx = await Sandbox.create({ requestTimeoutMs: 30_000 })
    const r = await sbx.commands.run('echo hi', { requestTimeoutMs: 30_000 })
    const ms = performance.now() - t0
    console.log(`# create + echo with ${before} slow/idle connections open (${f.open()} after, ` +
      `${f.opened()} opened in all): ${ms.toFixed(0)} ms`)
    assert.equal(r.stdout, 'hi\n')
    assert.ok(before >= 1900, `only ${before} flood connections were open`)
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
    await sleep(7000) // past the 6 s keep-alive idle: the server closed the client's connections
    assert.equal((await sbx.commands.run('echo again')).stdout, 'again\n')
    assert.equal(await sbx.isRunning(), true)
  } finally {
    await sbx.kill().catch(() => {})
  }
})

// A private sbxd: 1024 fds (so at most 256 connections wait for their head) and 8 requests
// in progress.
let ownAddr
let get
async function ownSbxd() {
  if (own) return
  own = await startSbxd({ jailer: join(FIXTURES, 'fake-jailer.py'), agent: '/bin/true',
    prepare: (s) => fakeTemplate(s), args: ['--max-connections', '8'],
    wrap: ['prlimit', '--nofile=1024:1024'] })
  ownAddr = { host: '127.0.0.1', port: own.port }
  get = `GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${own.key}\r\nConnection: close\r\n\r\n`
}

test('past the waiting bound the oldest waiting connection goes, not the new one', async () => {
  await ownSbxd()
  assert.match(own.stderr(), /at most 256 waiting/)
  const f = flood(ownAddr, 600, { kinds: [0, 1] })
  try {
    await f.start({ settle: false })
    await sleep(1500)
    const r = await raw(ownAddr, get)
    console.log(`# with ${f.open()} idle/slow connections held (${f.opened()} opened): ${r.ms} ms`)
    assert.equal(statusOf(r.out), 200, r.out)
    // 600 opened against 256 places: the oldest were closed well before their 5 s deadline
    assert.ok(f.opened() > 600, `${f.opened()} opened: none was evicted`)
  } finally {
    f.stop()
  }
})

test('past --max-connections: slow bodies make room, busy ones get a 503 and a close', async () => {
  await ownSbxd()
  const addr = ownAddr

  // 8 bodies below the minimum rate hold every slot: the next request closes the slowest
  const slow = []
  for (let i = 0; i < 8; i++) slow.push(trickle(addr, SLOW_BODY, { every: 300, wait: 4000 }))
  await sleep(1500)
  const r1 = await raw(addr, get)
  assert.equal(statusOf(r1.out), 200, r1.out)
  const cut = (await Promise.all(slow)).filter((t) => t.closed && t.ms < 4000)
  assert.ok(cut.length >= 1, 'a slow body was cut to make room')
  assert.equal(statusOf(cut[0].out), 408, cut[0].out)

  // 8 bodies at 8 KiB/s (above the minimum rate, 10 MB announced) are real work: 503
  const body = 'POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n'
  const busy = []
  for (let i = 0; i < 8; i++) busy.push(trickle(addr, body, { every: 250, wait: 4000, chunk: 'x'.repeat(2048) }))
  await sleep(1500)
  const r2 = await raw(addr, get)
  assert.equal(statusOf(r2.out), 503, r2.out)
  assert.match(r2.out, /\r\nRetry-After: 1\r\n/i)
  assert.equal(bodyOf(r2.out).code, 503)
  assert.ok(r2.closed, 'connection closed')
  const held = await Promise.all(busy)
  assert.ok(held.every((t) => !t.closed), 'the busy bodies were not cut')
  await sleep(500)
  assert.equal((await own.api('GET', '/v2/sandboxes')).status, 200)
  // what the front door did, on /metrics
  const m = (await own.api('GET', '/metrics')).text
  const v = (name) => Number((new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(m) || [])[1])
  assert.ok(v('sbx_http_connections_refused_total{reason="busy"}') >= 1, m)
  assert.ok(v('sbx_http_connections_closed_total{reason="slow_body"}') >= 1, m)
  assert.ok(v('sbx_http_connections_closed_total{reason="evicted"}') >= 1, m)
  assert.ok(v('sbx_http_connections_accepted_total') > 600, m)
})
