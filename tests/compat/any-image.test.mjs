// Images as users bring them (tests/lib/images/build.sh: a static busybox with no libc at all,
// an Alpine-shaped image whose programs use musl's loader, Debian minbase with python3; none
// holds anything of sbx's) imported through `sbx image import` and POST /v1/images, then driven
// through the unmodified SDKs: commands, sudo, PTY, files, watch, kill, timeouts, the code
// interpreter, and a template built on each with Template().fromTemplate().
// guest-agent/README.md "Runtime" and "Images": the agent is static, sudo and the kernels are
// bound from the host, and the agent adds the user, /home/user, /tmp and sudo at start-up.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox, Template, TimeoutError, CommandExitError } from 'e2b'
import { Sandbox as CodeSandbox, NotFoundError } from '@e2b/code-interpreter'
import { userImages } from '../lib/images.mjs'
import { waitFor } from '../lib/env.mjs'

const URL_ = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const CLI = join(process.env.SBX_TEST_BUILD || 'build', 'cli/sbx')
const work = mkdtempSync(join(tmpdir(), 'sbx-anyimage-'))
const NAMES = ['busybox', 'musl', 'minbase']
const tpl = (name) => `anyimg-${name}`
const made = []

async function create(template, Cls = Sandbox) {
  const s = await Cls.create(template)
  made.push(s)
  return s
}

const run = async (s, cmd, opts) => (await s.commands.run(cmd, { timeoutMs: 60000, ...opts })).stdout

async function importLayout(layout, name, { cli = false } = {}) {
  const file = join(work, `${name}.tar`)
  execFileSync('tar', ['-C', layout, '-cf', file, '.'])
  if (cli) {
    execFileSync(CLI, ['image', 'import', name, file], { env: { ...process.env, SBX_URL: URL_, SBX_API_KEY: KEY } })
    return
  }
  const res = await fetch(`${URL_}/v1/images?name=${name}`, {
    method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: readFileSync(file),
  })
  assert.equal(res.status, 201, await res.text())
}

before(async () => {
  const imgs = userImages()
  await importLayout(imgs.busybox, tpl('busybox'), { cli: true })
  await importLayout(imgs.musl, tpl('musl'))
  await importLayout(imgs.minbase, tpl('minbase'))
})

after(async () => {
  for (const s of made) await s.kill().catch(() => {})
  for (const n of NAMES) {
    await fetch(`${URL_}/v1/images/${tpl(n)}`, { method: 'DELETE', headers: { Authorization: `Bearer ${KEY}` } })
    await fetch(`${URL_}/templates/anyimg-built-${n}`, { method: 'DELETE', headers: { 'X-API-KEY': KEY } })
  }
  rmSync(work, { recursive: true, force: true })
})

