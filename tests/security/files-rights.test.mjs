// Escape battery C20-C22 (docs/escape-battery.md): the file APIs give a sandbox user, root
// included, exactly the rights a shell of that user has, never the agent's own. Checked through
// the unmodified npm `e2b` SDK and the native /v1 routes against a real host directory that is
// 0700 to another host uid and visible in the sandbox through the read-only, idmapped /usr of
// templates/base-host (the template that binds the host's /usr; base is a Debian root file
// system of its own), against the agent's own /proc entries, and against the user's files.
// Runs as host root: it creates the host directory and removes it afterwards.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { chmodSync, chownSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { Sandbox } from 'e2b'
import { v1 } from '../integration/v1-lib.mjs'

const host = `/usr/local/share/sbx-test-${randomBytes(6).toString('hex')}`
const secret = `${host}/secret`
let sbx

// A host uid (and gid) that no host user or group has: ids from /etc/passwd and /etc/group.
function unusedId() {
  const used = new Set()
  for (const f of ['/etc/passwd', '/etc/group'])
    for (const line of readFileSync(f, 'utf8').split('\n')) used.add(Number(line.split(':')[2]))
  for (let id = 52000 + Math.floor(Math.random() * 8000); ; id++) if (!used.has(id)) return id
}

before(async () => {
  const id = unusedId()
  mkdirSync(`${secret}/sub`, { recursive: true, mode: 0o755 })
  writeFileSync(`${secret}/file`, 'host secret\n', { mode: 0o644 })
  writeFileSync(`${secret}/sub/deep`, 'deeper\n', { mode: 0o644 })
  mkdirSync(`${host}/open`, { mode: 0o755 })
  writeFileSync(`${host}/open/visible`, 'anyone\n', { mode: 0o644 })
  for (const p of [`${secret}/sub/deep`, `${secret}/sub`, `${secret}/file`, secret, `${host}/open/visible`, `${host}/open`])
    chownSync(p, id, id)
  chmodSync(secret, 0o700)
  chmodSync(host, 0o755)
  sbx = await Sandbox.create('base-host')
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  rmSync(host, { recursive: true, force: true })
})

// What a shell of the user answers: { ok, out } (stdout on success, stderr otherwise).
async function shell(cmd, user) {
  try {
    const r = await sbx.commands.run(cmd, { user })
    return { ok: true, out: r.stdout }
  } catch (e) {
    return { ok: false, out: String(e.stderr ?? e.message) }
  }
}
const outcome = async (p) => {
  try { return { ok: true, value: await p } } catch (e) { return { ok: false, error: e } }
}
const names = (list) => list.map((e) => e.name).sort().join('\n') + '\n'
const q = (p) => encodeURIComponent(p)
const nat = (p) => `/v1/sandboxes/${sbx.sandboxId}${p}`

