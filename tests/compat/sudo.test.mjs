// sudo in the Debian "base" template (templates/README.md, "sudo"; guest-agent/sudo/) through
// the unmodified `e2b` SDK: the default user runs commands as root without a password, as on
// E2B; root under sudo holds only the file and user capabilities of the sandbox's own user
// namespace (useradd, dpkg), and only the default user and root may.
// The client is in base's own layer: when build-all.sh fell back to the host-/usr templates
// (<state>/templates/.fallback, no Debian mirror), base has no sbx sudo and these tests skip,
// saying why.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox, CommandExitError, TimeoutError } from 'e2b'
import { useSandbox } from '../lib/env.mjs'

const STATE = process.env.SBX_TEST_STATE
const fallback = join(STATE || '', 'templates/.fallback')
const skip = existsSync(fallback)
  ? `the Debian base is absent (${readFileSync(fallback, 'utf8').trim()}): base is the host-/usr template, without sbx's sudo`
  : false
let sbx
useSandbox(() => (skip ? null : Sandbox.create()), (s) => (sbx = s))

const run = async (cmd, opts) => (await sbx.commands.run(cmd, opts)).stdout
const fails = async (cmd, opts) => {
  try {
    await sbx.commands.run(cmd, opts)
  } catch (e) {
    if (e instanceof CommandExitError) return e
    throw e
  }
  assert.fail(`${cmd} succeeded`)
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
// Poll until the pattern no longer matches a process (the agent kills the command's group).
const gone = async (pattern) => {
  for (let i = 0; i < 50; i++) {
    if ((await run(`pgrep -u root -f '^${pattern}$' | wc -l`)) === '0\n') return true
    await sleep(100)
  }
  return false
}

test('sudo runs as root, -u another user, for the default user without a password', { skip }, async () => {
  assert.equal(await run('id -un'), 'user\n')
  assert.equal(await run('sudo whoami'), 'root\n')
  assert.equal(await run('sudo -n id -u'), '0\n')
  assert.equal(await run('sudo -u nobody id -u'), '65534\n')
  assert.equal(await run('sudo --user=nobody id -un'), 'nobody\n')
  assert.equal(await run("sudo sh -c 'echo $(id -u) $HOME $SUDO_USER'"), '0 /root user\n')
  assert.equal(await run('cd /tmp && sudo pwd'), '/tmp\n')
  assert.equal(await run('sudo -i pwd'), '/root\n')
  assert.equal(await run('sudo -s -- echo hi there'), 'hi there\n')
  assert.equal(await run('sudo -l >/dev/null && sudo -v && sudo -k && echo ok'), 'ok\n')
  assert.match(await run('sudo apt-get --version'), /^apt \d/)
})

test('stdin, stdout and exit statuses pass through', { skip }, async () => {
  assert.equal(await run('echo hi | sudo tee /root/x'), 'hi\n')
  assert.equal(await run('sudo cat /root/x'), 'hi\n')
  assert.equal(await run('sudo stat -c %U /root/x'), 'root\n')
  assert.equal((await fails("sudo sh -c 'exit 7'")).exitCode, 7)
  assert.equal((await fails('sudo cat /root/missing')).exitCode, 1)
  const e = await fails('sudo no-such-command')
  assert.equal(e.exitCode, 127)
  assert.match(e.stderr, /no-such-command/)
})

test('-E keeps the environment; without it only the terminal and locale come along', { skip }, async () => {
  assert.equal(await run('FOO=bar sudo -E sh -c \'echo "$FOO"\''), 'bar\n')
  assert.equal(await run('FOO=bar sudo sh -c \'echo "[$FOO]"\''), '[]\n')
  assert.equal(await run('LANG=C.UTF-8 sudo sh -c \'echo "$LANG"\''), 'C.UTF-8\n')
  assert.equal(await run('sudo FOO=1 sh -c \'echo "$FOO"\''), '1\n')
})

// CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETGID, CAP_SETUID (bits 0 1 3 4 6 7)
const ROOT_CAPS = '00000000000000db'

test('root under sudo has the file and user capabilities of the sandbox user ns only, and no_new_privs', { skip }, async () => {
  const st = await run('sudo cat /proc/self/status')
  assert.match(st, new RegExp(`^CapEff:\\s+${ROOT_CAPS}$`, 'm'))
  assert.match(st, new RegExp(`^CapPrm:\\s+${ROOT_CAPS}$`, 'm'))
  assert.match(st, new RegExp(`^CapBnd:\\s+${ROOT_CAPS}$`, 'm'))
  assert.match(st, /^CapAmb:\s+0000000000000000$/m)
  assert.match(st, /^NoNewPrivs:\s+1$/m)
  // kept across exec by root's children (apt-get -> dpkg -> a maintainer script)
  assert.match(await run("sudo sh -c 'sh -c \"grep CapEff /proc/self/status\"'"), new RegExp(ROOT_CAPS))
  // another target user gets nothing; root reached through envd holds the same set
  // (tests/compat/root.test.mjs)
  assert.match(await run('sudo -u nobody cat /proc/self/status'), /^CapEff:\s+0000000000000000$/m)
  assert.match(await run('cat /proc/self/status', { user: 'root' }), new RegExp(`^CapBnd:\\s+${ROOT_CAPS}$`, 'm'))
  // root under sudo reads and owns the sandbox's files as root does in a VM
  await run('chmod 700 ~ && touch ~/private && chmod 600 ~/private')
  assert.equal(await run('sudo cat /home/user/private && echo read'), 'read\n')
  await run('chmod 755 ~')
})

test('sudo useradd makes a user with its home, and apt can drop to its download user', { skip }, async () => {
  await run('sudo useradd -m -s /bin/bash bob')
  try {
    assert.match(await run('id bob'), /^uid=\d+\(bob\) gid=\d+\(bob\) groups=\d+\(bob\)$/m)
    assert.equal(await run('stat -c %U:%G /home/bob'), 'bob:bob\n')
    assert.equal(await run('sudo -u bob sh -c \'touch ~/made && stat -c %U ~/made\''), 'bob\n')
    assert.match(await run('sudo grep ^bob: /etc/shadow'), /^bob:/)
    assert.equal(await run('sudo chown bob /tmp && stat -c %U /tmp && sudo chown root /tmp'), 'bob\n')
    // apt's sandbox user: setgroups, setresgid and setresuid to _apt
    assert.equal(await run('sudo setpriv --reuid=_apt --regid=nogroup --clear-groups id -un'), '_apt\n')
    // a package whose maintainer script adds a system user and gives it a directory, as
    // `apt-get install` of a daemon does (dpkg from a local .deb: the sandbox has no mirror)
    await run(`set -e; d=$(mktemp -d); mkdir -p $d/DEBIAN $d/usr/share/sbx-svc
      printf 'Package: sbx-svc\\nVersion: 1\\nArchitecture: all\\nMaintainer: t <t@t>\\nDescription: t\\n' >$d/DEBIAN/control
      printf '#!/bin/sh\\nset -e\\nuseradd --system --home-dir /var/lib/sbx-svc --create-home svc\\nchown svc: /usr/share/sbx-svc\\n' >$d/DEBIAN/postinst
      chmod 755 $d/DEBIAN/postinst; dpkg-deb --root-owner-group -b $d /tmp/sbx-svc.deb >/dev/null`)
    await run('sudo dpkg -i /tmp/sbx-svc.deb >/dev/null')
    assert.equal(await run('stat -c %U /var/lib/sbx-svc /usr/share/sbx-svc'), 'svc\nsvc\n')
    assert.match(await run('dpkg -s sbx-svc'), /^Status: install ok installed$/m)
  } finally {
    await run('sudo dpkg -P sbx-svc >/dev/null 2>&1; sudo userdel -r svc 2>/dev/null; sudo userdel -r bob; true')
  }
  assert.match((await fails('id bob')).stderr, /no such user/)
})

test('signals the client gets are forwarded to the command', { skip }, async () => {
  const h = await sbx.commands.run(
    "sudo sh -c 'trap \"echo got-term; exit 3\" TERM; sleep 977 & wait'", { background: true })
  await sleep(500)
  await run('pkill -TERM -x sudo')
  const e = await h.wait().catch((x) => x)
  assert.ok(e instanceof CommandExitError, String(e))
  assert.equal(e.exitCode, 3)
  assert.equal(e.stdout, 'got-term\n')
})

test('Ctrl-C in a terminal reaches the command through sudo', { skip }, async () => {
  let out = ''
  const t = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d) } })
  try {
    await sbx.pty.sendInput(t.pid, new TextEncoder().encode('sudo sleep 993\n'))
    for (let i = 0; i < 50 && (await run("pgrep -u root -f '^sleep 993$' | wc -l")) !== '1\n'; i++) await sleep(100)
    await sbx.pty.sendInput(t.pid, new Uint8Array([3]))
    assert.ok(await gone('sleep 993'), 'Ctrl-C did not end the command')
    await sbx.pty.sendInput(t.pid, new TextEncoder().encode('echo "status=$?"\n'))
    for (let i = 0; i < 50 && !out.includes('status=130'); i++) await sleep(100)
    assert.match(out, /status=130/) // died of SIGINT, as sudo does when its command does
  } finally {
    await sbx.pty.kill(t.pid).catch(() => {})
  }
})

