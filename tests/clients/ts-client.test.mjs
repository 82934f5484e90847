// Every method of the TypeScript client (clients/typescript) against a real sbxd.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { promisify } from 'node:util'
import WebSocket from 'ws'
import { client, inotifyInstances, sbxdLog, text, waitFor, buildClient } from './ts-lib.mjs'
import { dockerArchive, userImages } from '../lib/images.mjs'

const {
  Sbx, Images, AuthError, BadRequestError, CommandError, CommandTimeoutError, ConflictError,
  ForbiddenError, NotFoundError, OutputTooLargeError, PayloadTooLargeError, SandboxPausedError,
  SbxConnectionError, SbxTimeoutError, UnavailableError, LimitError,
} = client

let sb, imgDir, appTar
before(async () => {
  // the image fixture first: building it blocks the event loop (minutes when the images are
  // not built yet), and fetch would then reuse a keep-alive connection sbxd has closed meanwhile
  imgDir = mkdtempSync(join(tmpdir(), 'sbx-ts-img-'))
  // as users bring them (tests/lib/images): a docker save of Debian minbase with an app layer
  appTar = dockerArchive(userImages().minbaseApp, join(imgDir, 'app.tar'), 'registry.example.com/team/app:v1')
  sb = await Sbx.create({ template: 'base', env: { GREETING: 'hi there' }, metadata: { suite: 'ts' }, WebSocket })
})
after(async () => {
  if (sb) await sb.kill()
  if (imgDir) rmSync(imgDir, { recursive: true, force: true })
})

test('sandboxes: create with sizes, get, list, connect, pause, resume, kill', async () => {
  const s = await Sbx.create({ timeout: 120, env: { A: '1' }, metadata: { k: 'v' }, cpuCount: 1, memoryMb: 512 })
  try {
    assert.match(s.id, /^[a-z0-9]+$/)
    assert.deepEqual([s.info.template, s.info.state, s.info.cpuCount, s.info.memoryMb], ['base', 'running', 1, 512])
    assert.deepEqual(s.info.metadata, { k: 'v' })
    const left = (s.info.endAt - s.info.startedAt) / 1000
    assert.ok(left >= 110 && left <= 121, String(left))
    assert.ok((await Sbx.list()).some((x) => x.id === s.id))
    assert.equal((await (await Sbx.connect(s.id)).getInfo()).id, s.id)
    assert.equal((await s.exec('echo $A')).stdout, '1\n')
    const p = await s.processes.start('i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.05; done')
    assert.equal((await s.pause()).state, 'paused')
    assert.equal((await s.getInfo()).state, 'paused')
    const e = await s.exec('true').catch((x) => x)
    assert.ok(e instanceof SandboxPausedError && e instanceof ConflictError, String(e))
    assert.equal(e.status, 409)
    await assert.rejects(s.pause(), ConflictError)
    assert.equal((await s.resume({ timeout: 60 })).state, 'running')
    const n = Number(await s.files.read('/tmp/n'))
    await waitFor(async () => Number(await s.files.read('/tmp/n')) > n, 'the counter')
    assert.equal((await p.refresh()).running, true)
  } finally { await s.kill() }
  await assert.rejects(Sbx.connect(s.id), NotFoundError)
  await assert.rejects(s.kill(), NotFoundError)
})

