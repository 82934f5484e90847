// MCP over streamable HTTP (/mcp): a client session end to end, with a short idle timeout
// (Sbx-Mcp-Idle-Timeout) so the reap-and-recreate path runs in seconds.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { URL_, KEY, v1 } from './v1-lib.mjs'

const IDLE_S = 3
let sid
let nextId = 1

async function rpc(method, params, { session = sid, headers = {}, notify = false } = {}) {
  const h = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }
  if (session) h['Mcp-Session-Id'] = session
  const msg = { jsonrpc: '2.0', method, params }
  if (!notify) msg.id = nextId++
  const res = await fetch(`${URL_}/mcp`, { method: 'POST', headers: h, body: JSON.stringify(msg) })
  const text = await res.text()
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined }
}

async function call(name, args) {
  const r = await rpc('tools/call', { name, arguments: args })
  assert.equal(r.status, 200)
  assert.ok(r.json.result, JSON.stringify(r.json))
  return r.json.result
}
const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('')

after(async () => {
  if (sid) await fetch(`${URL_}/mcp`, { method: 'DELETE', headers: { Authorization: `Bearer ${KEY}`, 'Mcp-Session-Id': sid } })
})

test('initialize, tools/list and protocol errors', async () => {
  const r = await rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    { session: null, headers: { 'Sbx-Mcp-Idle-Timeout': String(IDLE_S) } })
  assert.equal(r.status, 200)
  sid = r.headers.get('mcp-session-id')
  assert.match(sid, /^[0-9a-f]{32}$/)
  assert.equal(r.json.result.protocolVersion, '2025-06-18')
  assert.ok(r.json.result.capabilities.tools)
  assert.equal((await rpc('notifications/initialized', {}, { notify: true })).status, 202)
  const l = await rpc('tools/list', {})
  const names = l.json.result.tools.map((t) => t.name).sort()
  assert.deepEqual(names, ['get_file', 'install_package', 'put_file', 'run_node', 'run_python', 'run_shell', 'upload_file'])
  for (const t of l.json.result.tools) {
    assert.equal(t.inputSchema.type, 'object')
    assert.ok(t.description.length > 40)
  }
  assert.match(l.json.result.tools.find((t) => t.name === 'run_python').description, /large file/)
  for (const t of l.json.result.tools) {
    assert.ok(t.title && t.annotations.title === t.title, t.name)
    assert.equal(t.annotations.readOnlyHint, t.name === 'get_file', t.name)
    assert.equal(t.annotations.openWorldHint, t.name === 'install_package', t.name)
  }
  assert.equal((await rpc('ping', {})).json.result !== undefined, true)
  assert.equal((await rpc('tools/list', {}, { session: null })).status, 400)
  assert.equal((await rpc('tools/list', {}, { session: 'f'.repeat(32) })).status, 404)
  assert.equal((await rpc('nope/method', {})).json.error.code, -32601)
  assert.equal((await rpc('tools/call', { name: 'nope', arguments: {} })).json.error.code, -32602)
  assert.equal((await rpc('tools/call', { name: 'run_python', arguments: {} })).json.error.code, -32602)
  const unauth = await fetch(`${URL_}/mcp`, { method: 'POST', body: '{}' })
  assert.equal(unauth.status, 401)
  assert.equal((await fetch(`${URL_}/mcp`, { headers: { Authorization: `Bearer ${KEY}` } })).status, 405)
})

