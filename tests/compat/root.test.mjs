// Root reached the E2B way (`commands.run(cmd, { user: 'root' })`, `pty.create({ user: 'root' })`,
// the file APIs as root, the native /v1 exec as root) is root as under sudo: it holds exactly
// the file and user capabilities of the sandbox's own user namespace (guest-agent/core/users.h
// agent_user_caps(): CAP_CHOWN CAP_DAC_OVERRIDE CAP_FOWNER CAP_FSETID CAP_SETUID CAP_SETGID),
// so useradd, chown and apt's drop to _apt work as E2B users expect, and nothing beyond them
// (escape battery A3, A10). Other users hold nothing.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError } from 'e2b'
import { v1 } from '../integration/v1-lib.mjs'
import { useSandbox } from '../lib/env.mjs'

// bits 0 1 3 4 6 7
const ROOT_CAPS = '00000000000000db'
const NONE = '0000000000000000'
let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

const asRoot = async (cmd) => (await sbx.commands.run(cmd, { user: 'root' })).stdout
const refused = async (cmd) => {
  try {
    await sbx.commands.run(cmd, { user: 'root' })
  } catch (e) {
    if (e instanceof CommandExitError) return e.stderr
    throw e
  }
  assert.fail(`${cmd} succeeded as root`)
}
const capsOf = (status) =>
  Object.fromEntries([...status.matchAll(/^(Cap\w+|NoNewPrivs):\s+(\S+)$/gm)].map((m) => [m[1], m[2]]))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

test('commands.run as root holds exactly root\'s six capabilities, kept by its children; the user none', async () => {
  const root = capsOf(await asRoot('cat /proc/self/status'))
  assert.deepEqual(root, { CapInh: NONE, CapPrm: ROOT_CAPS, CapEff: ROOT_CAPS, CapBnd: ROOT_CAPS, CapAmb: NONE, NoNewPrivs: '1' })
  assert.match(await asRoot("sh -c 'sh -c \"grep CapEff /proc/self/status\"'"), new RegExp(ROOT_CAPS))
  const user = capsOf((await sbx.commands.run('cat /proc/self/status')).stdout)
  assert.deepEqual(user, { CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapBnd: NONE, CapAmb: NONE, NoNewPrivs: '1' })
  // root switching to another user leaves the capabilities behind, as the kernel does
  assert.match(await asRoot('setpriv --reuid=nobody --regid=nogroup --clear-groups grep CapEff /proc/self/status'),
    new RegExp(`CapEff:\\s+${NONE}`))
})

test('useradd, chown and apt\'s _apt switch work for root through commands.run', async () => {
  try {
    const out = await asRoot('useradd -m -s /bin/bash bob && id bob && touch /home/bob/x && chown bob /home/bob/x && stat -c %U:%G /home/bob /home/bob/x')
    assert.match(out, /^uid=\d+\(bob\) gid=\d+\(bob\) groups=\d+\(bob\)$/m)
    assert.match(out, /^bob:bob\nbob:root\n$/m)
    assert.match(await asRoot('grep ^bob: /etc/shadow'), /^bob:/)
    assert.equal(await asRoot('setpriv --reuid=bob --regid=bob --init-groups id -un'), 'bob\n')
    assert.equal(await asRoot('setpriv --reuid=_apt --regid=nogroup --clear-groups id -un'), '_apt\n')
    // root reads and changes the user's private files, as root in a VM
    await sbx.commands.run('echo mine > ~/private && chmod 600 ~/private')
    assert.equal(await asRoot('cat /home/user/private && chown root /home/user/private && stat -c %U /home/user/private'), 'mine\nroot\n')
  } finally {
    await asRoot('userdel -r bob 2>/dev/null; rm -f /home/user/private; true')
  }
})

test('a terminal and the native exec as root hold the same set', async () => {
  let out = ''
  const t = await sbx.pty.create({ cols: 120, rows: 24, user: 'root', onData: (d) => { out += new TextDecoder().decode(d) } })
  try {
    await sbx.pty.sendInput(t.pid, new TextEncoder().encode('grep -E "^Cap(Eff|Bnd)" /proc/self/status; echo done-$((6*7))\n'))
    for (let i = 0; i < 100 && !out.includes('done-42'); i++) await sleep(100)
    assert.match(out, new RegExp(`CapEff:\\s+${ROOT_CAPS}`))
    assert.match(out, new RegExp(`CapBnd:\\s+${ROOT_CAPS}`))
  } finally {
    await sbx.pty.kill(t.pid).catch(() => {})
  }
  const r = await v1('POST', `/v1/sandboxes/${sbx.sandboxId}/exec`,
    { body: { cmd: ['grep', '-E', '^Cap(Prm|Eff|Bnd)', '/proc/self/status'], user: 'root' } })
  assert.equal(r.status, 200, r.text)
  assert.equal(r.json.result.stdout, `CapPrm:\t${ROOT_CAPS}\nCapEff:\t${ROOT_CAPS}\nCapBnd:\t${ROOT_CAPS}\n`)
  const u = await v1('POST', `/v1/sandboxes/${sbx.sandboxId}/exec`,
    { body: { cmd: ['grep', '-E', '^CapEff', '/proc/self/status'] } })
  assert.equal(u.json.result.stdout, `CapEff:\t${NONE}\n`)
})

test('the file APIs as root have a root shell\'s rights over the user\'s files', async () => {
  await sbx.commands.run('echo mine > ~/secret && chmod 600 ~/secret && mkdir -m 700 ~/closed')
  try {
    assert.equal(await sbx.files.read('/home/user/secret', { user: 'root' }), 'mine\n')
    await sbx.files.write('/home/user/closed/by-root', 'x', { user: 'root' })
    assert.equal((await sbx.files.getInfo('/home/user/closed/by-root', { user: 'root' })).owner, 'root')
    // the user does not gain from root's rights
    await assert.rejects(sbx.files.read('/root/.profile'))
  } finally {
    await asRoot('rm -rf /home/user/secret /home/user/closed')
  }
})

test('root through commands.run still cannot mknod, mount, chroot or read the agent\'s environment', async () => {
  assert.match(await refused('mknod /tmp/null2 c 1 3'), /Operation not permitted/)
  // mount(2) itself (base has no mount(8))
  const mount = "mkdir -p /tmp/m && python3 -c \"import ctypes,os,sys; l=ctypes.CDLL(None,use_errno=True); " +
    "r=l.mount(b'none',b'/tmp/m',b'tmpfs',0,None); sys.exit('mount: '+os.strerror(ctypes.get_errno()) if r else 0)\""
  assert.match(await refused(mount), /^mount: Operation not permitted$/m)
  assert.match(await refused('chroot / true'), /Operation not permitted/)
  assert.match(await refused('cat /proc/1/environ'), /Permission denied/)
  assert.match(await refused('cat /proc/1/root/etc/hostname'), /Permission denied/)
  // read-only mounts stay read-only for root's CAP_DAC_OVERRIDE (the agent's own binary)
  assert.match(await refused('touch /.sbx/sbx-agent'), /Read-only file system|Permission denied/)
  assert.match(await refused('echo x > /proc/sys/kernel/hostname'), /Read-only file system|Permission denied/)
})