test('exec, sh, check(), run-code', async () => {
  const r = await sb.exec(['python3', '-c', 'print(2+2)'], { timeoutMs: 30_000 })
  assert.equal(r.check(), r)
  assert.equal(r.stdout, '4\n')
  assert.equal((await sb.exec(['echo', '$HOME', '*'])).stdout, '$HOME *\n')
  assert.ok((await sb.sh('ls -la /tmp && date')).stdout.includes('total'))
  assert.equal((await sb.sh('echo "$GREETING"')).stdout, 'hi there\n')
  assert.equal((await sb.exec(['id', '-u'], { user: 'root' })).stdout, '0\n')
  const bad = await sb.sh('echo out; echo err >&2; exit 3')
  assert.deepEqual([bad.ok, bad.exitCode, bad.stdout, bad.stderr], [false, 3, 'out\n', 'err\n'])
  assert.throws(() => bad.check(), (e) => e instanceof CommandError && e.exitCode === 3 && e.stderr === 'err\n' && /exited with code 3/.test(e.message))
  const slow = await sb.sh('echo before; sleep 20', { timeoutMs: 500 })
  assert.equal(slow.timedOut, true)
  assert.equal(slow.stdout, 'before\n')
  assert.throws(() => slow.check(), CommandTimeoutError)
  assert.equal((await sb.exec(['no-such-binary'])).exitCode, 127)
  assert.throws(() => sb.exec([]), TypeError)
  assert.equal((await sb.runCode('print(2+2)', { lang: 'python' })).stdout, '4\n')
  assert.equal((await sb.runCode('print(6*7)')).stdout, '42\n')
  assert.equal((await sb.runCode("console.log([1,2].map(x => x * 2).join(','))", { lang: 'node' })).stdout, '2,4\n')
  assert.equal((await sb.runCode('x=5; echo "$((x*2))"', { lang: 'bash' })).stdout, '10\n')
  assert.equal((await sb.runCode('echo sh-$((1+1))', { lang: 'sh' })).stdout, 'sh-2\n')
  const boom = await sb.runCode("import sys; sys.exit('boom')")
  assert.equal(boom.exitCode, 1)
  assert.throws(() => boom.check(), CommandError)
  assert.equal((await sb.runCode('import time; time.sleep(5)', { timeoutMs: 300 })).timedOut, true)
  assert.throws(() => sb.runCode('1', { lang: 'cobol' }), TypeError)
  const many = await Promise.all([...Array(12).keys()].map((i) => sb.exec(['sh', '-c', `echo ${i}`])))
  assert.deepEqual(many.map((x) => x.stdout).sort(), [...Array(12).keys()].map((i) => `${i}\n`).sort())
})

test('files: text and bytes, list, stat, exists, mkdir, rename, remove, search', async () => {
  await sb.files.write('/tmp/a.txt', 'x')
  assert.equal(await sb.files.read('/tmp/a.txt'), 'x')
  const blob = new Uint8Array(256 * 1000).map((_, i) => i % 256)
  await sb.files.write('/tmp/d/e/blob.bin', blob)
  assert.deepEqual(await sb.files.readBytes('/tmp/d/e/blob.bin'), blob)
  await sb.files.write('/tmp/blob2.bin', new Blob([blob]))
  assert.equal((await sb.files.stat('/tmp/blob2.bin')).size, blob.length)
  await sb.files.write('rel.txt', 'héllo')
  assert.equal(await sb.files.read('/home/user/rel.txt'), 'héllo')
  const st = await sb.files.stat('/tmp/d/e/blob.bin')
  assert.deepEqual([st.type, st.size, st.name, st.path], ['file', 256000, 'blob.bin', '/tmp/d/e/blob.bin'])
  assert.equal((await sb.files.stat('/tmp/d')).type, 'dir')
  assert.equal(await sb.files.exists('/tmp/a.txt'), true)
  assert.equal(await sb.files.exists('/tmp/nope'), false)
  await sb.files.mkdir('/tmp/m/n/o')
  assert.deepEqual((await sb.files.list('/tmp/m')).map((e) => e.name), ['n'])
  await sb.files.rename('/tmp/a.txt', '/tmp/m/a2.txt')
  assert.equal(await sb.files.read('/tmp/m/a2.txt'), 'x')
  await assert.rejects(sb.files.remove('/tmp/m'), ConflictError)
  await sb.files.remove('/tmp/m', { recursive: true })
  assert.equal(await sb.files.exists('/tmp/m'), false)
  await assert.rejects(sb.files.read('/tmp/nope'), NotFoundError)
  await assert.rejects(sb.files.write('/etc/owned-by-root', 'x'), ForbiddenError)
  await sb.files.write('/etc/by-root-ts', 'ok', { user: 'root' })
  assert.equal(await sb.files.read('/etc/by-root-ts', { user: 'root' }), 'ok')
  await sb.files.write('/tmp/s/one.py', "print('needle here')\n")
  await sb.files.write('/tmp/s/sub/two.py', 'needle again\n')
  let r = await sb.files.search('/tmp/s', { name: '*.py' })
  assert.deepEqual(r.matches.map((m) => m.path).sort(), ['/tmp/s/one.py', '/tmp/s/sub/two.py'])
  r = await sb.files.search('/tmp/s', { content: 'needle' })
  assert.deepEqual(r.matches.map((m) => [m.path, m.line]).sort(), [['/tmp/s/one.py', 1], ['/tmp/s/sub/two.py', 1]])
  r = await sb.files.search('/tmp/s', { name: '*', maxResults: 1 })
  assert.equal(r.matches.length, 1)
  assert.equal(r.truncated, true)
  assert.throws(() => sb.files.search('/tmp/s', {}), TypeError)
})

