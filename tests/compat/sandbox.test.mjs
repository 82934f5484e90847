// The walking skeleton's user flows through the unmodified npm `e2b` SDK (pinned 2.51.0).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, createHash } from 'node:crypto'
import { Sandbox, CommandExitError, TimeoutError, NotFoundError, SandboxError } from 'e2b'
import { sleep, waitFor, sandboxDirs, cgroupExists, hostPidOf, useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

test('create returns a running sandbox of template base', async () => {
  assert.match(sbx.sandboxId, /^[a-z0-9]+$/)
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.equal(info.state, 'running')
  assert.ok(info.endAt > info.startedAt)
})

test('echo hello: stdout and exit code 0', async () => {
  const r = await sbx.commands.run('echo hello')
  assert.equal(r.stdout, 'hello\n')
  assert.equal(r.stderr, '')
  assert.equal(r.exitCode, 0)
})

test('stderr is captured separately', async () => {
  const r = await sbx.commands.run('echo out; echo err >&2')
  assert.equal(r.stdout, 'out\n')
  assert.equal(r.stderr, 'err\n')
})

test('exit 3 throws CommandExitError with exitCode 3', async () => {
  await assert.rejects(sbx.commands.run('exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError, `got ${e}`)
    assert.equal(e.exitCode, 3)
    return true
  })
})

test('command killed by a signal reports exitCode -1', async () => {
  await assert.rejects(sbx.commands.run('kill -9 $$'), (e) => {
    assert.ok(e instanceof CommandExitError, `got ${e}`)
    assert.equal(e.exitCode, -1)
    return true
  })
})

test('cwd and envs apply to the command', async () => {
  const r = await sbx.commands.run('pwd; echo $FOO', { cwd: '/tmp', envs: { FOO: 'bar' } })
  assert.equal(r.stdout, '/tmp\nbar\n')
})

test('commands run as user (uid 1000, home /home/user) by default, root on request', async () => {
  const r = await sbx.commands.run('id -u; whoami; echo $HOME; pwd')
  assert.equal(r.stdout, '1000\nuser\n/home/user\n/home/user\n')
  const root = await sbx.commands.run('id -u; whoami', { user: 'root' })
  assert.equal(root.stdout, '0\nroot\n')
})

test('timeoutMs kills the command: TimeoutError, and the process is gone', async () => {
  const t0 = Date.now()
  await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 500 }), (e) => {
    assert.ok(e instanceof TimeoutError, `got ${e?.constructor?.name}: ${e}`)
    return true
  })
  assert.ok(Date.now() - t0 < 5000, 'the timeout fired late')
  // The sleep must not outlive its deadline inside the sandbox.
  const gone = await waitFor(async () => {
    const r = await sbx.commands.run('pgrep -x sleep || true')
    return r.stdout.trim() === ''
  }, 3000, 100)
  assert.ok(gone, 'sleep 30 still running after its timeout')
})

test('onStdout fires while the command is still running', async () => {
  const seen = []
  const t0 = Date.now()
  const r = await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.4; done', {
    onStdout: (d) => seen.push({ d, t: Date.now() - t0 }),
  })
  const total = Date.now() - t0
  assert.equal(r.stdout, '1\n2\n3\n')
  assert.ok(seen.length >= 2, `expected several chunks, got ${JSON.stringify(seen)}`)
  assert.equal(seen[0].d, '1\n')
  // The first line arrives long before the command ends (~1.2 s of sleeps).
  assert.ok(total - seen[0].t > 700, `first chunk at ${seen[0].t} ms of ${total} ms`)
})

test('a 50 MB file round-trips byte-identical', { timeout: 120000 }, async () => {
  const bytes = randomBytes(50 * 1024 * 1024)
  const info = await sbx.files.write('/home/user/a.bin', bytes)
  assert.equal(info.path, '/home/user/a.bin')
  const back = await sbx.files.read('/home/user/a.bin', { format: 'bytes' })
  assert.equal(back.length, bytes.length)
  assert.equal(createHash('sha256').update(back).digest('hex'),
    createHash('sha256').update(bytes).digest('hex'))
  // The sandbox sees the same file, owned by user.
  const r = await sbx.commands.run('stat -c "%s %U" /home/user/a.bin; sha256sum /home/user/a.bin')
  const [statLine, sumLine] = r.stdout.trim().split('\n')
  assert.equal(statLine, `${bytes.length} user`)
  assert.equal(sumLine.split(' ')[0], createHash('sha256').update(bytes).digest('hex'))
  await sbx.commands.run('rm /home/user/a.bin')
})

