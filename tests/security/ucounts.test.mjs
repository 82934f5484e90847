// Kernel per-user counters ("ucounts", docs/escape-battery.md C17 and D12) through the
// unmodified npm `e2b` SDK: inotify instances, POSIX message queue bytes and pending signals
// are charged to the uid that owns each user namespace, level by level up to the host. One
// sandbox taking all of its share must leave other sandboxes and host root theirs.
//
// Sandbox A hoards, sandbox B and a host root process must still get what they ask for. The
// figures (what A got, what B still gets) are printed as TAP diagnostics.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { Sandbox, FilesystemEventType } from 'e2b'
import { hostPidOf, sleep, waitFor } from '../lib/env.mjs'

const EMFILE = 24, EAGAIN = 11

let a, b
const hoards = []

before(async () => {
  a = await Sandbox.create()
  b = await Sandbox.create()
})

after(async () => {
  for (const h of hoards) await h.kill().catch(() => {})
  for (const s of [a, b]) if (s) await s.kill().catch(() => {})
})

// Python run as sandbox code or on the host; `print(n, errno)` on its first line.
const INOTIFY = `
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while libc.inotify_init1(0o2000000) >= 0:  # IN_CLOEXEC, kept open
    n += 1
print(n, ctypes.get_errno(), flush=True)
if sys.argv[1:] == ['hold']:
    time.sleep(3600)
`
const INOTIFY_ONE = `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print(libc.inotify_init1(0o2000000), ctypes.get_errno())
`
// Queues outlive their creator in the sandbox's IPC namespace: no process has to hold them.
// Big queues first, then smaller ones until not even a 10 x 1-byte queue fits.
const MQUEUE = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [('flags', ctypes.c_long), ('maxmsg', ctypes.c_long),
                ('msgsize', ctypes.c_long), ('curmsgs', ctypes.c_long),
                ('pad', ctypes.c_long * 4)]
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(Attr)]
libc.mq_unlink.argtypes = [ctypes.c_char_p]
prefix, size, fill = sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'fill'
n = payload = err = 0
while size >= 1:
    name = ('/%s-%d' % (prefix, n)).encode()
    fd = libc.mq_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, ctypes.byref(Attr(0, 10, size, 0)))
    if fd < 0:
        err = ctypes.get_errno()
        if not fill:
            break
        size //= 2
        continue
    os.close(fd)
    n += 1
    payload += 10 * size
    if not fill:
        libc.mq_unlink(name)
        break
print(n, err, payload)
`
// Real-time signals queued with tgkill (not kill(): its overflow is silent) until EAGAIN.
const SIGPENDING = `
import os, signal, sys, threading, time
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
n = err = 0
limit = int(sys.argv[1])
try:
    while n < limit:
        signal.pthread_kill(threading.get_ident(), sig)
        n += 1
except OSError as e:
    err = e.errno
print(n, err, flush=True)
if sys.argv[2:] == ['hold']:
    time.sleep(3600)
`

const host = (script, ...args) =>
  execFileSync('python3', ['-c', script, ...args]).toString().trim().split(/\s+/).map(Number)

const inside = async (sbx, script, args = '', opts = {}) => {
  await sbx.files.write('/tmp/ucounts.py', script)
  const r = await sbx.commands.run(`python3 /tmp/ucounts.py ${args}`, opts)
  return r.stdout.trim().split(/\s+/).map(Number)
}

// Starts script in the background in sbx and returns its first output line once printed.
async function hoard(sbx, script, args) {
  await sbx.files.write('/tmp/hoard.py', script)
  let out = ''
  const h = await sbx.commands.run(`python3 /tmp/hoard.py ${args}`, {
    background: true,
    onStdout: (d) => { out += d },
  })
  hoards.push(h)
  assert.ok(await waitFor(() => out.includes('\n'), 60000, 100), 'the hoarder never reported')
  return out.trim().split(/\s+/).map(Number)
}

async function watchSees(sbx, dir) {
  await sbx.files.makeDir(dir)
  const events = []
  const h = await sbx.files.watchDir(dir, (e) => events.push(e))
  try {
    await sbx.files.write(`${dir}/f.txt`, 'x')
    for (let i = 0; i < 50 && !events.some((e) => e.name === 'f.txt'); i++) await sleep(100)
  } finally {
    await h.stop()
  }
  return events.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'f.txt')
}

test('C17: one sandbox using up its inotify instances leaves others and the host theirs', async (t) => {
  const [got, err] = await hoard(a, INOTIFY, 'hold')
  // Facts first (all of them, so a failing run still shows each), then the assertions.
  const bWatch = await watchSees(b, '/home/user/w-b').catch((e) => e)
  const [hostFd, hostErr] = host(INOTIFY_ONE)
  // Inside A, `user` has taken what one uid may: the agent (sandbox root) keeps a share.
  const aWatch = await watchSees(a, '/home/user/w-a').catch((e) => e)
  const [left, leftErr] = await inside(b, INOTIFY)
  t.diagnostic(`inotify instances: sandbox A's user got ${got} (errno ${err}); meanwhile sandbox B's user gets ${left} (errno ${leftErr}), B's watchDir ${bWatch === true ? 'works' : 'fails: ' + bWatch}, A's own watchDir ${aWatch === true ? 'works' : 'fails: ' + aWatch}, host root's inotify_init1 gives ${hostFd} (errno ${hostErr})`)
  assert.equal(err, EMFILE, `the hoard stopped on errno ${err}, not EMFILE`)
  assert.ok(got > 0, 'sandbox A got no inotify instance at all')
  assert.equal(bWatch, true, "sandbox B's watchDir failed while A hoards")
  assert.ok(hostFd >= 0, `host root's inotify_init1 failed with errno ${hostErr}`)
  assert.equal(aWatch, true, "sandbox A's own watchDir failed while its user hoards")
  assert.equal(leftErr, EMFILE)
  assert.ok(left >= got, `B gets ${left} instances while A holds ${got}`)
})