test('tools/call: every tool, state persisting across calls', async () => {
  let r = await call('run_python', { code: 'import math\nx = 41\nprint("hello")' })
  assert.equal(r.isError, false)
  assert.equal(text(r), 'hello\n')
  assert.equal(r.structuredContent.sessionPersistent, true)
  r = await call('run_python', { code: 'x + 1' })
  assert.equal(text(r), '42\n')
  r = await call('run_python', { code: 'math.sqrt(16)' })
  assert.equal(text(r), '4.0\n')
  // a Python error is ordinary output of the tool
  r = await call('run_python', { code: 'print("before")\n1/0' })
  assert.equal(r.isError, false)
  assert.match(text(r), /^before\n/)
  assert.match(text(r), /ZeroDivisionError: division by zero/)
  assert.equal(r.structuredContent.error.name, 'ZeroDivisionError')
  assert.equal(r.structuredContent.stdout, 'before\n')
  r = await call('run_python', { code: 'x' })
  assert.equal(text(r), '41\n')
  assert.equal(r.structuredContent.error, null)
  assert.deepEqual(r.structuredContent.results, [{ formats: ['text'], text: '41', isMainResult: true }])
  // subprocess output reaches the caller too, and stderr is marked
  r = await call('run_python', { code: 'import subprocess, sys\nsubprocess.run(["echo", "from-child"])\nprint("warn", file=sys.stderr)\nNone' })
  assert.equal(text(r), 'from-child\n[stderr]\nwarn\n')
  // functions and imports persist too; a chart comes back as an image the model can see
  r = await call('run_python', { code: 'def sq(v):\n    return v * v' })
  assert.equal(text(r), '(no output)')
  r = await call('run_python', { code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [sq(1), sq(2), sq(3)])\nplt.title("squares")\nplt.show()' })
  const img = r.content.find((c) => c.type === 'image')
  assert.ok(img, JSON.stringify(r.content.map((c) => c.type)))
  assert.equal(img.mimeType, 'image/png')
  assert.equal(Buffer.from(img.data, 'base64').subarray(1, 4).toString(), 'PNG')
  assert.match(text(r), /Figure size/)
  assert.ok(r.structuredContent.results.some((x) => x.formats.includes('png') && x.formats.includes('chart')))
  // JavaScript state persists across calls as well
  r = await call('run_node', { code: 'const seen = [1, 2]\nlet n = 40\nfunction twice(v) { return 2 * v }' })
  assert.equal(r.isError, false, text(r))
  r = await call('run_node', { code: 'n += 2\nconsole.log(JSON.stringify({ n, seen }))\ntwice(n)' })
  assert.equal(text(r), '{"n":42,"seen":[1,2]}\n84\n')
  r = await call('run_node', { code: 'const { readFileSync } = await import("node:fs")\nreadFileSync("/etc/hostname", "utf8").length > 0' })
  assert.equal(text(r), 'true\n')
  r = await call('run_node', { code: 'undefinedThing.x' })
  assert.equal(r.isError, false)
  assert.equal(r.structuredContent.error.name, 'ReferenceError')
  assert.match(text(r), /undefinedThing is not defined/)
  assert.equal((await call('run_node', { code: 'twice(seen.length)' })).content[0].text, '4\n')

  r = await call('put_file', { path: '/home/user/data/in.csv', content: 'a,b\n1,2\n3,4\n' })
  assert.equal(r.isError, false)
  assert.equal(r.structuredContent.path, '/home/user/data/in.csv')
  r = await call('upload_file', { path: 'bin.dat', content_base64: Buffer.from([0, 1, 2, 255]).toString('base64') })
  assert.equal(r.structuredContent.path, '/home/user/bin.dat')
  r = await call('run_python', { code: 'import csv\nrows = list(csv.reader(open("/home/user/data/in.csv")))\nlen(rows)' })
  assert.equal(text(r), '3\n')
  r = await call('run_shell', { command: 'cd data && wc -l < in.csv && ls ~' })
  assert.equal(text(r), '3\nbin.dat\ndata\n')
  // the agent's refusal reaches the model as a tool failure with its reason
  r = await call('run_shell', { command: '' })
  assert.equal(r.isError, true)
  assert.match(text(r), /cmd must be a non-empty/)
  r = await call('run_shell', { command: 'echo oops >&2; exit 4' })
  assert.equal(r.isError, false)
  assert.match(text(r), /oops/)
  assert.match(text(r), /exit code 4/)

  r = await call('get_file', { path: '/home/user/data/in.csv' })
  assert.equal(text(r), 'a,b\n1,2\n3,4\n')
  r = await call('get_file', { path: 'bin.dat' })
  assert.equal(r.content[0].type, 'resource')
  assert.deepEqual([...Buffer.from(r.content[0].resource.blob, 'base64')], [0, 1, 2, 255])
  // an image comes back as image content a model can see
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
  await call('put_file', { path: '/tmp/chart.png', content_base64: png })
  r = await call('get_file', { path: '/tmp/chart.png' })
  assert.equal(r.content[0].type, 'image')
  assert.equal(r.content[0].mimeType, 'image/png')
  assert.equal(r.content[0].data, png)
  r = await call('get_file', { path: 'bin.dat', content_type: 'image/png' })
  assert.equal(r.content[0].type, 'image')
  // tool failures carry a message a model can act on
  r = await call('get_file', { path: '/nope/missing.txt' })
  assert.equal(r.isError, true)
  assert.match(text(r), /^get_failed: reading \/nope\/missing.txt failed: /)
  assert.doesNotMatch(text(r), /refused/) // the agent's own reason reaches the model
  const reason = text(r).replace(/^get_failed: reading \/nope\/missing.txt failed: /, '')
  assert.ok(reason.length > 5, reason)
  r = await call('put_file', { path: '/proc/forbidden/x', content: 'x' })
  assert.equal(r.isError, true)
  assert.match(text(r), /^put_failed: writing \/proc\/forbidden\/x failed: /)
  assert.doesNotMatch(text(r), /refused/)
  r = await call('install_package', { manager: 'pip', packages: ['requests'] })
  assert.equal(r.isError, true)
  assert.match(text(r), /no network/)
  assert.equal((await rpc('tools/call', { name: 'install_package', arguments: { packages: ['x; rm -rf /'] } })).json.error.code, -32602)
})

test('a call past its timeout is interrupted and the kernel keeps its state', async () => {
  let r = await call('run_python', { code: 'kept = "yes"\nimport time\nprint("started", flush=True)\ntime.sleep(60)\nprint("never")', timeout_ms: 1500 })
  assert.equal(r.isError, false)
  assert.equal(r.structuredContent.timedOut, true)
  assert.match(text(r), /^started\n/)
  assert.match(text(r), /timed out after 1500 ms/)
  assert.doesNotMatch(text(r), /never/)
  r = await call('run_python', { code: 'kept' })
  assert.equal(text(r), 'yes\n')
  r = await call('run_node', { code: 'globalThis.mark = 7\nawait new Promise((r) => setTimeout(r, 60000))', timeout_ms: 1500 })
  assert.equal(r.structuredContent.timedOut, true)
  r = await call('run_node', { code: 'mark' })
  assert.equal(text(r), '7\n')
})

test('notifications/cancelled interrupts the call in flight without waiting for it', async () => {
  const id = nextId++
  const h = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid }
  const pending = fetch(`${URL_}/mcp`, {
    method: 'POST', headers: h,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time\nprint("working", flush=True)\ntime.sleep(60)\nfinished = True', timeout_ms: 120000 } } }),
  }).then((r) => r.json())
  await new Promise((r) => setTimeout(r, 1500))
  // another id is ignored; the notification is answered while the call still runs
  assert.equal((await rpc('notifications/cancelled', { requestId: id + 1000 }, { notify: true })).status, 202)
  assert.equal((await rpc('notifications/cancelled', { requestId: id, reason: 'user stop' }, { notify: true })).status, 202)
  const r = (await pending).result
  assert.equal(r.structuredContent.cancelled, true)
  assert.equal(r.structuredContent.timedOut, false)
  assert.match(text(r), /^working\n/)
  assert.match(text(r), /cancelled by the client/)
  assert.equal(text(await call('run_python', { code: '"finished" in globals()' })), 'False\n')
  // a call cancelled while it waits behind another never runs
  const post = (id, code) => fetch(`${URL_}/mcp`, {
    method: 'POST', headers: h,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_python', arguments: { code } } }),
  }).then((r) => r.json())
  const firstId = nextId++, queuedId = nextId++
  const first = post(firstId, 'import time\ntime.sleep(3)\n"first done"')
  await new Promise((r) => setTimeout(r, 1000)) // the first holds the session by now
  const queued = post(queuedId, 'queued_ran = True')
  await new Promise((r) => setTimeout(r, 500))
  assert.equal((await rpc('notifications/cancelled', { requestId: queuedId }, { notify: true })).status, 202)
  assert.equal((await first).result.content[0].text, 'first done\n')
  const q = (await queued).result
  assert.equal(q.structuredContent.cancelled, true)
  assert.match(text(q), /before it started/)
  assert.equal(text(await call('run_python', { code: '"queued_ran" in globals()' })), 'False\n')
  // run_shell too: the command is killed
  const shellId = nextId++
  const shell = fetch(`${URL_}/mcp`, {
    method: 'POST', headers: h,
    body: JSON.stringify({ jsonrpc: '2.0', id: shellId, method: 'tools/call', params: { name: 'run_shell', arguments: { command: 'sleep 30; echo late > /tmp/shell-done' } } }),
  }).then((r) => r.json())
  await new Promise((r) => setTimeout(r, 1000))
  await rpc('notifications/cancelled', { requestId: shellId }, { notify: true })
  const rs = (await shell).result
  assert.equal(rs.structuredContent.cancelled, true)
  assert.match(text(rs), /cancelled by the client/)
  assert.equal(text(await call('run_shell', { command: 'pgrep -x sleep || echo none; ls /tmp/shell-done 2>/dev/null || echo absent' })), 'none\nabsent\n')
  assert.equal((await rpc('notifications/cancelled', { requestId: id }, { notify: true, session: 'e'.repeat(32) })).status, 404)
})