for (const name of NAMES) {
  test(`${name}: starts; commands run as user in /home/user, exit codes, stderr, env, cwd, root, sudo`, async () => {
    const s = await create(tpl(name))
    assert.equal(await run(s, 'echo hi; id -un; id -u; pwd; echo "$HOME"'), 'hi\nuser\n1000\n/home/user\n/home/user\n')
    const e = await s.commands.run('echo out; echo err >&2; exit 3').catch((x) => x)
    assert.ok(e instanceof CommandExitError, String(e))
    assert.equal(e.exitCode, 3)
    assert.equal(e.stdout, 'out\n')
    assert.equal(e.stderr, 'err\n')
    assert.equal(await run(s, 'echo "$GREETING"; pwd', { envs: { GREETING: 'hello' }, cwd: '/tmp' }), 'hello\n/tmp\n')
    assert.equal(await run(s, 'id -u', { user: 'root' }), '0\n')
    // E2B's build gives every image passwordless sudo: sbx's client, bound from the host
    assert.equal(await run(s, 'sudo id -u; sudo -u user id -un'), '0\nuser\n')
    assert.equal(await run(s, 'stat -c "%a %U" /tmp /home/user'), '1777 root\n755 user\n')
  })

  test(`${name}: PTY, files, watch, kill, timeouts`, async () => {
    const s = await create(tpl(name))
    let out = ''
    const pty = await s.pty.create({ cols: 80, rows: 24, onData: (d) => { out += Buffer.from(d).toString() } })
    await s.pty.sendInput(pty.pid, new TextEncoder().encode('echo pty-$((6*7)) $(id -un)\n'))
    assert.ok(await waitFor(() => out.includes('pty-42 user'), 20000), `PTY output: ${JSON.stringify(out)}`)
    await s.pty.resize(pty.pid, { cols: 100, rows: 30 })
    await s.pty.sendInput(pty.pid, new TextEncoder().encode('stty size\nexit\n'))
    assert.equal((await pty.wait()).exitCode, 0)
    assert.match(out, /30 100/)

    await s.files.write('/home/user/dir/a.txt', 'content a')
    assert.equal(await s.files.read('/home/user/dir/a.txt'), 'content a')
    assert.deepEqual((await s.files.list('/home/user/dir')).map((e) => e.name), ['a.txt'])
    assert.equal((await s.files.getInfo('/home/user/dir/a.txt')).owner, 'user')
    const events = []
    const w = await s.files.watchDir('/home/user/dir', (ev) => events.push(ev))
    await s.files.write('/home/user/dir/b.txt', 'b')
    assert.ok(await waitFor(() => events.some((ev) => ev.name === 'b.txt'), 10000), JSON.stringify(events))
    await w.stop()
    await s.files.remove('/home/user/dir/a.txt')
    assert.equal(await s.files.exists('/home/user/dir/a.txt'), false)

    const bg = await s.commands.run('sleep 600', { background: true })
    assert.ok((await s.commands.list()).some((p) => p.pid === bg.pid))
    assert.equal(await bg.kill(), true)
    assert.ok(await waitFor(async () => !(await s.commands.list()).some((p) => p.pid === bg.pid), 10000))
    await assert.rejects(s.commands.run('sleep 30', { timeoutMs: 1000 }), (x) => x instanceof TimeoutError)
    assert.equal(await run(s, 'echo still here'), 'still here\n')
  })
}

test('busybox: no libc in the image, and the agent needs none', async () => {
  const s = await create(tpl('busybox'))
  assert.equal(await run(s, 'ls /lib /usr/lib 2>/dev/null | wc -l; test -e /bin/bash || echo no-bash'), '0\nno-bash\n')
  assert.equal(await run(s, 'echo "$SHELL"; echo $0'), '/bin/sh\n/bin/sh\n')
})

test('musl: user processes run with the image\'s own loader and libraries', async () => {
  const s = await create(tpl('musl'))
  assert.equal(await run(s, 'musl-hello there'), 'hello from musl there\n')
})

test('minbase: the code interpreter runs on the image\'s python3', async () => {
  const s = await create(tpl('minbase'), CodeSandbox)
  const ex = await s.runCode('import sys\nprint(sys.executable)\nx = 6 * 7\nx')
  assert.equal(ex.error, undefined)
  assert.equal(ex.text, '42')
  assert.deepEqual(ex.logs.stdout, ['/usr/bin/python3\n'])
  // a kernel's own code is sbx's, read-only from the host
  const w = await s.commands.run('touch /.sbx/runtime/kernels/python/kernel.py', { user: 'root' }).catch((x) => x)
  assert.match(w.stderr, /Read-only file system/)
})

test('busybox: the code interpreter says which interpreter the image lacks', async () => {
  const s = await create(tpl('busybox'), CodeSandbox)
  await assert.rejects(s.runCode('1 + 1'), (e) => {
    assert.ok(e instanceof NotFoundError, String(e))
    assert.match(e.message, /python3 not found: this sandbox's image has no python3/)
    return true
  })
  await assert.rejects(s.runCode('1 + 1', { language: 'js' }), /node not found/)
})

for (const name of ['busybox', 'minbase']) {
  test(`${name}: Template().fromTemplate(imported) builds as user and starts`, async () => {
    const t = Template().fromTemplate(tpl(name)).runCmd('echo "built by $(id -un) in $(pwd)" > /home/user/built.txt')
      .runCmd('sudo mkdir -p /opt/app && sudo chown user /opt/app && echo ok > /opt/app/ok')
    await Template.build(t, `anyimg-built-${name}`)
    const s = await create(`anyimg-built-${name}`)
    assert.equal(await run(s, 'cat /home/user/built.txt /opt/app/ok; id -un'), 'built by user in /home/user\nok\nuser\n')
  })
}
