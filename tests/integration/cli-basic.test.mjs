// The sbx CLI against the running sbxd: sandbox commands, exit codes, --json, files, mcp.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, writeFileSync, readFileSync, mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { URL_, KEY, v1 } from './v1-lib.mjs'

const SBX = join(process.env.SBX_TEST_BUILD || 'build', 'cli/sbx')
const skip = existsSync(SBX) ? false : `${SBX} not built`
const env = { ...process.env, SBX_URL: URL_, SBX_API_KEY: KEY }
const sbx = (args, input) => spawnSync(SBX, args, { env, input, encoding: 'utf8', timeout: 60000 })

test('sandbox create, exec (exit code), run-code, files, list, kill', { skip }, () => {
  let r = sbx(['sandbox', 'create', '--env', 'NAME=cli'])
  assert.equal(r.status, 0, r.stderr)
  const id = r.stdout.trim()
  assert.match(id, /^[a-z0-9]+$/)
  try {
    r = sbx(['sandbox', 'exec', id, 'echo "hi $NAME"; echo e >&2; exit 7'])
    assert.equal(r.status, 7)
    assert.equal(r.stdout, 'hi cli\n')
    assert.equal(r.stderr, 'e\n')
    r = sbx(['--json', 'sandbox', 'exec', id, 'echo x'])
    assert.equal(JSON.parse(r.stdout).stdout, 'x\n')
    r = sbx(['sandbox', 'run-code', id, '--lang', 'python', 'print(6*7)'])
    assert.equal(r.status, 0)
    assert.equal(r.stdout, '42\n')
    r = sbx(['sandbox', 'exec', id, 'sleep 5', '--timeout-ms', '300'])
    assert.equal(r.status, 124)
    const dir = mkdtempSync(join(tmpdir(), 'sbx-cli-'))
    writeFileSync(join(dir, 'in.txt'), 'file body\n')
    r = sbx(['files', 'put', id, join(dir, 'in.txt'), '/home/user/in.txt'])
    assert.equal(r.status, 0, r.stderr)
    r = sbx(['files', 'get', id, '/home/user/in.txt', join(dir, 'out.txt')])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(readFileSync(join(dir, 'out.txt'), 'utf8'), 'file body\n')
    r = sbx(['files', 'ls', id, '/home/user'])
    assert.match(r.stdout, /file +10 +in\.txt/)
    r = sbx(['files', 'get', id, '/nope'])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /^sbx: .*HTTP 404/)
    r = sbx(['sandbox', 'list'])
    assert.match(r.stdout, /^ID +TEMPLATE/)
    assert.match(r.stdout, new RegExp(id))
    r = sbx(['--json', 'sandbox', 'list'])
    assert.ok(JSON.parse(r.stdout).some((s) => s.id === id))
    // the terminal over WebSocket, driven from a pipe: output comes back, the exit code is the shell's
    r = sbx(['sandbox', 'terminal', id], 'echo hi-$((2+3))\nexit 4\n')
    assert.equal(r.status, 4, r.stderr)
    assert.match(r.stdout, /hi-5/)
    r = sbx(['status'])
    assert.match(r.stdout, /up, \d+ sandbox/)
  } finally {
    r = sbx(['sandbox', 'kill', id])
    assert.equal(r.status, 0)
  }
  r = sbx(['sandbox', 'exec', id, 'true'])
  assert.equal(r.status, 1)
  r = spawnSync(SBX, ['status'], { env: { ...env, SBX_API_KEY: 'wrong' }, encoding: 'utf8' })
  assert.equal(r.status, 1)
  assert.match(r.stderr, /401/)
  assert.equal(sbx(['bogus']).status, 2)
})