// SSE events of a streamed answer, as parsed JSON-RPC messages.
function sseMessages(body) {
  return body.split('\n\n').filter((e) => e.trim()).map((e) => {
    const lines = e.split('\n')
    assert.ok(lines.includes('event: message'), e)
    return JSON.parse(lines.find((l) => l.startsWith('data: ')).slice(6))
  })
}

test('a call with a progressToken from an SSE client streams progress, then its answer', async () => {
  const h = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid }
  const id = nextId++
  const res = await fetch(`${URL_}/mcp`, {
    method: 'POST', headers: h,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time\ntime.sleep(5)\nprint("done")' }, _meta: { progressToken: 'tok-1' } } }),
  })
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type'), /^text\/event-stream/)
  const msgs = sseMessages(await res.text())
  const progress = msgs.filter((m) => m.method === 'notifications/progress')
  assert.ok(progress.length >= 2, JSON.stringify(msgs))
  for (const p of progress) assert.equal(p.params.progressToken, 'tok-1')
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].params.progress > progress[i - 1].params.progress)
  const last = msgs[msgs.length - 1]
  assert.equal(last.id, id)
  assert.equal(last.result.content[0].text, 'done\n')

  // no text/event-stream in Accept: a plain JSON answer, progressToken or not
  const j = await fetch(`${URL_}/mcp`, {
    method: 'POST', headers: { ...h, Accept: 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'run_python', arguments: { code: '2 + 2' }, _meta: { progressToken: 7 } } }),
  })
  assert.match(j.headers.get('content-type'), /^application\/json/)
  assert.equal((await j.json()).result.content[0].text, '4\n')

  // a streaming client that goes away cancels its call: the cell never finishes
  const ac = new AbortController()
  const gone = fetch(`${URL_}/mcp`, {
    method: 'POST', headers: h, signal: ac.signal,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time\ntime.sleep(30)\nslept = True' }, _meta: { progressToken: 'tok-2' } } }),
  }).then((r) => r.text())
  await new Promise((r) => setTimeout(r, 1000))
  ac.abort()
  await assert.rejects(gone)
  assert.equal(text(await call('run_python', { code: '"slept" in globals()' })), 'False\n')
})

