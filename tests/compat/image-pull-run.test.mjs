// Sandboxes from registry images through the unmodified `e2b` SDK: the images users bring
// (tests/lib/images.mjs: a static busybox with no libc, a musl image, Debian minbase with
// python3 and an app image on it; nothing of sbx's inside) pushed to Debian's docker-registry
// on loopback, pulled by sbxd for Template().fromImage and a Dockerfile's FROM, then used:
// commands, files, the image's own loader and libraries for what the user runs.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Template, Sandbox } from 'e2b'
import { api } from '../lib/env.mjs'
import { userImages, startRegistry, push } from '../lib/images.mjs'

let imgs, reg, ctx
const aliases = []
const sandboxes = []

async function build(tpl, name) {
  const logs = []
  aliases.push(name)
  await Template.build(tpl, name, { onBuildLogs: (e) => logs.push(e.message) })
  return logs
}

async function create(name) {
  const s = await Sandbox.create(name)
  sandboxes.push(s)
  return s
}

before(async () => {
  imgs = userImages()
  reg = await startRegistry()
  await push(imgs.busybox, `${reg.host}/run/busybox:v1`)
  await push(imgs.musl, `${reg.host}/run/musl:v1`)
  await push(imgs.minbase, `${reg.host}/run/minbase:v1`)
  await push(imgs.minbaseApp, `${reg.host}/run/app:v1`)
  ctx = mkdtempSync(join(tmpdir(), 'sbx-pullrun-'))
  writeFileSync(join(ctx, 'greeting.txt'), 'hello from the build context\n')
})

after(async () => {
  for (const s of sandboxes) await s.kill().catch(() => {})
  for (const a of aliases) await api('DELETE', `/templates/${a}`).catch(() => {})
  if (reg) await reg.stop().catch(() => {})
  if (ctx) rmSync(ctx, { recursive: true, force: true })
})

test('busybox with no libc: fromImage, then commands and files', async () => {
  await build(Template().fromImage(`${reg.host}/run/busybox:v1`), 'run-busybox')
  const s = await create('run-busybox')
  const r = await s.commands.run('busybox echo "hi from $(busybox uname -s)"')
  assert.equal(r.stdout, 'hi from Linux\n')
  await s.files.write('/tmp/note.txt', 'written by the SDK\n')
  assert.equal((await s.commands.run('cat /tmp/note.txt')).stdout, 'written by the SDK\n')
})

test('the musl image: its programs run with its own loader', async () => {
  await build(Template().fromImage(`${reg.host}/run/musl:v1`), 'run-musl')
  const s = await create('run-musl')
  assert.equal((await s.commands.run('musl-hello pulled')).stdout, 'hello from musl pulled\n')
})

test('minbase with python3: a build step runs in the pulled image, then a sandbox of it', async () => {
  const logs = await build(Template().fromImage(`${reg.host}/run/minbase:v1`)
    .setUser('root')
    .runCmd('python3 -c "import sys; print(sys.version_info[0])" > /opt/py-major.txt'), 'run-minbase')
  assert.ok(logs.some((l) => l.includes(`pulling ${reg.host}/run/minbase:v1`)), logs.join('\n'))
  const s = await create('run-minbase')
  assert.equal((await s.commands.run('cat /opt/py-major.txt')).stdout, '3\n')
  const r = await s.commands.run('python3 -c "import ssl, json; print(json.dumps({\'ok\': True}))"')
  assert.equal(r.stdout, '{"ok": true}\n')
})

test("fromDockerfile: FROM a registry image, its app layer's files, the steps on top", async () => {
  const dockerfile = [
    `FROM ${reg.host}/run/app:v1`,
    'ENV GREETING=pulled',
    'COPY greeting.txt /app/greeting.txt',
    'RUN python3 /app/hello.py > /app/ran.txt',
  ].join('\n')
  const logs = await build(Template({ fileContextPath: ctx }).fromDockerfile(dockerfile), 'run-dockerfile')
  assert.ok(logs.some((l) => l.includes(`pulling ${reg.host}/run/app:v1`)), logs.join('\n'))
  const s = await create('run-dockerfile')
  const r = await s.commands.run('cat /app/ran.txt /app/greeting.txt; echo "$GREETING"')
  assert.equal(r.stdout, 'app on python 3\nhello from the build context\npulled\n')
})