test('with no URL or key in the environment, the CLI finds both in the state dir', { skip }, () => {
  const bare = { PATH: process.env.PATH, SBX_STATE_DIR: process.env.SBX_TEST_STATE }
  let r = spawnSync(SBX, ['--json', 'keys'], { env: bare, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { key: KEY, url: URL_ })
  r = spawnSync(SBX, ['keys'], { env: bare, encoding: 'utf8' })
  assert.equal(r.stdout, `export SBX_URL=${URL_}\nexport SBX_API_KEY=${KEY}\n`)
  // the lines sbxd prints at start, for the E2B SDKs (sbxd's journal says where the key is)
  r = spawnSync(SBX, ['keys', '--e2b'], { env: bare, encoding: 'utf8' })
  assert.equal(r.stdout, `export E2B_API_URL=${URL_}\nexport E2B_SANDBOX_URL=${URL_}\n` +
    `export E2B_VOLUME_API_URL=${URL_}\nexport E2B_API_KEY=${KEY}\n`)
  r = spawnSync(SBX, ['status'], { env: bare, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, new RegExp(`sbxd at ${URL_}: up`))
})

test('sbx mcp: a stdio session with state across calls', { skip }, () => {
  const msgs = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cli-test', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'n = 20' } } },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'n + 22' } } },
  ]
  const r = sbx(['mcp'], msgs.map((m) => JSON.stringify(m)).join('\n') + '\n')
  assert.equal(r.status, 0, r.stderr)
  const out = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(out.map((o) => o.id), [1, 2, 3, 4])
  assert.equal(out[0].result.serverInfo.name, 'sbx')
  assert.ok(out[1].result.tools.length >= 6)
  assert.equal(out[3].result.content[0].text, '42\n')
})

// An interactive `sbx mcp`: lines in as a host writes them, answers read as they come.
function mcpProcess() {
  const p = spawn(SBX, ['mcp'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
  let buf = ''
  const waiting = []
  const seen = []
  p.stdout.on('data', (d) => {
    buf += d
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, i))
      buf = buf.slice(i + 1)
      seen.push(msg.id)
      const w = waiting.findIndex((x) => x.id === msg.id)
      if (w >= 0) waiting.splice(w, 1)[0].resolve(msg)
    }
  })
  const send = (m) => p.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n')
  const request = (id, method, params) => new Promise((resolve) => { waiting.push({ id, resolve }); send({ id, method, params }) })
  const exited = new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal })))
  return { p, send, request, seen, exited }
}

test('sbx mcp: ping and cancel reach sbxd while a call runs; SIGTERM ends the session', { skip }, async () => {
  const m = mcpProcess()
  const init = await m.request(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cli-test', version: '1' } })
  assert.equal(init.result.serverInfo.name, 'sbx')
  m.send({ method: 'notifications/initialized' })
  assert.equal((await m.request(2, 'tools/call', { name: 'run_python', arguments: { code: 'state = "kept"' } })).result.isError, false)
  const slow = m.request(3, 'tools/call', { name: 'run_python', arguments: { code: 'import time\ntime.sleep(60)\nstate = "overwritten"' } })
  await new Promise((r) => setTimeout(r, 1000))
  const pong = await m.request(4, 'ping', {})
  assert.deepEqual(pong.result, {})
  assert.deepEqual(m.seen.slice(-1), [4]) // answered while call 3 still runs
  m.send({ method: 'notifications/cancelled', params: { requestId: 3 } })
  const r3 = await slow
  assert.equal(r3.result.structuredContent.cancelled, true)
  assert.equal((await m.request(5, 'tools/call', { name: 'run_python', arguments: { code: 'state' } })).result.content[0].text, 'kept\n')

  const before = (await v1('GET', '/v1/sandboxes')).json.sandboxes.length
  m.request(6, 'tools/call', { name: 'run_python', arguments: { code: 'import time\ntime.sleep(60)' } })
  await new Promise((r) => setTimeout(r, 500))
  m.p.kill('SIGTERM')
  assert.deepEqual(await m.exited, { code: 128 + 15, signal: null })
  assert.equal((await v1('GET', '/v1/sandboxes')).json.sandboxes.length, before - 1)
})
