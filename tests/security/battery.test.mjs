// Escape battery (docs/escape-battery.md) groups A, B and E1/E3, checked from inside
// a real sandbox: tests/security/probe.c is uploaded through the files API and run as sandbox
// code, first as `user` (the default) and then as `root` (root inside, nobody outside).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readlinkSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { API_URL, hostPidOf } from '../lib/env.mjs'

const PROBE = `${process.env.SBX_TEST_BUILD}/tests/security/sbx-probe`
let sbx

async function probe(args, opts = {}) {
  const r = await sbx.commands.run(`/home/user/sbx-probe ${args}`, opts)
  return r.stdout.trim().split('\n').map((l) => JSON.parse(l))
}

before(async () => {
  sbx = await Sandbox.create()
  await sbx.files.write('/home/user/sbx-probe', readFileSync(PROBE))
  await sbx.commands.run('chmod 755 /home/user/sbx-probe')
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
})

// CAP_CHOWN CAP_DAC_OVERRIDE CAP_FOWNER CAP_FSETID CAP_SETGID CAP_SETUID (bits 0 1 3 4 6 7): what
// sandbox root holds however it is reached (guest-agent/core/users.h agent_user_caps())
const ROOT_CAPS = '00000000000000db'

for (const user of ['user', 'root']) {
  test(`A1-A3 (${user}): NoNewPrivs 1, Seccomp 2, ${user === 'root' ? "root's six capabilities only" : 'no capabilities at all'}`, async () => {
    const [id] = await probe('identity', { user })
    assert.equal(id.NoNewPrivs, '1')
    assert.equal(id.Seccomp, '2')
    const held = user === 'root' ? ROOT_CAPS : '0000000000000000'
    for (const k of ['CapEff', 'CapPrm', 'CapBnd']) assert.equal(id[k], held, `${k} = ${id[k]}`)
    for (const k of ['CapInh', 'CapAmb']) assert.equal(id[k], '0000000000000000', `${k} = ${id[k]}`)
    assert.equal(id.Uid.split(/\s+/)[0], user === 'root' ? '0' : '1000')
  })
}

test('A4: sandbox uids map to an unprivileged host range, root included', async () => {
  const [id] = await probe('identity')
  const [inside, outside, count] = id.uid_map.trim().split(/\s+/).map(Number)
  assert.equal(inside, 0)
  assert.ok(outside >= 65536, `sandbox root maps to host uid ${outside}`)
  assert.ok(count <= 65536)
  const [gi, go] = id.gid_map.trim().split(/\s+/).map(Number)
  assert.equal(gi, 0)
  assert.ok(go >= 65536)
  // Two sandboxes get distinct ranges.
  const other = await Sandbox.create()
  try {
    const r = await other.commands.run('cat /proc/self/uid_map')
    const otherOutside = Number(r.stdout.trim().split(/\s+/)[1])
    assert.notEqual(otherOutside, outside)
    assert.ok(Math.abs(otherOutside - outside) >= count, 'uid ranges overlap')
  } finally {
    await other.kill()
  }
})

test('A5: every namespace differs from the host', async () => {
  const [id] = await probe('identity')
  for (const ns of ['user', 'pid', 'mnt', 'net', 'ipc', 'uts', 'cgroup']) {
    const host = readlinkSync(`/proc/self/ns/${ns}`)
    assert.ok(id.ns[ns], `no ${ns} namespace link`)
    assert.notEqual(id.ns[ns], host, `${ns} namespace is the host's`)
  }
})

test('A6/A7: pid 1 is the agent; host processes and pid 1 root are out of reach', async () => {
  const [id] = await probe('identity')
  assert.equal(id.pid1_comm, 'sbx-agent')
  assert.notEqual(id.proc1_root_errno, 0, '/proc/1/root/etc/passwd was readable')
  assert.ok(id.max_visible_pid < 1000, `sees pid ${id.max_visible_pid}`)
  const hostPid = hostPidOf(sbx.sandboxId)
  if (hostPid) {
    const r = await sbx.commands.run(`test -e /proc/${process.pid}/status && echo visible || echo hidden`)
    assert.equal(r.stdout.trim(), 'hidden')
  }
  // CVE-2019-5736: the agent binary cannot be opened for writing through /proc.
  assert.notEqual(id.proc1_exe_write_errno, 0)
  assert.notEqual(id.self_exe_write_errno, 0)
})

