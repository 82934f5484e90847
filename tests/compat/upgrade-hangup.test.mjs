// A client that hangs up while sbxd is about to answer its WebSocket upgrade with a 101 (a
// browser tab closed during the handshake, a proxy's timeout) must give back everything the
// upgrade held: its place under the per-sandbox WebSocket cap (PROXY_MAX_UPGRADES, 192), its
// connection to the sandbox's agent, and its reference to the sandbox. libmicrohttpd never hands
// over a connection whose 101 was not sent; only the request's end says so.
//
// To land hang-ups in that window (a race, tens of microseconds), each upgrade request
// announces a 4-byte body and holds it back, so the sandbox's server answers 101 (it does not
// wait for a body) while sbxd still waits; then the body and a reset (SO_LINGER 0) go out a few
// microseconds apart, spread over half a millisecond. sbxd reads the body, finds the 101 already
// there and queues it: some resets come before, some after its write (here about a fifth of the
// 250 hang-ups fall in between; one kept would fail the checks), and the rest are WebSockets cut
// by a reset, which must not hold their place either.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import fs from 'node:fs'
import { randomBytes } from 'node:crypto'
import { Sandbox } from 'e2b'
import { request, json, websocket, startServer } from './ports-lib.mjs'

const PORT = 8000
const CAP = 192 // PROXY_MAX_UPGRADES (server/e2b/proxy.h)
const HANGUPS = 250 // past the cap: each one kept would leave the sandbox locked out
const BATCH = 25
const api = new URL(process.env.E2B_API_URL)
let sbx

before(async () => {
  sbx = await Sandbox.create()
  await startServer(sbx, PORT)
})
after(async () => {
  await sbx?.kill().catch(() => {})
})

const url = (path) => `http://${sbx.getHost(PORT)}${path}`
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const upgradesAnswered = async () => json(await request(url('/upgrades'))).upgrades

// sbxd's open descriptors (the test runs on sbxd's machine: scripts/test-node.sh)
function sbxdPid() {
  const want = `--state-dir\0${process.env.SBX_TEST_STATE}\0`
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue
    try {
      if (fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(want)) return p
    } catch {}
  }
  return null
}
const fdCount = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length
async function fdsSettle(pid, max) {
  let n
  for (let i = 0; i < 50 && (n = fdCount(pid)) > max; i++) await sleep(100)
  return n
}

// An upgrade request whose body is held back; hangUp() sends it and resets the connection.
function heldUpgrade() {
  return new Promise((resolve, reject) => {
    const sock = net.connect(+api.port, '127.0.0.1', () => {
      sock.write(`GET /ws HTTP/1.1\r\nHost: ${sbx.getHost(PORT)}\r\nConnection: Upgrade\r\n` +
        `Upgrade: websocket\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
        'Sec-WebSocket-Version: 13\r\nContent-Length: 4\r\n\r\n')
      resolve({
        hangUp: (delayUs) => {
          sock.write('ping')
          for (const t = process.hrtime.bigint(); process.hrtime.bigint() - t < BigInt(delayUs) * 1000n;);
          sock.resetAndDestroy()
        },
      })
    })
    sock.on('error', () => {})
    sock.once('error', reject)
  })
}

test(`${HANGUPS} clients hanging up as their 101 is sent: the sandbox still takes ${CAP} WebSockets, sbxd's descriptors come back`, async () => {
  const pid = sbxdPid()
  assert.ok(pid, 'sbxd runs on this machine (scripts/test-node.sh)')
  const warm = await websocket(url('/ws'))
  warm.send(1, 'warm')
  assert.equal((await warm.next()).payload.toString(), 'warm')
  await warm.close()
  await sleep(200)
  const fds0 = fdCount(pid)

  const t0 = Date.now()
  let answered = await upgradesAnswered()
  for (let done = 0; done < HANGUPS; done += BATCH) {
    const held = await Promise.all(Array.from({ length: BATCH }, heldUpgrade))
    // every 101 is with sbxd (the server wrote it; the agent passes it on at once), then the
    // bodies and the resets go out together; a cap already reached answers 429 instead
    const want = answered + BATCH
    for (let i = 0; i < 30 && (answered = await upgradesAnswered()) < want; i++) await sleep(100)
    await sleep(100)
    held.forEach((h, i) => h.hangUp(i * 20)) // 0..0.5 ms: wherever sbxd's answer is then
  }
  const hangupMs = Date.now() - t0

  // the count is back: a whole cap's worth opens (and echoes), and not one more
  await sleep(300)
  const open = []
  try {
    for (let i = 0; i < CAP; i += 32) {
      const n = Math.min(32, CAP - i)
      const got = await Promise.allSettled(Array.from({ length: n }, () => websocket(url('/ws'))))
      for (const g of got) if (g.status === 'fulfilled') open.push(g.value)
      const refused = got.filter((g) => g.status === 'rejected').map((g) => g.reason.status ?? g.reason.message)
      assert.deepEqual(refused, [], `after ${HANGUPS} hang-ups, WebSocket ${i + 1}..${i + n} of ${CAP}`)
    }
    const last = open[open.length - 1]
    last.send(1, 'still relayed')
    assert.equal((await last.next()).payload.toString(), 'still relayed')
    const past = await websocket(url('/ws')).then(() => null, (e) => e)
    assert.equal(past?.status, 429, `the ${CAP + 1}th WebSocket is refused`)
  } finally {
    await Promise.all(open.map((w) => w.close().catch(() => {})))
  }

  // nothing held: no agent connection (nor anything else) per hang-up stays open in sbxd
  const fds = await fdsSettle(pid, fds0 + 16)
  assert.ok(fds <= fds0 + 16, `sbxd has ${fds} descriptors open, ${fds0} before the hang-ups`)
  console.log(`# ${HANGUPS} hang-ups in ${hangupMs} ms; sbxd descriptors ${fds0} before, ${fds} after`)
})

// The native terminal (/v1/sandboxes/{id}/terminal) answers its 101 once the sandbox's agent
// opened the shell: a client resetting its connection meanwhile leaves nothing behind either.
test('clients resetting the terminal\'s WebSocket before its 101 leave no connection behind in sbxd', async () => {
  const pid = sbxdPid()
  assert.ok(pid, 'sbxd runs on this machine (scripts/test-node.sh)')
  await sleep(200)
  const fds0 = fdCount(pid)
  const head = `GET /v1/sandboxes/${sbx.sandboxId}/terminal HTTP/1.1\r\nHost: ${api.host}\r\n` +
    `Authorization: Bearer ${process.env.E2B_API_KEY}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    'Sec-WebSocket-Version: 13\r\n'
  for (let done = 0; done < HANGUPS; done += BATCH) {
    await Promise.all(Array.from({ length: BATCH }, (_, i) => new Promise((resolve) => {
      const sock = net.connect(+api.port, '127.0.0.1', () => {
        sock.write(`${head}Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`)
        // 1..4 ms later: the reset lands before, during or after the shell is opened
        setTimeout(() => { sock.resetAndDestroy(); resolve() }, i % 5)
      })
      sock.on('error', () => resolve())
    })))
    await sleep(50)
  }
  const fds = await fdsSettle(pid, fds0 + 16)
  assert.ok(fds <= fds0 + 16, `sbxd has ${fds} descriptors open, ${fds0} before the resets`)
})