test('D12: one sandbox filling its message-queue bytes leaves others and the host theirs', async (t) => {
  const [queues, err, payload] = await inside(a, MQUEUE, 'hoard 8192 fill')
  // A full-size queue in B, and the smallest queue A could no longer get on the host.
  const [bq, berr] = await inside(b, MQUEUE, 'probe 8192 one')
  const [hq, herr] = host(MQUEUE, `sbx-ucounts-${process.pid}`, '1', 'one')
  t.diagnostic(`mqueue: sandbox A filled ${queues} queues, ${payload} payload bytes (errno ${err}); meanwhile B opens ${bq} of 10 x 8192 bytes (errno ${berr}), host root ${hq} of 10 x 1 byte (errno ${herr})`)
  assert.equal(err, EMFILE, `the fill stopped on errno ${err}, not EMFILE (RLIMIT_MSGQUEUE)`)
  assert.ok(queues > 0, 'sandbox A could not create a single queue')
  assert.equal(bq, 1, `sandbox B's mq_open failed with errno ${berr}`)
  assert.equal(hq, 1, `host root's mq_open failed with errno ${herr}`)
})

test('D12: one sandbox queueing all the signals it may leaves others and the host theirs', async (t) => {
  const [got, err] = await hoard(a, SIGPENDING, '1000000 hold')
  const [bgot, berr] = await inside(b, SIGPENDING, '1000000')
  const [hgot, herr] = host(SIGPENDING, '1')
  t.diagnostic(`pending signals: sandbox A queued ${got} (errno ${err}); meanwhile B queues ${bgot} (errno ${berr}), host root ${hgot} of 1 (errno ${herr})`)
  assert.equal(err, EAGAIN, `the hoard stopped on errno ${err} after ${got} signals, not EAGAIN`)
  assert.ok(bgot >= got, `sandbox B queues ${bgot} signals while A holds ${got} (errno ${berr})`)
  assert.equal(hgot, 1, `host root could not queue a signal: errno ${herr}`)
})

test('D12: user namespaces: owned by the sandbox\'s host uid, none can be made inside', async () => {
  // seccomp refuses unshare first; past it, the namespace's own limit is 0.
  const r = await a.commands.run('unshare -U true; echo rc=$?; cat /proc/sys/user/max_user_namespaces', { user: 'root' }).catch((e) => e)
  assert.match(r.stdout, /rc=1\n0\n$/, r.stdout + r.stderr)
  const map = (await a.commands.run('cat /proc/self/uid_map')).stdout.trim().split(/\s+/).map(Number)
  const pid = hostPidOf(a.sandboxId)
  assert.ok(pid, 'no host pid for sandbox A')
  // NS_GET_OWNER_UID on the agent's user namespace, from the host.
  const [owner] = host(`
import fcntl, os, struct, sys
fd = os.open('/proc/%s/ns/user' % sys.argv[1], os.O_RDONLY)
buf = bytearray(4)
fcntl.ioctl(fd, 0xb704, buf)
print(struct.unpack('I', buf)[0])
`, String(pid))
  assert.equal(owner, map[1], `the user namespace is owned by host uid ${owner}, not the sandbox's ${map[1]}`)
})