test('A8: only stdin, stdout and stderr are open in sandbox code', async () => {
  const [id] = await probe('identity')
  const fds = id.fds.map((f) => f.fd).sort((a, b) => a - b)
  assert.deepEqual(fds, [0, 1, 2], JSON.stringify(id.fds))
  // CVE-2024-21626: no fd leads outside; cwd through /proc/self/fd/N fails for every N.
  const r = await sbx.commands.run('for n in 0 1 2 3 4 5 6 7 8 9; do (cd /proc/self/fd/$n 2>/dev/null && echo "cd ok $n"); done; true')
  assert.equal(r.stdout, '')
})

for (const user of ['user', 'root']) {
  test(`B1-B13 (${user}): each listed syscall is denied with EPERM or ENOSYS (netlink: EPROTONOSUPPORT)`, async () => {
    const rows = await probe('syscalls', { user })
    const byName = Object.fromEntries(rows.map((r) => [r.syscall, r]))
    const EPERM = 1, ENOSYS = 38, EACCES = 13, EPROTONOSUPPORT = 93
    const denied = rows.filter((r) => !['getpid'].includes(r.syscall))
    assert.ok(denied.length >= 60, `only ${denied.length} probes ran`)
    for (const r of denied) {
      assert.equal(r.ret, -1, `${r.syscall} succeeded (ret ${r.ret})`)
      // netlink but NETLINK_ROUTE: the answer of a kernel without the family (libaudit then
      // runs without audit, so useradd works)
      if (r.syscall.startsWith('socket_netlink_')) {
        assert.equal(r.errno, EPROTONOSUPPORT, `${r.syscall}: errno ${r.errno}`)
        continue
      }
      // TIOCSTI on a non-tty stdin would be ENOTTY; seccomp must answer first.
      assert.ok([EPERM, ENOSYS, EACCES].includes(r.errno), `${r.syscall}: errno ${r.errno}`)
    }
    // clone3 must be ENOSYS so glibc falls back to clone (flags in memory are unfilterable).
    assert.equal(byName.clone3.errno, ENOSYS)
    assert.ok(byName.getpid.ret > 0)
  })
}

test('B: the agent survives the battery and keeps serving', async () => {
  await probe('syscalls', { user: 'root' })
  const r = await sbx.commands.run('echo alive')
  assert.equal(r.stdout, 'alive\n')
  const health = await fetch(`${API_URL}/health`, {
    headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' },
  })
  assert.equal(health.status, 204)
})

test('E1/E3: no network but loopback; outside targets, host loopback and UDP all fail', async () => {
  const port = new URL(API_URL).port
  const rows = await probe(`net ${port}`, { user: 'root' })
  const info = rows[0]
  const ifaces = info.netdev.split('\n').slice(2).filter(Boolean).map((l) => l.trim().split(':')[0])
  assert.deepEqual(ifaces, ['lo'])
  assert.equal(info.route4.trim().split('\n').length, 1, 'IPv4 routes exist')
  const attempts = rows.slice(1)
  assert.ok(attempts.length >= 9, JSON.stringify(rows))
  // Refused locally: no route (ENETUNREACH), nobody listening on the sandbox's own loopback
  // (ECONNREFUSED), or denied. Pending (EINPROGRESS) or connected (0) fail the test.
  const refusals = [1, 13, 99, 101, 111, 113]
  for (const a of attempts) {
    assert.ok(refusals.includes(a.errno), `${a.proto} ${a.target}:${a.port} → errno ${a.errno}`)
  }
  // sbxd listens on the host's 127.0.0.1; the sandbox's loopback is its own.
  const hostLo = attempts.find((a) => a.target === '127.0.0.1')
  assert.equal(hostLo.errno, 111 /* ECONNREFUSED */)
  // Loopback inside the sandbox works.
  const lo = await sbx.commands.run(
    "python3 -c \"import socket;s=socket.socket();s.bind(('127.0.0.1',0));s.listen();c=socket.create_connection(s.getsockname());print('ok')\"")
  assert.equal(lo.stdout.trim(), 'ok')
})