test('watch: events in order; leaving the loop ends it on the server', async () => {
  await sb.files.mkdir('/tmp/w')
  assert.equal(inotifyInstances(sb.id), 0)
  const w = await sb.files.watch('/tmp/w', { recursive: true })
  assert.equal(inotifyInstances(sb.id), 1)
  await sb.files.write('/tmp/w/new.txt', '1')
  await sb.files.mkdir('/tmp/w/sub')
  await sb.files.write('/tmp/w/sub/deep.txt', '2')
  const seen = []
  for await (const ev of w) {
    seen.push([ev.type, ev.path, ev.isDir])
    if (ev.path === '/tmp/w/sub/deep.txt') break
  }
  assert.ok(w.closed)
  // a new file written as envd writes it: created, owned by its user (attrib), then its bytes
  assert.deepEqual(seen.slice(0, 3), [['create', '/tmp/w/new.txt', false], ['attrib', '/tmp/w/new.txt', false], ['modify', '/tmp/w/new.txt', false]])
  assert.ok(seen.some((e) => e[1] === '/tmp/w/sub' && e[2]))
  await waitFor(() => inotifyInstances(sb.id) === 0, 'the watch to end in the sandbox')
  const w2 = await sb.files.watch('/tmp/w')
  assert.equal(inotifyInstances(sb.id), 1)
  await w2.close()
  await waitFor(() => inotifyInstances(sb.id) === 0, 'close() to end the watch')
  await assert.rejects(sb.files.watch('/tmp/not-a-dir'), NotFoundError)
})

test('processes: start, list, get, logs, stream, stdin, signal, wait, kill', async () => {
  const p = await sb.processes.start(['sh', '-c', 'for i in 1 2 3; do echo line$i; sleep 0.2; done; echo done >&2; exit 4'], { cwd: '/tmp' })
  assert.ok(p.pid > 0 && p.info.running)
  assert.ok((await sb.processes.list()).some((x) => x.pid === p.pid))
  const chunks = []
  for await (const c of p.stream()) chunks.push(text(c))
  assert.equal(chunks.join(''), 'line1\nline2\nline3\ndone\n')
  assert.ok(chunks.length >= 3)
  const info = await p.wait({ timeoutMs: 10_000 })
  assert.deepEqual([info.status, info.exitCode, info.logBytes], ['exited', 4, 23])
  assert.equal(text(await p.logs(6)), 'line2\nline3\ndone\n')
  assert.equal((await sb.processes.get(p.pid)).info.exitCode, 4)
  assert.equal(text(await p.stream(6).readAll()), 'line2\nline3\ndone\n')
  const q = await sb.processes.start('echo "$X $(pwd)"', { env: { X: 'y' }, cwd: '/tmp' })
  await q.wait()
  assert.equal(text(await q.logs()), 'y /tmp\n')
  const cat = await sb.processes.start(['sh', '-c', 'while read l; do echo got:$l; done; echo eof'], { stdin: true })
  assert.equal(cat.info.stdin, true)
  await cat.writeStdin('one\n')
  await cat.writeStdin(new TextEncoder().encode('two\n'))
  await cat.closeStdin()
  assert.equal((await cat.wait({ timeoutMs: 10_000 })).exitCode, 0)
  assert.equal(text(await cat.logs()), 'got:one\ngot:two\neof\n')
  const srv = await sb.processes.start(['sh', '-c', 'trap "echo term; exit 3" TERM; echo ready; while :; do sleep 0.1; done'])
  await waitFor(async () => text(await srv.logs()).includes('ready'), 'ready')
  await assert.rejects(srv.wait({ timeoutMs: 300 }), SbxTimeoutError)
  await srv.signal('SIGTERM')
  assert.equal((await srv.wait({ timeoutMs: 10_000 })).exitCode, 3)
  await assert.rejects(srv.signal('TERM'), ConflictError)
  await assert.rejects(srv.signal('SIGNOPE'), BadRequestError)
  const hang = await sb.processes.start('sleep 1000')
  await hang.kill()
  assert.notEqual((await hang.wait({ timeoutMs: 10_000 })).exitCode, 0)
  await hang.kill()
  await assert.rejects(sb.processes.get(hang.pid), NotFoundError)
  await assert.rejects((await sb.processes.start('true')).writeStdin('x'), ConflictError)
  // leaving a stream early ends the follow request in sbxd
  const tick = await sb.processes.start('while :; do echo tick; sleep 0.05; done')
  for await (const c of tick.stream()) { assert.match(text(c), /^tick/); break }
  const path = `/v1/sandboxes/${sb.id}/processes/${tick.pid}/logs`
  await waitFor(() => sbxdLog().split('\n').some((l) => l.includes(path) && l.includes('(aborted)')), 'sbxd to end the request')
  await tick.kill()
})