test('a sudo killed by commands.kill or its timeout ends its command', { skip }, async () => {
  const h = await sbx.commands.run('sudo sleep 991', { background: true })
  await sleep(500)
  assert.equal(await run("pgrep -u root -f '^sleep 991$' | wc -l"), '1\n')
  assert.equal(await sbx.commands.kill(h.pid), true)
  assert.ok(await gone('sleep 991'), 'the command outlived its sudo')

  await assert.rejects(sbx.commands.run('sudo sleep 992', { timeoutMs: 1000 }),
    (e) => e instanceof TimeoutError)
  assert.ok(await gone('sleep 992'), 'the command outlived its timed-out sudo')
})

test('users other than the default user and root are refused', { skip }, async () => {
  // (not with useradd: shadow's useradd aborts when it cannot open the audit netlink socket,
  // which the sandbox's seccomp refuses with EPERM, battery B12)
  await run("echo 'other:x:1234:1234::/tmp:/bin/sh' | sudo tee -a /etc/passwd")
  const e = await fails('sudo true', { user: 'other' })
  assert.equal(e.exitCode, 1)
  assert.match(e.stderr, /^sudo: uid 1234 may not use sudo in this sandbox/)
  // refused callers take no session: 40 connections of theirs held open crowd out nobody
  const held = await sbx.commands.run(
    "python3 -c \"import socket,time\nl=[]\nfor i in range(40):\n s=socket.socket(socket.AF_UNIX);s.connect('\\\\0sbx-sudo');l.append(s)\nprint('held',flush=True)\ntime.sleep(30)\"",
    { background: true, user: 'other' })
  for (let i = 0; i < 50 && !held.stdout.includes('held'); i++) await sleep(100)
  assert.match(held.stdout, /held/)
  assert.equal(await run('sudo whoami'), 'root\n')
  await sbx.commands.kill(held.pid)
  // root may
  assert.equal(await run('sudo -u nobody id -u', { user: 'root' }), '65534\n')
})