test('C20: a host directory 0700 to another uid, seen through /usr, is as closed to the file APIs as to a shell', { timeout: 120000 }, async () => {
  // The positive control: the same uid's 0755 directory is open to both.
  for (const user of ['root', 'user']) {
    const sh = await shell(`ls -1A ${host}/open`, user)
    assert.deepEqual(sh, { ok: true, out: 'visible\n' }, user)
    assert.equal(names(await sbx.files.list(`${host}/open`, { user })), sh.out, user)
    assert.equal(await sbx.files.read(`${host}/open/visible`, { user }), 'anyone\n')
  }
  for (const user of ['root', 'user']) {
    for (const dir of [secret, `${secret}/sub`]) {
      const sh = await shell(`ls -1A ${dir}`, user)
      assert.equal(sh.ok, false, `${user}: a shell lists ${dir}`)
      assert.match(sh.out, /Permission denied/)
      const api = await outcome(sbx.files.list(dir, { user }))
      assert.equal(api.ok, false, `${user}: files.list(${dir}) gave ${JSON.stringify(api.value)}`)
    }
    for (const file of [`${secret}/file`, `${secret}/sub/deep`]) {
      assert.equal((await shell(`cat ${file}`, user)).ok, false)
      const read = await outcome(sbx.files.read(file, { user }))
      assert.equal(read.ok, false, `${user}: files.read(${file}) gave ${JSON.stringify(read.value)}`)
      assert.equal((await shell(`stat ${file}`, user)).ok, false)
      assert.equal((await outcome(sbx.files.getInfo(file, { user }))).ok, false, `${user}: getInfo(${file})`)
    }
    const w = await outcome(sbx.files.watchDir(secret, () => {}, { user }))
    if (w.ok) await w.value.stop()
    assert.equal(w.ok, false, `${user}: watchDir(${secret})`)
    // Changes fail too (the bind is read-only besides).
    for (const change of [
      () => sbx.files.write(`${secret}/new`, 'x', { user }),
      () => sbx.files.makeDir(`${secret}/sub/new`, { user }),
      () => sbx.files.rename(`${secret}/file`, '/tmp/stolen', { user }),
      () => sbx.files.remove(`${secret}/sub/deep`, { user }),
    ])
      assert.equal((await outcome(change())).ok, false, `${user}: ${change}`)
  }
  assert.equal(await shell('cat /tmp/stolen', 'root').then((r) => r.ok), false)
  // A process started there: a missing cwd is not told apart from a refused one, as by cd.
  for (const user of ['root', 'user']) {
    const seen = []
    for (const cwd of [`${secret}/sub`, `${secret}/nope`]) {
      const r = await outcome(sbx.commands.run('pwd', { cwd, user }))
      assert.equal(r.ok, false, `${user}: a process started in ${cwd}`)
      seen.push(`${r.error.name} ${r.error.exitCode} ${r.error.stderr ?? ''}`.replace(cwd, 'CWD'))
    }
    assert.equal(seen[0], seen[1], user)
    assert.match(seen[0], /Permission denied/)
  }

  // The native routes, as root.
  const list = await v1('GET', nat(`/fs/list?path=${q(secret)}&user=root`))
  assert.equal(list.status, 403, list.text)
  const stat = await v1('GET', nat(`/fs/stat?path=${q(`${secret}/file`)}&user=root`))
  assert.equal(stat.status, 403, stat.text)
  const get = await v1('GET', nat(`/files?path=${q(`${secret}/file`)}&user=root`))
  assert.equal(get.status, 403, get.text)
  const search = await v1('GET', nat(`/fs/search?path=${q(host)}&name=${q('*')}&user=root`))
  assert.equal(search.status, 200, search.text)
  const found = search.json.matches.map((m) => m.path).sort()
  assert.deepEqual(found, [`${host}/open`, `${host}/open/visible`, secret].sort(), search.text)
  const grep = await v1('GET', nat(`/fs/search?path=${q(host)}&content=secret&user=root`))
  assert.deepEqual(grep.json.matches, [], grep.text)
  const ac = new AbortController()
  const watch = await fetch(`${process.env.E2B_API_URL}${nat(`/fs/watch?path=${q(secret)}&user=root`)}`,
    { headers: { Authorization: `Bearer ${process.env.E2B_API_KEY}` }, signal: ac.signal })
  ac.abort()
  assert.equal(watch.status, 403)

  // The host directory is as it was.
  assert.equal(readFileSync(`${secret}/file`, 'utf8'), 'host secret\n')
  assert.deepEqual(readdirSync(secret).sort(), ['file', 'sub'])
  assert.deepEqual(readdirSync(`${secret}/sub`), ['deep'])
})

