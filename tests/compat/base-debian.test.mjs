// The Debian "base" template (templates/README.md, "base") through the unmodified `e2b` SDK:
// what E2B's base image offers the default user, and none of the host's software. Needs the
// Debian mirror at template build time: when build-all.sh fell back to the host-/usr
// templates (<state>/templates/.fallback), these tests skip, saying why.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { useSandbox } from '../lib/env.mjs'

const STATE = process.env.SBX_TEST_STATE
const fallback = join(STATE || '', 'templates/.fallback')
const skip = existsSync(fallback)
  ? `the Debian mirror was unreachable when the templates were built (${readFileSync(fallback, 'utf8').trim()}): base is the host-/usr template`
  : false
let sbx
useSandbox(() => (skip ? null : Sandbox.create()), (s) => (sbx = s))

const run = async (cmd, opts) => (await sbx.commands.run(cmd, opts)).stdout

test('base is Debian of the host release, not the host /usr', { skip }, async () => {
  const tpl = JSON.parse(readFileSync(join(STATE, 'templates/base/template.json'), 'utf8'))
  assert.equal(tpl.binds, undefined)
  const host = readFileSync('/etc/os-release', 'utf8').match(/^VERSION_CODENAME=(.*)$/m)[1]
  assert.equal(await run('. /etc/os-release; echo $VERSION_CODENAME'), `${host}\n`)
  // the host's own software inventory is not visible
  assert.equal(await run('ls -A /usr/local/bin | wc -l'), '0\n')
})

test('python, pip, node, npm, git and curl are there for the default user', { skip }, async () => {
  assert.match(await run('python --version'), /^Python 3\.\d+\.\d+\n$/)
  assert.match(await run('python3 -c "import sys; print(sys.version_info[0])"'), /^3\n$/)
  assert.match(await run('pip --version'), /^pip \d+/)
  assert.match(await run('node -e "console.log(1 + 1)"'), /^2\n$/)
  assert.match(await run('npm --version'), /^\d+\.\d+\.\d+\n$/)
  assert.match(await run('git --version'), /^git version /)
  assert.match(await run('curl --version'), /^curl /)
  assert.match(await run('cc --version | head -n 1'), /gcc|cc/)
})

test('an agent can check the server it started: ip, ss, socat, ping are there', { skip }, async () => {
  const srv = await sbx.commands.run('python3 -m http.server 8765 --bind 127.0.0.1', { background: true })
  try {
    let ss = ''
    for (let i = 0; i < 50 && !ss.includes(':8765'); i++) {
      ss = await run('ss -Hltn')
      if (!ss.includes(':8765')) await new Promise((r) => setTimeout(r, 100))
    }
    assert.match(ss, /LISTEN .*127\.0\.0\.1:8765/)
    assert.match(await run('ip -o addr show lo'), /inet 127\.0\.0\.1\/8/)
    assert.match(await run('ip route; echo ok'), /ok\n$/)
    assert.equal(await run('printf "GET / HTTP/1.0\\r\\n\\r\\n" | socat - TCP:127.0.0.1:8765 | head -n 1'), 'HTTP/1.0 200 OK\r\n')
    for (const tool of ['ping', 'gpg', 'patch']) assert.match(await run(`command -v ${tool}`), new RegExp(`/${tool}\n$`))
  } finally {
    await srv.kill()
  }
})

test('the default user is user (1000), home /home/user, in the sudo group', { skip }, async () => {
  assert.equal(await run('id -un; id -u; echo $HOME; pwd'), 'user\n1000\n/home/user\n/home/user\n')
  assert.match(await run('id -nG'), /\bsudo\b/)
  assert.equal(await run('touch ~/x && stat -c %U ~/x'), 'user\n')
})

test('pip installs as the user without PEP 668 refusals', { skip }, async () => {
  assert.match(await run('pip config list'), /break-system-packages/)
})

test('nothing in the layers is set-id', { skip }, async () => {
  assert.equal(await run('find / -xdev -perm /6000 -type f 2>/dev/null | wc -l', { user: 'root' }), '0\n')
})