test('bad options are clear errors', { skip }, async () => {
  const e = await fails('sudo -Z true')
  assert.equal(e.exitCode, 1)
  assert.match(e.stderr, /invalid option/)
  assert.match((await fails('sudo -u nosuchuser true')).stderr, /unknown user nosuchuser/)
  assert.match((await fails('sudo -i -s true')).stderr, /both the -i and -s/)
})

// The escape battery's sudo row (docs/escape-battery.md): a hostile client of the agent's
// socket gets a clear refusal and nothing else, and the agent keeps serving.
const hostile = `
import os, socket, struct, sys, time
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect('\\0sbx-sudo')
    s.settimeout(15)
    return s
def answer(s):
    b = b''
    while True:
        k = s.recv(4096)
        if not k: break
        b += k
        if b[:1] == b'E' and len(b) >= 3 and len(b) >= 3 + b[1] + 256 * b[2]: break
    return b[:1].decode() + ':' + b[3:].decode(errors='replace') if b[:1] == b'E' else repr(b)
def head(n): return b'SBXSUDO1' + struct.pack('<I', n)
def with_fds(s, data, fds):
    s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('%di' % len(fds), *fds))])
body = b'u=root\\0f=\\0a=true\\0'
what = sys.argv[1]
s = conn()
if what == 'garbage':
    s.sendall(b'hello, agent!')
elif what == 'nofds':
    s.sendall(head(len(body)) + body)
elif what == 'fewfds':
    with_fds(s, head(len(body)), [0, 1])
elif what == 'manyfds':
    with_fds(s, head(len(body)), [0, 1, 2, 0, 1, 2, 0, 1])
elif what == 'cwdfile':
    f = os.open('/etc/hostname', os.O_RDONLY)
    with_fds(s, head(len(body)), [0, 1, 2, f])
elif what == 'huge':
    d = os.open('/', os.O_RDONLY)
    with_fds(s, head(2 << 20), [0, 1, 2, d])
elif what == 'badfield':
    d = os.open('/', os.O_RDONLY)
    b = b'u=root\\0z=what\\0a=true\\0'
    with_fds(s, head(len(b)), [0, 1, 2, d]); s.sendall(b)
elif what == 'unterminated':
    d = os.open('/', os.O_RDONLY)
    b = b'u=root\\0a=true'
    with_fds(s, head(len(b)), [0, 1, 2, d]); s.sendall(b)
elif what == 'leave':
    d = os.open('/', os.O_RDONLY)
    with_fds(s, head(100), [0, 1, 2, d]); s.sendall(b'u=ro')
    s.close(); print('left'); sys.exit(0)
print(answer(s))
`

