// Escape battery A9 (docs/escape-battery.md): sandbox root cannot end its sandbox by signalling
// PID 1, the agent; only the host stops it. Through the unmodified npm `e2b` SDK against the
// real sbxd. Signals from inside carry the sender's pid; from the host they arrive from an
// ancestor pid namespace, with si_pid 0 (tests/unit/agent/test-agent-init.c checks both at the
// init loop itself, the stop being forwarded to what the agent started).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { hostPidOf, waitFor } from '../lib/env.mjs'

// Every signal by name: the ones the agent reads (TERM, INT, HUP, QUIT, USR1, USR2, CHLD), the
// two the kernel never lets through to a namespace's init from inside (KILL, STOP), and the
// default-action ones it drops.
const SIGNALS = ['TERM', 'INT', 'HUP', 'QUIT', 'USR1', 'USR2', 'CHLD', 'KILL', 'STOP', 'TSTP',
  'TTIN', 'TTOU', 'CONT', 'SEGV', 'ABRT', 'BUS', 'FPE', 'ILL', 'TRAP', 'SYS', 'ALRM', 'VTALRM',
  'PROF', 'XCPU', 'XFSZ', 'PIPE', 'WINCH', 'URG', 'PWR', 'RTMIN', 'RTMAX']

// The other ways to send: tgkill, and rt_sigqueueinfo / pidfd_send_signal with a forged
// siginfo that looks like the host's (si_pid 0, si_code SI_QUEUE: the only kind the kernel lets
// a sender fill in for another process).
const FORGE = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
nr = {'x86_64': dict(tgkill=234, sigqueue=129), 'aarch64': dict(tgkill=131, sigqueue=138)}[os.uname().machine]
class SigInfo(ctypes.Structure):
    _fields_ = [('signo', ctypes.c_int), ('errno', ctypes.c_int), ('code', ctypes.c_int),
                ('pad', ctypes.c_int), ('pid', ctypes.c_int), ('uid', ctypes.c_uint),
                ('rest', ctypes.c_ubyte * 104)]
failed = []
for sig in (15, 2):
    if libc.syscall(nr['tgkill'], 1, 1, sig) != 0: failed.append(('tgkill', sig, ctypes.get_errno()))
    si = SigInfo(signo=sig, code=-1, pid=0, uid=0)
    if libc.syscall(nr['sigqueue'], 1, sig, ctypes.byref(si)) != 0: failed.append(('sigqueue', sig, ctypes.get_errno()))
    fd = libc.syscall(434, 1, 0)  # pidfd_open
    if fd < 0 or libc.syscall(424, fd, sig, ctypes.byref(si), 0) != 0: failed.append(('pidfd', sig, ctypes.get_errno()))
print('sent' if not failed else failed)
`

const alive = async (sbx) => (await sbx.commands.run('echo alive', { timeoutMs: 60000 })).stdout === 'alive\n'

test('A9: signals to PID 1 from sandbox root are ignored; the sandbox keeps working', { timeout: 300000 }, async () => {
  const sbx = await Sandbox.create()
  try {
    // Started before: it must be neither stopped nor signalled by what follows.
    const bg = await sbx.commands.run('sleep 600', { background: true })
    for (const sig of SIGNALS) {
      const r = await sbx.commands.run(`kill -s ${sig} 1 && echo sent`, { user: 'root', timeoutMs: 60000 })
      assert.equal(r.stdout, 'sent\n', sig)
      assert.ok(await alive(sbx), `after SIG${sig}`)
    }
    await sbx.files.write('/tmp/forge.py', FORGE, { user: 'root' })
    const forged = await sbx.commands.run('python3 /tmp/forge.py', { user: 'root', timeoutMs: 60000 })
    assert.equal(forged.stdout, 'sent\n')
    assert.ok(await alive(sbx), 'after tgkill and forged sigqueue')
    // A loop of them, as a hostile process would send.
    await sbx.commands.run('for i in $(seq 2000); do kill -TERM 1; kill -INT 1; done', { user: 'root', timeoutMs: 120000 })
    assert.ok(await alive(sbx), 'after a loop of TERM and INT')
    // PID 1 is not stopped, and the background process was not touched.
    const st = await sbx.commands.run('grep ^State: /proc/1/status')
    assert.match(st.stdout, /^State:\s+S/)
    assert.ok((await sbx.commands.list()).some((p) => p.pid === bg.pid), 'the background process is gone')
    // The user may not signal root's PID 1 at all.
    await assert.rejects(sbx.commands.run('kill -TERM 1'))
    // Files and everything else still answer.
    await sbx.files.write('/tmp/still', 'here')
    assert.equal(await sbx.files.read('/tmp/still'), 'here')
    await bg.kill()
    // sbxd's own stop (teardown: SIGKILL and cgroup.kill from the host) still works.
    const pid = hostPidOf(sbx.sandboxId)
    assert.ok(pid > 0 && existsSync(`/proc/${pid}`))
    assert.equal(await sbx.kill(), true)
    assert.ok(await waitFor(() => !existsSync(`/proc/${pid}`), 60000), 'the agent outlived kill()')
  } finally {
    await sbx.kill().catch(() => {})
  }
})

test('A9: SIGTERM from the host, outside the sandbox, still stops the agent', { timeout: 120000 }, async () => {
  const sbx = await Sandbox.create()
  try {
    await sbx.commands.run('sleep 600', { background: true })
    const pid = hostPidOf(sbx.sandboxId)
    assert.ok(pid > 0 && existsSync(`/proc/${pid}`))
    process.kill(pid, 'SIGTERM')
    assert.ok(await waitFor(() => !existsSync(`/proc/${pid}`), 60000), 'the agent ignored the host')
    await assert.rejects(sbx.commands.run('echo alive', { timeoutMs: 30000 }))
  } finally {
    await sbx.kill().catch(() => {})
  }
})