test('output past the bound is cut with a note, and the kernel stays usable', async () => {
  const r = await call('run_python', { code: 'for i in range(3000):\n    print("y" * 1000)' })
  assert.equal(r.isError, false)
  assert.ok(r.structuredContent.outputBytesDropped > 1900000, String(r.structuredContent.outputBytesDropped))
  assert.match(text(r), /output cut: \d+ more bytes were dropped/)
  assert.ok(r.structuredContent.stdout.length <= 1024 * 1024)
  assert.equal(text(await call('run_python', { code: '6 * 7' })), '42\n')
})

test('idle reap: the sandbox goes after the idle timeout and comes back fresh, with a note', async () => {
  const before = (await v1('GET', '/v1/sandboxes')).json.sandboxes.length
  await new Promise((r) => setTimeout(r, (IDLE_S + 2.5) * 1000))
  assert.equal((await v1('GET', '/v1/sandboxes')).json.sandboxes.length, before - 1)
  let r = await call('run_python', { code: "'x' in globals()" })
  assert.match(text(r), /reaped/)
  assert.match(text(r), /False/)
  assert.equal(r.structuredContent.sandboxRecreated, true)
  r = await call('run_python', { code: 'x = 1\nx' })
  assert.equal(text(r), '1\n')
  // DELETE ends the session and its sandbox
  const d = await fetch(`${URL_}/mcp`, { method: 'DELETE', headers: { Authorization: `Bearer ${KEY}`, 'Mcp-Session-Id': sid } })
  assert.equal(d.status, 204)
  assert.equal((await rpc('tools/list', {})).status, 404)
  sid = undefined
})