test('terminal: with the ws package (headers-free, ?token=), resize, exit code, close kills', async () => {
  const t = await sb.terminal({ cols: 100, rows: 30 })
  t.send('stty size; echo u=$(id -un)\n')
  await t.expect('30 100')
  await t.expect('u=user')
  t.resize(120, 40)
  t.send('stty size\n')
  await t.expect(/40 120/)
  t.send('exit 5\n')
  assert.equal(await t.wait(10_000), 5)
  assert.equal(t.exitCode, 5)
  assert.equal(await t.recv(), null)
  const k = await sb.terminal()
  k.send('echo $$ > /tmp/term.pid; sleep 1000\n')
  await waitFor(() => sb.files.exists('/tmp/term.pid'), "the shell's pid")
  await k.close()
  await waitFor(async () => (await sb.sh('kill -0 $(cat /tmp/term.pid) 2>/dev/null && echo alive || echo gone')).stdout === 'gone\n', 'the shell to die')
  const r = await sb.terminal({ user: 'root' })
  r.send('id -u\n')
  await r.expect(/\r0\r\n/)
  await assert.rejects(r.expect('never', 300), SbxTimeoutError)
  await r.close()
  if (typeof globalThis.WebSocket !== 'function') { // Node 18-21: none built in, a clear error
    const bare = await Sbx.connect(sb.id)
    await assert.rejects(bare.terminal(), /no WebSocket in this runtime/)
  }
})

test('terminal: the platform WebSocket (as in a browser) works unflagged where it exists', async () => {
  // Node 20 has it behind --experimental-websocket; a browser and Node 22+ have it built in
  const script = `import { Sbx } from ${JSON.stringify(buildClient())}
const sb = await Sbx.connect(${JSON.stringify(sb.id)})
const t = await sb.terminal({ cols: 77, rows: 11 })
t.send('stty size; exit 7\\n')
await t.expect('11 77')
console.log('exit=' + await t.wait(10000))`
  const { stdout } = await promisify(execFile)(process.execPath, ['--experimental-websocket', '--no-warnings', '--input-type=module', '-e', script], { env: process.env })
  assert.equal(stdout.trim(), 'exit=7')
})