test('escape battery: a hostile sudo client gets a clear refusal; the agent keeps serving', { skip }, async () => {
  await sbx.files.write('/tmp/hostile.py', hostile)
  const h = async (what) => run(`python3 /tmp/hostile.py ${what}`)
  assert.match(await h('garbage'), /^E:not a sudo request/)
  assert.match(await h('nofds'), /^E:malformed request \(it must pass exactly 4 fds/)
  assert.match(await h('fewfds'), /^E:malformed request \(it must pass exactly 4 fds/)
  assert.match(await h('manyfds'), /^E:malformed request \(it must pass exactly 4 fds/)
  assert.match(await h('cwdfile'), /^E:malformed request \(the working directory is not a directory\)/)
  assert.match(await h('huge'), /^E:request too large \(2097152 bytes; at most 1048576\)/)
  assert.match(await h('badfield'), /^E:malformed request \(unknown field\)/)
  assert.match(await h('unterminated'), /^E:malformed request \(fields must end with NUL\)/)
  assert.equal(await h('leave'), 'left\n')
  assert.equal(await run('sudo whoami'), 'root\n')
})

test('escape battery: at most 32 sudo sessions at once, then a clear refusal', { skip }, async () => {
  const held = await sbx.commands.run(
    "python3 -c \"import socket,time\nl=[]\nfor i in range(32):\n s=socket.socket(socket.AF_UNIX);s.connect('\\\\0sbx-sudo');l.append(s)\nprint('held',flush=True)\ntime.sleep(30)\"",
    { background: true })
  for (let i = 0; i < 50 && !held.stdout.includes('held'); i++) await sleep(100)
  await sleep(200)
  const e = await fails('sudo true')
  assert.match(e.stderr, /^sudo: too many sudo commands at once \(at most 32\)/)
  await sbx.commands.kill(held.pid)
  let ok = ''
  for (let i = 0; i < 50 && ok !== 'root\n'; i++) ok = await run('sudo whoami').catch(() => '')
  assert.equal(ok, 'root\n')
})

test('escape battery: sudo grants nothing beyond sandbox root and is per sandbox', { skip }, async () => {
  // nobody can take the agent's name, not even sandbox root
  const bind = "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.bind('\\\\0sbx-sudo')\""
  assert.match((await fails(`sudo ${bind}`)).stderr, /Address already in use/)
  // root under sudo has none of the capabilities beyond owning files and switching users
  assert.match((await fails('sudo mknod /tmp/null2 c 1 3')).stderr, /Operation not permitted/)
  assert.match((await fails('sudo chroot / true')).stderr, /Operation not permitted/)
  assert.match((await fails('sudo cat /proc/1/environ')).stderr, /Permission denied/)
  // another sandbox has its own agent behind its own socket (its own network namespace)
  await run('sudo touch /root/only-in-a')
  const b = await Sandbox.create()
  try {
    const r = await b.commands.run('sudo ls /root/only-in-a').catch((x) => x)
    assert.ok(r instanceof CommandExitError, 'the other sandbox saw the first sandbox\'s file')
    assert.equal((await b.commands.run('sudo whoami')).stdout, 'root\n')
  } finally {
    await b.kill()
  }
})