test('C21: the agent\'s own /proc entries give the file APIs no more than PID 1 gives a shell', { timeout: 120000 }, async () => {
  for (const user of ['root', 'user']) {
    // What PID 1's /proc refuses a shell, the file APIs are refused too.
    for (const p of ['/proc/1/environ', '/proc/1/maps', '/proc/1/auxv', '/proc/1/fd/0']) {
      assert.equal((await shell(`cat ${p}`, user)).ok, false, `${user}: a shell reads ${p}`)
      const r = await outcome(sbx.files.read(p, { user }))
      assert.equal(r.ok, false, `${user}: files.read(${p}) gave ${JSON.stringify(r.value)?.slice(0, 200)}`)
    }
    // /proc/self and /proc/thread-self are the agent for the file APIs, not a process of theirs.
    for (const p of ['/proc/self/maps', '/proc/thread-self/environ'])
      assert.equal((await outcome(sbx.files.read(p, { user }))).ok, false, `${user}: ${p}`)
    assert.equal((await shell('readlink /proc/1/fd/0', user)).ok, false)
    assert.equal((await outcome(sbx.files.getInfo('/proc/1/fd/0', { user }))).ok, false, `${user}: stat /proc/1/fd/0`)
    assert.equal((await outcome(sbx.files.list('/proc/1/fd', { user }))).ok, false, `${user}: list /proc/1/fd`)
    assert.equal((await outcome(sbx.files.write('/proc/1/comm', 'pwned', { user }))).ok, false, `${user}: write /proc/1/comm`)
  }
  assert.equal((await shell('ls /proc/1/fd', 'user')).ok, false)
  const nl = await v1('GET', nat(`/fs/list?path=${q('/proc/1/fd')}&user=root`))
  assert.equal(nl.status, 403, nl.text)
  assert.equal((await v1('GET', nat(`/files?path=${q('/proc/1/environ')}&user=root`))).status, 403)
  assert.equal((await shell('cat /proc/1/comm', 'user')).out, 'sbx-agent\n')
  // What is the same for every process stays readable, as in a shell.
  const version = await shell('cat /proc/version', 'user')
  assert.equal(await sbx.files.read('/proc/version'), version.out)
})

test('C22: root through the file APIs has a root shell\'s rights over the user\'s files, no more', { timeout: 120000 }, async () => {
  await sbx.commands.run('echo mine > /home/user/private.txt && chmod 600 /home/user/private.txt && mkdir -m 700 /home/user/closed')
  // root's six capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER, ...: guest-agent/core/users.h),
  // for a shell of root and for the file APIs as root alike
  assert.deepEqual(await shell('cat /home/user/private.txt', 'root'), { ok: true, out: 'mine\n' })
  assert.equal(await sbx.files.read('/home/user/private.txt', { user: 'root' }), 'mine\n')
  assert.deepEqual(await shell('ls -A /home/user/closed', 'root'), { ok: true, out: '' })
  assert.deepEqual(await sbx.files.list('/home/user/closed', { user: 'root' }), [])
  assert.equal((await shell('touch /home/user/by-root-shell', 'root')).ok, true)
  await sbx.files.write('/home/user/by-root', 'x', { user: 'root' })
  await sbx.files.makeDir('/home/user/closed/sub', { user: 'root' })
  for (const p of ['/home/user/by-root-shell', '/home/user/by-root', '/home/user/closed/sub'])
    assert.equal((await sbx.files.getInfo(p)).owner, 'root', p)
  await sbx.files.remove('/home/user/by-root', { user: 'root' })
  assert.equal((await shell('cat /home/user/private.txt', 'user')).out, 'mine\n')
  // The user keeps the user's own rights, and envd's parents within the sandbox's (envd/dirs.h):
  // a capability-less root's, never root's capabilities.
  assert.equal(await sbx.files.read('/home/user/private.txt'), 'mine\n')
  await sbx.files.write('/home/user/closed/a/b.txt', 'made')
  assert.equal((await sbx.files.getInfo('/home/user/closed/a')).owner, 'user')
  await sbx.commands.run('mkdir -m 700 /tmp/user-closed', { user: 'root' })
  await sbx.commands.run('chown 1234 /tmp/user-closed', { user: 'root' })
  assert.equal((await outcome(sbx.files.write('/tmp/user-closed/x/y.txt', 'no'))).ok, false)
})
