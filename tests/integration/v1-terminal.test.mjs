// The WebSocket terminal driven by a real client (npm `ws`, pinned in tests/package.json).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { URL_, KEY, v1, createSandbox, killSandbox } from './v1-lib.mjs'

let id
before(async () => { id = await createSandbox() })
after(async () => { if (id) await killSandbox(id) })

const wsUrl = (q = '') => `${URL_.replace(/^http/, 'ws')}/v1/sandboxes/${id}/terminal${q}`

// Collects output; waitFor resolves once the accumulated output matches re.
function open(url, opts = { headers: { Authorization: `Bearer ${KEY}` } }) {
  const ws = new WebSocket(url, opts)
  const st = { out: '', texts: [], closed: false, ws }
  const waiters = []
  const check = () => { for (const w of [...waiters]) if (w.re.test(st.out)) { waiters.splice(waiters.indexOf(w), 1); w.resolve() } }
  ws.on('message', (data, isBinary) => { if (isBinary) st.out += data.toString(); else st.texts.push(JSON.parse(data.toString())); check() })
  st.closedP = new Promise((resolve) => ws.on('close', (code) => { st.closed = true; st.code = code; resolve(code) }))
  st.opened = new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); ws.on('unexpected-response', (req, res) => { res.resume(); req.destroy(); reject(Object.assign(new Error('http ' + res.statusCode), { status: res.statusCode })) }) })
  st.waitFor = (re, ms = 10000) => new Promise((resolve, reject) => {
    waiters.push({ re, resolve })
    check()
    setTimeout(() => reject(new Error(`timeout waiting for ${re}; got ${JSON.stringify(st.out.slice(-300))}`)), ms).unref()
  })
  return st
}

test('terminal: interactive shell, input, resize, exit code', async () => {
  const t = open(wsUrl('?cols=100&rows=30'))
  await t.opened
  t.ws.send(Buffer.from('stty size; echo "u=$(id -un) tty=$(tty)"\n'))
  await t.waitFor(/30 100/)
  await t.waitFor(/u=user tty=\/dev\/pts\//)
  t.ws.send(JSON.stringify({ type: 'resize', cols: 120, rows: 40 }))
  t.ws.send(JSON.stringify({ type: 'input', data: 'stty size\n' }))
  await t.waitFor(/40 120/)
  // plain text that is not a control message is typed as is (websocat style)
  t.ws.send('echo typed-$((20+22))\n')
  await t.waitFor(/typed-42/)
  t.ws.send('exit 5\n')
  await t.closedP
  assert.deepEqual(t.texts.at(-1), { type: 'exit', exit_code: 5 })
})

test('terminal: closing the socket ends the shell; auth and handshake errors', async () => {
  const t = open(wsUrl())
  await t.opened
  t.ws.send('echo $$ > /tmp/term.pid; sleep 1000\n')
  await new Promise((r) => setTimeout(r, 300))
  t.ws.close()
  await t.closedP
  let alive = true
  for (let i = 0; i < 50 && alive; i++) {
    const r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'kill -0 $(cat /tmp/term.pid) 2>/dev/null && echo alive || echo gone' } })
    alive = r.json.result.stdout.trim() === 'alive'
    if (alive) await new Promise((r2) => setTimeout(r2, 50))
  }
  assert.equal(alive, false)
  // a browser cannot send Authorization: ?token= works for the terminal
  const b = open(wsUrl(`?token=${KEY}`), {})
  await b.opened
  b.ws.close()
  await b.closedP
  await assert.rejects(open(wsUrl(), {}).opened, (e) => e.status === 401)
  await assert.rejects(open(wsUrl('?user=mallory')).opened, (e) => e.status === 400)
  const r = await v1('GET', `/v1/sandboxes/${id}/terminal`)
  assert.equal(r.status, 400)
  assert.match(r.json.error.message, /WebSocket/)
  const u = `${URL_.replace(/^http/, 'ws')}/v1/sandboxes/nosuch/terminal`
  await assert.rejects(open(u).opened, (e) => e.status === 404)
})

test('terminal: a lost connection keeps the shell; ?session= takes it over, output replayed', async () => {
  const a = open(wsUrl())
  await a.opened
  await until(() => a.texts.length > 0)
  const session = a.texts[0]
  assert.equal(session.type, 'session')
  assert.match(session.id, /^[0-9a-f]{32}$/)
  a.ws.send('export MARK=kept-$((40+2)); echo $$ > /tmp/t1.pid; echo ready-$((1+1))\n')
  await a.waitFor(/ready-2/)
  // the TCP connection drops without a close frame: a network blip
  a.ws.terminate()
  await a.closedP
  await new Promise((r) => setTimeout(r, 300))

  const b = open(wsUrl(`?session=${session.id}&cols=90&rows=20`))
  await b.opened
  await b.waitFor(/ready-2/) // the shell's output so far, replayed
  assert.deepEqual(b.texts[0], { type: 'session', id: session.id })
  b.ws.send('echo "$MARK $(cat /tmp/t1.pid) $$"; stty size\n')
  const m = await b.waitFor(/kept-42 (\d+) (\d+)/)
  const [pidFile, pidNow] = b.out.match(/kept-42 (\d+) (\d+)/).slice(1)
  assert.equal(pidFile, pidNow, 'the same shell')
  await b.waitFor(/20 90/) // the taker's size
  void m

  // a second taker wins; the first one's input is ignored from then on
  const c = open(wsUrl(`?session=${session.id}`))
  await c.opened
  await c.waitFor(/kept-42/)
  b.ws.send('echo from-b-$((3*3))\n')
  c.ws.send('echo from-c-$((4*4))\n')
  await c.waitFor(/from-c-16/)
  await new Promise((r) => setTimeout(r, 300))
  assert.doesNotMatch(c.out, /from-b-9/)
  // a clean close of the owner ends the shell; the stale one's close changes nothing after it
  c.ws.close()
  await c.closedP
  let alive = true
  for (let i = 0; i < 50 && alive; i++) {
    const r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'kill -0 $(cat /tmp/t1.pid) 2>/dev/null && echo alive || echo gone' } })
    alive = r.json.result.stdout.trim() === 'alive'
    if (alive) await new Promise((r2) => setTimeout(r2, 50))
  }
  assert.equal(alive, false)
  b.ws.close()
  await b.closedP

  // the session is over: a taker gets 404; a malformed id 400
  await assert.rejects(open(wsUrl(`?session=${session.id}`)).opened, (e) => e.status === 404)
  await assert.rejects(open(wsUrl('?session=../../x')).opened, (e) => e.status === 400)
})

async function until(fn, ms = 5000) {
  const end = Date.now() + ms
  while (!fn()) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 20))
  }
}