test('images: import (bytes and a stream), list, get, use, delete', async () => {
  const img = await Images.importArchive('ts-img', new Uint8Array(readFileSync(appTar)))
  assert.deepEqual([img.name, img.tag, img.template, img.format, img.layers.length], ['ts-img', 'latest', 'ts-img', 'docker', 2])
  // the image's own settings, kept in its record
  assert.deepEqual([img.user, img.workingDir, img.cmd], ['', '/app', ['python3', '/app/hello.py']])
  assert.ok(img.env.includes('LANG=C.UTF-8'))
  const again = await Images.importArchive('ts-img', Readable.toWeb(createReadStream(appTar)), { tag: 'v2' })
  assert.equal(again.template, 'ts-img:v2')
  assert.ok(again.layers.every((l) => l.reused))
  const names = (await Images.list()).map((i) => i.template)
  assert.ok(names.includes('ts-img') && names.includes('ts-img:v2'))
  assert.equal((await Images.get('ts-img:v2')).digest, again.digest)
  const s = await Sbx.create({ template: 'ts-img' })
  try {
    // E2B's defaults whatever the image says: the user "user" in /home/user
    assert.equal((await s.exec(['id', '-un'])).stdout, 'user\n')
    assert.equal((await s.sh('pwd')).stdout, '/home/user\n')
    assert.equal((await s.exec(['python3', '/app/hello.py'])).check().stdout, 'app on python 3\n')
  } finally { await s.kill() }
  await Images.delete('ts-img:v2')
  await Images.delete('ts-img')
  await assert.rejects(Images.get('ts-img'), NotFoundError)
})

test('configuration: SBX_* over E2B_*, then the state dir', async () => {
  const script = `import { Sbx, resolveConfig } from ${JSON.stringify(buildClient())}
const c = await resolveConfig()
console.log(JSON.stringify([c.url, c.apiKey === process.env.WANT_KEY, (await Sbx.list()).length >= 0]))`
  const run = (env) => promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, WANT_KEY: process.env.E2B_API_KEY, ...env } })
  const url = process.env.E2B_API_URL
  let { stdout } = await run({ SBX_STATE_DIR: process.env.SBX_TEST_STATE })
  assert.deepEqual(JSON.parse(stdout), [url, true, true])
  ;({ stdout } = await run({ SBX_URL: url + '/', SBX_API_KEY: process.env.E2B_API_KEY, E2B_API_URL: 'http://127.0.0.1:1' }))
  assert.deepEqual(JSON.parse(stdout), [url, true, true])
  await assert.rejects(run({ SBX_URL: url, SBX_API_KEY: 'e2b_' + '1'.repeat(40), E2B_API_KEY: process.env.E2B_API_KEY }), /AuthError/)
})

test('errors map to their types', async () => {
  const e = await Sbx.list({ apiKey: 'e2b_' + '0'.repeat(40) }).catch((x) => x)
  assert.ok(e instanceof AuthError, String(e))
  assert.deepEqual([e.status, e.code], [401, 'unauthorized'])
  const bad = await Sbx.connect(sb.id)
  Object.assign(bad.transport.cfg, { apiKey: 'wrong' })
  await assert.rejects(bad.terminal(), AuthError)
  const nf = await Sbx.connect('nosuchbox').catch((x) => x)
  assert.ok(nf instanceof NotFoundError && nf.code === 'not_found' && nf.message.includes('nosuchbox'))
  await assert.rejects(Sbx.create({ template: 'no-such-template' }), NotFoundError)
  await assert.rejects(Sbx.create({ timeout: 0 }), BadRequestError)
  await assert.rejects(Sbx.create({ cpuCount: 1000 }), BadRequestError)
  await assert.rejects(sb.exec('true', { timeoutMs: 300_001 }), BadRequestError)
  const big = await sb.sh('head -c 20000000 /dev/zero').catch((x) => x)
  assert.ok(big instanceof OutputTooLargeError && big instanceof LimitError && big.status === 422, String(big))
  await assert.rejects(sb.runCode('#'.repeat(4 * 1024 * 1024 + 1)), PayloadTooLargeError)
  const down = await Sbx.list({ url: 'http://127.0.0.1:1', maxRetries: 0 }).catch((x) => x)
  assert.ok(down instanceof SbxConnectionError && down instanceof UnavailableError, String(down))
  assert.throws(() => sb.exec('true', { user: 'mallory' }), TypeError)
})