test('text write creates parent dirs; read of a missing file is NotFoundError', async () => {
  await sbx.files.write('/home/user/deep/er/note.txt', 'hi there\n')
  assert.equal(await sbx.files.read('/home/user/deep/er/note.txt'), 'hi there\n')
  await assert.rejects(sbx.files.read('/home/user/nope.txt'), (e) => {
    assert.ok(e instanceof NotFoundError, `got ${e?.constructor?.name}: ${e}`)
    return true
  })
})

test('files are written with the selected user rights', async () => {
  // user cannot write into root's home; root can.
  await assert.rejects(sbx.files.write('/root/x.txt', 'no'), (e) => e instanceof SandboxError)
  await sbx.files.write('/root/x.txt', 'yes\n', { user: 'root' })
  const r = await sbx.commands.run('cat /root/x.txt; stat -c %U /root/x.txt', { user: 'root' })
  assert.equal(r.stdout, 'yes\nroot\n')
})

test('sandbox env vars from create reach every command', async () => {
  const s = await Sandbox.create({ envs: { SBX_GREETING: 'hola' }, metadata: { suite: 'compat' } })
  try {
    const r = await s.commands.run('echo $SBX_GREETING')
    assert.equal(r.stdout, 'hola\n')
    const r2 = await s.commands.run('echo $SBX_GREETING', { envs: { SBX_GREETING: 'override' } })
    assert.equal(r2.stdout, 'override\n')
  } finally {
    assert.equal(await s.kill(), true)
  }
})

test('two sandboxes do not see each other', async () => {
  const other = await Sandbox.create()
  try {
    await sbx.files.write('/home/user/mine.txt', 'secret')
    const r = await other.commands.run('ls /home/user/mine.txt 2>&1; hostname')
    assert.match(r.stdout, /No such file/)
    assert.ok(r.stdout.includes(other.sandboxId))
    const ps = await other.commands.run('ps -e -o pid= | wc -l')
    assert.ok(Number(ps.stdout.trim()) < 10, `other sandbox sees ${ps.stdout.trim()} processes`)
  } finally {
    await other.kill()
  }
})

test('Sandbox.list shows running sandboxes with their metadata', async () => {
  const s = await Sandbox.create({ metadata: { owner: 'list-test' } })
  try {
    const items = await Sandbox.list().nextItems()
    const mine = items.find((i) => i.sandboxId === s.sandboxId)
    assert.ok(mine, 'created sandbox missing from list')
    assert.equal(mine.state, 'running')
    assert.equal(mine.templateId, 'base')
    assert.deepEqual(mine.metadata, { owner: 'list-test' })
    assert.ok(items.find((i) => i.sandboxId === sbx.sandboxId))
  } finally {
    await s.kill()
  }
})

test('setTimeout(2000): the sandbox is gone about 2 s later, and cleaned up', { timeout: 20000 }, async () => {
  const s = await Sandbox.create()
  const id = s.sandboxId
  const pid = hostPidOf(id)
  await s.setTimeout(2000)
  assert.ok(await s.isRunning())
  const gone = await waitFor(async () => !(await Sandbox.list().nextItems()).some((i) => i.sandboxId === id), 8000, 200)
  assert.ok(gone, 'sandbox still listed 8 s after a 2 s timeout')
  await assert.rejects(Sandbox.getInfo(id), (e) => e instanceof NotFoundError)
  assert.ok(await waitFor(() => !sandboxDirs().includes(id) && !cgroupExists(id), 3000))
  if (pid) assert.ok(await waitFor(() => { try { process.kill(pid, 0); return false } catch { return true } }, 3000))
})

test('kill returns true, then false; kill of an unknown id is false', async () => {
  const s = await Sandbox.create()
  const id = s.sandboxId
  assert.equal(await s.kill(), true)
  assert.equal(await Sandbox.kill(id), false)
  assert.equal(await Sandbox.kill('doesnotexist0000000'), false)
  assert.ok(await waitFor(() => !sandboxDirs().includes(id) && !cgroupExists(id), 3000),
    'sandbox dir or cgroup left behind after kill')
  await assert.rejects(s.commands.run('true'), (e) => e instanceof Error)
})

test('connect to a running sandbox reuses it', async () => {
  const again = await Sandbox.connect(sbx.sandboxId)
  const r = await again.commands.run('echo reconnected')
  assert.equal(r.stdout, 'reconnected\n')
})
