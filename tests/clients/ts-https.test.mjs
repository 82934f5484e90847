// The TypeScript client over HTTPS (sbxd --tls-cert with a test CA, trusted through
// NODE_EXTRA_CA_CERTS as a Node user would): REST, a streamed process output, a watch and the
// terminal over wss:// with the ws package. The client runs in a child node (the CA is read at
// start-up).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startSbxd, realTemplates, REAL, makeTestCerts } from '../integration/sbxd.mjs'
import { buildClient, TOP } from './ts-lib.mjs'

let d, dir

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sbx-ts-tls-'))
  makeTestCerts(dir)
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')] })
})

after(async () => {
  try {
    // startSbxd's stop() lists over http://: kill what is left through the client first
    if (d) await run(`for (const s of await Sbx.list()) await (await Sbx.connect(s.id)).kill()`).catch(() => {})
    await d?.stop()
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
})

function run(body, extraEnv = {}) {
  const script = `import { Sbx } from ${JSON.stringify(buildClient())}
import WebSocket from 'ws'
${body}`
  return promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: join(TOP, 'tests'), timeout: 120_000,
    env: { PATH: process.env.PATH, SBX_URL: `https://127.0.0.1:${d.port}`, SBX_API_KEY: d.key,
      NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem'), ...extraEnv },
  })
}

test('REST, streams, watch and the wss:// terminal over HTTPS', async () => {
  const { stdout } = await run(`
const sb = await Sbx.create({ WebSocket })
const out = {}
try {
  out.exec = (await sb.exec(['echo', 'over tls'])).check().stdout
  await sb.files.write('/tmp/t.bin', new Uint8Array([0, 1, 255]))
  out.bytes = [...await sb.files.readBytes('/tmp/t.bin')]
  const p = await sb.processes.start('echo a; sleep 0.2; echo b')
  out.stream = new TextDecoder().decode(await p.stream().readAll())
  const w = await sb.files.watch('/tmp')
  await sb.files.write('/tmp/seen', '1')
  for await (const ev of w) { out.watch = ev.path; break }
  const t = await sb.terminal({ cols: 70, rows: 10 })
  t.send('stty size; exit 2\\n')
  await t.expect('10 70')
  out.exit = await t.wait(10000)
} finally { await sb.kill() }
console.log(JSON.stringify(out))`)
  assert.deepEqual(JSON.parse(stdout.trim().split('\n').pop()),
    { exec: 'over tls\n', bytes: [0, 1, 255], stream: 'a\nb\n', watch: '/tmp/seen', exit: 2 })
  // without the CA the certificate is refused: a connection error, not a hang
  await assert.rejects(run(`await Sbx.list({ maxRetries: 0 })`, { NODE_EXTRA_CA_CERTS: '' }), /SbxConnectionError/)
})
