// Escape battery group C (docs/escape-battery.md): the file APIs (upload, download,
// list/stat, move, remove, watch) against bad paths, links and special files, through the
// unmodified npm `e2b` SDK and raw envd requests.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { Sandbox, SandboxError, NotEnoughSpaceError } from 'e2b'
import { api, sleep, sandboxFetch, envelope, parseEnvelopes, STATE } from '../lib/env.mjs'

let sbx

before(async () => {
  sbx = await Sandbox.create()
  await sbx.commands.run('echo secret > /root-only && chmod 600 /root-only', { user: 'root' })
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
})

const fails = (p) => assert.rejects(p, (e) => e instanceof Error)
const rpc = async (m, body) => {
  const res = await sandboxFetch(sbx.sandboxId, 49983, `/filesystem.Filesystem/${m}`, {
    method: 'POST',
    headers: { 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: res.status, json: await res.json() }
}

test('C1: ../../etc paths resolve inside the sandbox; root-only files stay root-only', async () => {
  const passwd = await sbx.files.read('../../etc/passwd')
  assert.match(passwd, /^user:x:1000:/m)
  await fails(sbx.files.read('../../root-only'))
  await fails(sbx.files.write('../../etc/evil', 'x'))
  await fails(sbx.files.rename('../../root-only', '/home/user/stolen'))
  await fails(sbx.files.remove('../../root-only'))
  assert.equal(await sbx.files.read('/root-only', { user: 'root' }), 'secret\n')
})

test('C2: absolute host paths are not reachable', async () => {
  assert.ok(STATE && existsSync(`${STATE}/keys`))
  await fails(sbx.files.read(`${STATE}/keys`))
  assert.equal(await sbx.files.exists(`${STATE}/keys`), false)
  await fails(sbx.files.list(STATE))
})

test('C3: NUL bytes are refused; newline names round-trip', async () => {
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/files?path=/home/user/a%00b', { headers: { 'X-Access-Token': sbx.envdAccessToken } })
  assert.equal(res.status, 400)
  const st = await rpc('Stat', '{"path":"/home/user/x\\u0000/../../root-only"}')
  assert.equal(st.status, 400)
  assert.equal(st.json.code, 'invalid_argument')
  await sbx.files.write('/home/user/new\nline', 'nl')
  assert.equal(await sbx.files.read('/home/user/new\nline'), 'nl')
  assert.ok((await sbx.files.list('/home/user')).some((e) => e.name === 'new\nline'))
})

test('C4: over-long paths and components get clear errors', async () => {
  const long = '/home/user/' + 'a/'.repeat(2100)
  await fails(sbx.files.read(long + 'f'))
  await fails(sbx.files.write(long + 'f', 'x'))
  await fails(sbx.files.makeDir(long))
  const comp = '/home/user/' + 'b'.repeat(300)
  await fails(sbx.files.write(comp, 'x'))
  await fails(sbx.files.getInfo(comp))
  assert.equal((await rpc('Stat', { path: comp })).json.code, 'invalid_argument')
})

test('C5: a symlink to / stays inside the sandbox root', async () => {
  await sbx.commands.run('ln -sfn / /home/user/rootlink')
  const passwd = await sbx.files.read('/home/user/rootlink/etc/passwd')
  assert.match(passwd, /^user:x:1000:/m)
  await fails(sbx.files.read(`/home/user/rootlink${STATE}/keys`))
  await fails(sbx.files.read('/home/user/rootlink/root-only'))
})

test('C6: a symlink swapped mid-operation never leaks a root-only file', async () => {
  await sbx.files.write('/home/user/benign', 'benign\n')
  const h = await sbx.commands.run(
    'cd /home/user; for i in $(seq 4000); do ln -sfn benign swap; ln -sfn /root-only swap; done',
    { background: true })
  for (let i = 0; i < 40; i++) {
    const r = await sbx.files.read('/home/user/swap').catch(() => 'denied')
    assert.notEqual(r, 'secret\n')
  }
  await h.kill()
})

test('C7: magic links /proc/self/root and /proc/self/fd are not followed', async () => {
  await fails(sbx.files.read('/proc/self/root/etc/passwd'))
  await fails(sbx.files.read('/proc/1/root/etc/passwd'))
  await fails(sbx.files.read('/proc/self/fd/0'))
  await fails(sbx.files.write('/proc/self/root/home/user/x', 'x'))
})

test('C8: a hard link to a root-only file does not grant read access', async () => {
  await sbx.commands.run('ln /root-only /home/user/hl 2>/dev/null || true')
  await fails(sbx.files.read('/home/user/hl'))
})

test('C9: /dev/zero and /dev/urandom downloads are refused at once', async () => {
  const t0 = Date.now()
  await fails(sbx.files.read('/dev/zero'))
  await fails(sbx.files.read('/dev/urandom'))
  assert.ok(Date.now() - t0 < 5000)
})

test('C10: a FIFO neither hangs a download nor a watch', async () => {
  await sbx.commands.run('rm -f /home/user/fifo; mkfifo /home/user/fifo')
  const t0 = Date.now()
  await fails(sbx.files.read('/home/user/fifo'))
  await fails(sbx.files.watchDir('/home/user/fifo', () => {}))
  const st = await sbx.files.getInfo('/home/user/fifo')
  assert.equal(st.permissions[0], 'p')
  assert.ok(Date.now() - t0 < 5000)
})

test('C11: /proc/kcore and kallsyms are denied or masked, no sysfs', async () => {
  await fails(sbx.files.read('/proc/kcore'))
  await fails(sbx.files.read('/proc/kcore', { user: 'root' }))
  await fails(sbx.files.read('/proc/kallsyms', { user: 'root' }))
  assert.equal(await sbx.files.exists('/sys/kernel/security'), false)
  assert.equal(await sbx.files.exists('/sys/fs/cgroup/cgroup.procs'), false)
})

test('C12: an uploaded setuid binary gains nothing', async () => {
  await sbx.files.write('/tmp/suid-id', readFileSync('/usr/bin/id'), { user: 'root' })
  await sbx.commands.run('chmod 4755 /tmp/suid-id', { user: 'root' })
  assert.equal((await sbx.files.getInfo('/tmp/suid-id')).permissions, 'urwxr-xr-x')
  const r = await sbx.commands.run('/tmp/suid-id -u')
  assert.equal(r.stdout.trim(), '1000')
})

test('C13: device nodes cannot be created', async () => {
  await assert.rejects(sbx.commands.run('mknod /tmp/mem c 1 1', { user: 'root' }))
})

test('C14: out of disk → NotEnoughSpaceError (507), nothing half-written, the sandbox lives on', async () => {
  // A disk larger than the memory limit: the disk is a storage pool subvolume with a qgroup
  // limit (or, without btrfs, an ext4 image), so filling it is EDQUOT (or ENOSPC) from write(),
  // never the OOM killer (as a tmpfs disk charged to memory would be).
  const r = await api('POST', '/sandboxes', { body: { templateID: 'base', memoryMB: 64, diskSizeMB: 192 } })
  assert.equal(r.status, 201, JSON.stringify(r.json))
  const small = await Sandbox.connect(r.json.sandboxID)
  try {
    const big = new Uint8Array(256 * 1024 * 1024)
    await assert.rejects(small.files.write('/home/user/big.bin', big.buffer), (e) => e instanceof NotEnoughSpaceError)
    const left = await small.commands.run('ls -a /home/user | grep -c -e "^big.bin$" -e "^.sbx-upload" || true')
    assert.equal(left.stdout.trim(), '0')
    await small.files.write('/home/user/after.txt', 'ok')
    assert.equal(await small.files.read('/home/user/after.txt'), 'ok')
    // the same from a process: EDQUOT or ENOSPC at once, and everything still runs
    const dd = await small.commands.run('dd if=/dev/zero of=/home/user/fill bs=1M count=400 2>&1; echo "rc=$?"')
    assert.match(dd.stdout, /Disk quota exceeded|No space left on device/)
    assert.match(dd.stdout, /rc=1/)
    assert.equal((await small.commands.run('rm /home/user/fill && echo alive')).stdout, 'alive\n')
    // and nothing was OOM-killed (read on the host: the sandbox has no cgroupfs)
    const events = readFileSync(`/sys/fs/cgroup/memory/sbx/${small.sandboxId}/memory.oom_control`, 'utf8')
    assert.match(events, /^oom_kill 0$/m)
  } finally {
    await small.kill().catch(() => {})
  }
})

test('C15: a sparse-file bomb is stat-ed cheaply and a download can be abandoned', async () => {
  await sbx.commands.run('truncate -s 20G /home/user/sparse')
  assert.equal((await sbx.files.getInfo('/home/user/sparse')).size, 20 * 1024 ** 3)
  const stream = await sbx.files.read('/home/user/sparse', { format: 'stream' })
  const reader = stream.getReader()
  let n = 0
  while (n < 4 * 1024 * 1024) n += (await reader.read()).value.length
  await reader.cancel()
  assert.equal(await sbx.files.read('/home/user/benign'), 'benign\n')
  await sbx.files.remove('/home/user/sparse')
})

test('C17: watcher exhaustion is refused cleanly and recoverable', async () => {
  await sbx.files.makeDir('/home/user/wx')
  const ids = []
  let refused
  for (let i = 0; i < 80; i++) {
    const r = await rpc('CreateWatcher', { path: '/home/user/wx' })
    if (r.status !== 200) { refused = r; break }
    ids.push(r.json.watcherId)
  }
  assert.ok(refused, 'a bound exists')
  assert.equal(refused.json.code, 'resource_exhausted')
  for (const id of ids) assert.equal((await rpc('RemoveWatcher', { watcherId: id })).status, 200)
  assert.equal((await rpc('CreateWatcher', { path: '/home/user/wx' })).status, 200)
})

test('C18: fanotify is denied inside the sandbox', async () => {
  const probe = `${process.env.SBX_TEST_BUILD}/tests/security/sbx-probe`
  await sbx.files.write('/home/user/sbx-probe', readFileSync(probe))
  await sbx.commands.run('chmod 755 /home/user/sbx-probe')
  const r = await sbx.commands.run('/home/user/sbx-probe syscalls', { user: 'root' }).catch((e) => e)
  const line = (r.stdout ?? '').split('\n').find((l) => l.includes('"fanotify_init"'))
  assert.ok(line, r.stdout)
  const res = JSON.parse(line)
  assert.ok(res.ret < 0 && [1, 38].includes(res.errno), line) // EPERM or ENOSYS
})

test('C1-C7 on watch: WatchDir on escaping paths and magic links fails', async () => {
  await fails(sbx.files.watchDir('/proc/self/root', () => {}))
  await fails(sbx.files.watchDir(`${STATE}`, () => {}))
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/filesystem.Filesystem/WatchDir', {
    method: 'POST',
    headers: { 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/connect+json' },
    body: envelope({ path: '/home/user/\u0000x' }),
  })
  const frames = parseEnvelopes(Buffer.from(await res.arrayBuffer()))
  assert.equal(frames.at(-1).msg.error.code, 'invalid_argument')
})

test('C17/C1 on watch: a recursive watch works with the user rights (root-only subdirectories stay closed)', async () => {
  await sbx.commands.run('rm -rf /home/user/wsec && mkdir -m 777 /home/user/wsec')
  const events = []
  const h = await sbx.files.watchDir('/home/user/wsec', (e) => events.push(e), { recursive: true, includeEntry: true })
  const c = await rpc('CreateWatcher', { path: '/home/user/wsec', recursive: true })
  await sbx.commands.run('mkdir -m 700 /home/user/wsec/priv && sleep 0.3 && touch /home/user/wsec/priv/secret-name && touch /home/user/wsec/visible', { user: 'root' })
  for (let i = 0; i < 50 && !events.some((e) => e.name === 'visible'); i++) await sleep(100)
  await sleep(300)
  await h.stop()
  const polled = (await rpc('GetWatcherEvents', { watcherId: c.json.watcherId })).json.events ?? []
  await rpc('RemoveWatcher', { watcherId: c.json.watcherId })
  assert.ok(events.some((e) => e.name === 'priv'), JSON.stringify(events))
  assert.ok(!events.some((e) => e.name.includes('secret-name')), JSON.stringify(events))
  assert.ok(!polled.some((e) => e.name.includes('secret-name')), JSON.stringify(polled))
})
