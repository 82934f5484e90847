// Images in (templates/README.md, "Images"): an OCI archive and a docker save archive made
// here (tests/integration/fixtures/mkimage.py: a whiteout, an opaque dir, a hard link, a
// symlink pointing out of the layer, a device node) imported through POST /v1/images, then
// used through the unmodified `e2b` SDK; hostile archives are refused and touch nothing.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox } from 'e2b'

const TOP = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const MKIMAGE = join(TOP, 'tests/integration/fixtures/mkimage.py')
const STATE = process.env.SBX_TEST_STATE
const URL_ = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const work = mkdtempSync(join(tmpdir(), 'sbx-image-'))
let sbx

function mkimage(name, ...args) {
  const out = join(work, name)
  execFileSync('python3', [MKIMAGE, out, ...args])
  return out
}

async function importImage(file, query) {
  const res = await fetch(`${URL_}/v1/images?${query}`, {
    method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: readFileSync(file),
  })
  return { status: res.status, json: await res.json() }
}

async function api(method, path) {
  const res = await fetch(URL_ + path, { method, headers: { Authorization: `Bearer ${KEY}` } })
  const text = await res.text()
  return { status: res.status, json: text ? JSON.parse(text) : undefined }
}

const run = async (cmd) => (await sbx.commands.run(cmd)).stdout

before(async () => {
  const r = await importImage(mkimage('oci.tar'), 'name=sbx-img')
  assert.equal(r.status, 201, JSON.stringify(r.json))
  sbx = await Sandbox.create('sbx-img')
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  await api('DELETE', '/v1/images/sbx-img')
  await api('DELETE', '/v1/images/sbx-img:v2')
  rmSync(work, { recursive: true, force: true })
})

test('the image config carries into the template as E2B does: Env; User and WorkingDir kept aside', async () => {
  // E2B's build runs every template as user in /home/user, whatever the image's USER and
  // WORKDIR; its uid 1000 belongs to the image's app, so user gets the next free id
  assert.equal(await run('id -un; id -u; id -u app'), 'user\n1001\n1000\n')
  assert.equal(await run('pwd; stat -c %U /home/user'), '/home/user\nuser\n')
  assert.equal(await run('echo "$GREETING"'), 'hello from the image\n')
  assert.equal(await run('echo "$PATH"'), '/usr/bin:/bin\n')
  const img = (await api('GET', '/v1/images/sbx-img')).json
  assert.equal(img.user, 'app')
  assert.equal(img.workingDir, '/data')
  assert.deepEqual(img.entrypoint, ['/usr/bin/env'])
  assert.deepEqual(img.cmd, ['/bin/bash'])
  assert.equal(img.format, 'oci')
  assert.equal(img.layers.length, 2)
})

test('a whiteout hides the lower file, an opaque dir hides the lower dir', async () => {
  const r = await sbx.commands.run('test -e /data/gone.txt', { }).catch((e) => e)
  assert.equal(r.exitCode, 1)
  assert.equal(await run('cat /data/keep.txt'), 'kept\n')
  assert.equal(await run('ls /data/opaque'), 'new.txt\n')
})

test('a hard link is one file with two names', async () => {
  const [a, b] = (await run('stat -c "%i %h" /data/hard1 /data/hard2')).trim().split('\n')
  assert.equal(a, b)
  assert.match(a, / 2$/)
})

test('a symlink out of the layer stays a symlink, resolved inside the sandbox', async () => {
  assert.equal(await run('readlink /data/escape'), '../../../../etc/hostname\n')
  // The image has no /etc/hostname: resolving the link stays in the sandbox's root.
  const r = await sbx.commands.run('cat /data/escape').catch((e) => e)
  assert.equal(r.exitCode, 1)
  assert.match(r.stderr, /No such file/)
})

test('modes and owners are kept; device nodes are skipped and said so', async () => {
  assert.equal(await run('stat -c "%a %U" /data/setuid /data/owned'), '4755 root\n644 app\n')
  const r = await sbx.commands.run('test -e /data/null').catch((e) => e)
  assert.equal(r.exitCode, 1)
  const img = (await api('GET', '/v1/images/sbx-img')).json
  assert.equal(img.skippedDevices, 1)
})

test('on the host the whiteout is an overlayfs 0/0 device in the layer store', async () => {
  const tpl = JSON.parse(readFileSync(join(STATE, 'templates/sbx-img/template.json'), 'utf8'))
  const top = tpl.layers[1].replace('sha256:', '')
  const st = lstatSync(join(STATE, 'layers', top, 'data/gone.txt'))
  assert.ok(st.isCharacterDevice())
  assert.equal(st.rdev, 0)
})

test('hostile archives are refused with the entry named, and nothing is written outside', async () => {
  const cases = {
    dotdot: /'data\/\.\.\/\.\.\/outside': '\.\.' is refused/,
    absolute: /'\/etc\/outside': absolute paths are refused/,
    'through-symlink': /'data\/out\/planted': goes through 'out', which is a symlink/,
    'hardlink-out': /'\.\.\/\.\.\/etc\/passwd': '\.\.' is refused/,
  }
  for (const [evil, msg] of Object.entries(cases)) {
    const r = await importImage(mkimage(`${evil}.tar`, '--evil', evil), 'name=sbx-evil')
    assert.equal(r.status, 400, evil)
    assert.equal(r.json.error.code, 'bad_image')
    assert.match(r.json.error.message, msg)
  }
  assert.equal(existsSync('/tmp/planted'), false)
  assert.equal((await api('GET', '/v1/images/sbx-evil')).status, 404)
})

test('a docker save archive with a tag: layers reused by digest, NAME:TAG is the template', async () => {
  const r = await importImage(mkimage('docker.tar', '--format', 'docker'), 'name=sbx-img&tag=v2')
  assert.equal(r.status, 201, JSON.stringify(r.json))
  assert.equal(r.json.template, 'sbx-img:v2')
  assert.equal(r.json.format, 'docker')
  assert.deepEqual(r.json.layers.map((l) => l.reused), [true, true])
  const s2 = await Sandbox.create('sbx-img:v2')
  try {
    assert.equal((await s2.commands.run('cat /data/opaque/new.txt')).stdout, 'new\n')
  } finally {
    await s2.kill()
  }
  const list = (await api('GET', '/v1/images')).json.images.map((i) => i.template)
  assert.ok(list.includes('sbx-img') && list.includes('sbx-img:v2'))
  assert.equal((await api('DELETE', '/v1/images/sbx-img:v2')).status, 204)
  assert.equal((await api('GET', '/v1/images/sbx-img:v2')).status, 404)
  await assert.rejects(Sandbox.create('sbx-img:v2'))
})

test('built templates are not images: DELETE /v1/images/base is refused', async () => {
  const r = await api('DELETE', '/v1/images/base')
  assert.equal(r.status, 409)
})
