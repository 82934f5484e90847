// E2B's template build API (docs/e2b-wire.md §2.8, server/template-build/README.md) through the
// unmodified `e2b` SDK: Template() steps built by sbxd in build sandboxes, cached as layers,
// started as sandboxes; aliases and tags; the narrow egress of builds. The aptInstall test
// needs the host's Debian mirror: when it does not answer, that test skips, saying why.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, writeFileSync, mkdirSync, existsSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Template, Sandbox, BuildError, waitForFile } from 'e2b'
import { api, STATE } from '../lib/env.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..')
const ctx = mkdtempSync(join(tmpdir(), 'sbx-tb-'))
writeFileSync(join(ctx, 'hello.txt'), 'hello from the build context\n')
mkdirSync(join(ctx, 'app'))
writeFileSync(join(ctx, 'app', 'main.sh'), '#!/bin/sh\necho app says hi\n')
const sandboxes = []

after(async () => {
  for (const s of sandboxes) await s.kill().catch(() => {})
  rmSync(ctx, { recursive: true, force: true })
})

async function build(tpl, name, opts = {}) {
  const logs = []
  const info = await Template.build(tpl, name, { ...opts, onBuildLogs: (e) => logs.push(e.message) })
  return { info, logs }
}

async function create(name) {
  const s = await Sandbox.create(name)
  sandboxes.push(s)
  return s
}

const run = async (s, cmd, opts) => (await s.commands.run(cmd, opts)).stdout

// The host's first Debian source (templates/debian/sources.py), probed the way apt would.
async function mirrorSkip() {
  const fallback = join(STATE || '', 'templates/.fallback')
  if (existsSync(fallback))
    return `the Debian mirror was unreachable when the templates were built (${readFileSync(fallback, 'utf8').trim()}): base has no apt sources of its own`
  let uri, suite
  try {
    ;[uri, suite] = execFileSync('python3', [join(ROOT, 'templates/debian/sources.py'), '--uris'], { encoding: 'utf8' })
      .split('\n')[0].split(' ')
  } catch (e) {
    return `the host has no Debian apt sources (${e.message.split('\n')[0]})`
  }
  try {
    const res = await fetch(`${uri}/dists/${suite}/Release`, { method: 'HEAD', signal: AbortSignal.timeout(10000) })
    if (!res.ok) return `the Debian mirror ${uri} answered ${res.status}`
  } catch (e) {
    return `the Debian mirror ${uri} is unreachable (${e.cause?.code || e.message})`
  }
  return false
}

// decided before any test is registered: a top-level await between tests would let the
// runner finish (and run after()) before the later tests exist
const aptSkip = await mirrorSkip()

const basic = () =>
  Template({ fileContextPath: ctx })
    .fromTemplate('base')
    .setEnvs({ GREETING: 'hello env', APP_MODE: 'test' })
    .setUser('root')
    .runCmd('mkdir -p /opt/tb && echo "$GREETING as $(id -un)" > /opt/tb/by-root')
    .setUser('user')
    .copy('hello.txt', '/home/user/hello.txt')
    .copy('app', '/home/user/app/', { mode: 0o755 })
    .setWorkdir('/home/user/work')
    .runCmd('pwd > where && id -un >> where && ../app/main.sh >> where')

test('runCmd, copy, env, workdir and user build a template that starts with them', async () => {
  const { info, logs } = await build(basic(), 'tb-basic')
  assert.equal(info.name, 'tb-basic')
  assert.match(info.templateId, /^[0-9a-f]{20}$/)
  assert.ok(logs.some((l) => /Build finished/.test(l)), logs.join('\n'))
  const s = await create('tb-basic')
  assert.equal(await run(s, 'cat /opt/tb/by-root'), 'hello env as root\n')
  assert.equal(await run(s, 'stat -c %U /opt/tb/by-root'), 'root\n')
  assert.equal(await run(s, 'cat /home/user/hello.txt'), 'hello from the build context\n')
  assert.equal(await run(s, 'stat -c %U:%a /home/user/hello.txt /home/user/app/main.sh'), 'user:644\nuser:755\n')
  // the last WORKDIR and USER are the sandbox's defaults, the ENV its environment
  assert.equal(await run(s, 'pwd; whoami; echo "$GREETING/$APP_MODE"'), '/home/user/work\nuser\nhello env/test\n')
  assert.equal(await run(s, 'cat where'), '/home/user/work\nuser\napp says hi\n')
  // the build machinery leaves nothing of its own in the image
  assert.equal(await run(s, 'ls -d /.sbx-build 2>&1 || true'), 'ls: cannot access \'/.sbx-build\': No such file or directory\n')
  // the template by its id too
  const byId = await create(info.templateId)
  assert.equal(await run(byId, 'cat /home/user/hello.txt'), 'hello from the build context\n')
})

test('an unchanged rebuild comes from the cache; skipCache runs every step again', async () => {
  const { logs } = await build(basic(), 'tb-basic')
  const steps = logs.filter((l) => /^(CACHED )?\[\d+\/\d+\] (RUN|COPY)/.test(l))
  assert.equal(steps.length, 4, logs.join('\n'))
  assert.ok(steps.every((l) => l.startsWith('CACHED ')), steps.join('\n'))
  assert.ok(logs.some((l) => /0 step\(s\) run, 4 from the cache/.test(l)), logs.join('\n'))

  const forced = await build(basic(), 'tb-basic', { skipCache: true })
  assert.ok(forced.logs.some((l) => /4 step\(s\) run, 0 from the cache/.test(l)), forced.logs.join('\n'))
  const s = await create('tb-basic')
  assert.equal(await run(s, 'cat /home/user/hello.txt'), 'hello from the build context\n')
})

test('a changed copy rebuilds it and the steps above it, not those below', async () => {
  writeFileSync(join(ctx, 'hello.txt'), 'changed content\n')
  try {
    const { logs } = await build(basic(), 'tb-basic')
    const steps = logs.filter((l) => /^(CACHED )?\[\d+\/\d+\] (RUN|COPY)/.test(l))
    assert.deepEqual(steps.map((l) => l.startsWith('CACHED ')), [true, false, false, false], steps.join('\n'))
    const s = await create('tb-basic')
    assert.equal(await run(s, 'cat /home/user/hello.txt'), 'changed content\n')
  } finally {
    writeFileSync(join(ctx, 'hello.txt'), 'hello from the build context\n')
  }
})

test('aptInstall installs from the host mirror through the build egress', { skip: aptSkip }, async (t) => {
  const tpl = Template().fromTemplate('base').aptInstall(['figlet'], { noInstallRecommends: true })
  const logs = []
  try {
    await Template.build(tpl, 'tb-apt', { onBuildLogs: (e) => logs.push(e.message) })
  } catch (e) {
    // the mirror answered the probe but went away during the build: sbxd's proxy says so
    const gone = logs.find((l) => /sbx build egress: the mirror .* cannot be reached/.test(l))
    if (gone) return t.skip(`the Debian mirror became unreachable during the build (${gone})`)
    throw e
  }
  assert.ok(logs.some((l) => /Setting up figlet/.test(l)), logs.join('\n'))
  const s = await create('tb-apt')
  assert.match(await run(s, 'figlet -v | head -n 1'), /FIGlet/)
  assert.equal(await run(s, 'command -v figlet'), '/usr/bin/figlet\n')
})

test('a step that reaches beyond the package mirrors fails, naming the host', async () => {
  // pip goes through the build's proxy (https_proxy), which refuses pypi.org with a 403
  const tpl = Template().fromTemplate('base').runCmd('curl -sS --max-time 20 https://pypi.org/simple/ -o /dev/null')
  const logs = []
  await assert.rejects(
    Template.build(tpl, 'tb-egress', { onBuildLogs: (e) => logs.push(e.message) }),
    (e) => e instanceof BuildError && /exited with code/.test(e.message),
  )
  assert.ok(logs.some((l) => /403|not reachable from template builds/.test(l)), logs.join('\n'))
  assert.ok(logs.some((l) => /Build failed at step 1/.test(l)), logs.join('\n'))
})

test('a step run as a user the image lacks fails in E2B\'s words', async () => {
  // E2B's own template test expects exactly this message (envd's unauthenticated refusal)
  const tpl = Template().fromTemplate('base').skipCache().runCmd('whoami', { user: 'root123' })
  await assert.rejects(Template.build(tpl, 'tb-nouser'), (e) => {
    assert.ok(e instanceof BuildError)
    assert.ok(e.message.includes("failed to run command 'whoami': command failed: unauthenticated: invalid username: 'root123'"), e.message)
    return true
  })
})

test('fromImage of an image whose registry cannot be reached fails naming it and why', async () => {
  // .invalid never resolves (RFC 2606): sbxd pulls from the registry the reference names
  const tpl = Template().fromImage('registry.invalid/team/app:1').runCmd('true')
  await assert.rejects(Template.build(tpl, 'tb-noimage'), (e) => {
    assert.ok(e instanceof BuildError)
    assert.match(e.message, /pulling 'registry\.invalid\/team\/app:1' failed: registry registry\.invalid cannot be reached over https: Couldn't resolve host name/)
    return true
  })
})

test('fromImage of an imported image builds on its layers and config', async () => {
  // a small image with bash (tests/integration/fixtures/mkimage.py), imported as sbx-tbimg:v1
  const file = join(ctx, 'img.tar')
  execFileSync('python3', [join(ROOT, 'tests/integration/fixtures/mkimage.py'), file])
  const imp = await fetch(`${process.env.E2B_API_URL}/v1/images?name=sbx-tbimg&tag=v1`, {
    method: 'POST', headers: { Authorization: `Bearer ${process.env.E2B_API_KEY}` }, body: readFileSync(file),
  })
  assert.equal(imp.status, 201, await imp.text())
  const tpl = Template().fromImage('sbx-tbimg:v1').setUser('root').runCmd('echo "from the image, $(id -un)" > /data/built.txt').setUser('app')
  const { logs } = await build(tpl, 'tb-fromimage')
  assert.ok(logs.some((l) => /base: sbx template 'sbx-tbimg:v1'/.test(l)), logs.join('\n'))
  const s = await create('tb-fromimage')
  // the image's template works in /home/user, as E2B's fromImage does (its WORKDIR /data is
  // kept aside: templates/README.md, "Images"), and no step here sets another
  assert.equal(await run(s, 'cat /data/built.txt; id -un; pwd'), 'from the image, root\napp\n/home/user\n')
  await api('DELETE', '/templates/tb-fromimage')
})

test('fromDebianImage and the default base image map to the local Debian base', async () => {
  const { logs } = await build(Template().fromDebianImage().runCmd('test -f /etc/os-release'), 'tb-debian')
  assert.ok(logs.some((l) => /base: sbx template 'base'/.test(l)), logs.join('\n'))
  const { logs: logs2 } = await build(Template().fromBaseImage().runCmd('true'), 'tb-e2bbase')
  assert.ok(logs2.some((l) => /base: sbx template 'base'/.test(l)), logs2.join('\n'))
})

test('fromDockerfile: the steps the SDK makes of it build and start', async () => {
  const dockerfile = [
    'FROM e2bdev/base',
    'ENV APP_ENV=docker',
    'WORKDIR /app',
    'COPY hello.txt ./',
    'RUN echo "built as $(id -un) in $(pwd) for $APP_ENV" > /app/built.txt',
    // root holds its file capabilities (CAP_DAC_OVERRIDE...): the copy is root's, as in Docker
    'COPY hello.txt /home/user/docker/',
  ].join('\n')
  const { logs } = await build(Template({ fileContextPath: ctx }).fromDockerfile(dockerfile), 'tb-dockerfile')
  assert.ok(logs.some((l) => /base: sbx template 'base'/.test(l)), logs.join('\n'))
  const s = await create('tb-dockerfile')
  assert.equal(await run(s, 'cat /app/built.txt; cat /app/hello.txt'), 'built as root in /app for docker\nhello from the build context\n')
  // USER user at the end (the Dockerfile set none); its WORKDIR stays
  assert.equal(await run(s, 'whoami; pwd; stat -c %U /app/hello.txt'), 'user\n/app\nroot\n')
  assert.equal(await run(s, 'cat /home/user/docker/hello.txt; stat -c %U /home/user/docker/hello.txt'), 'hello from the build context\nroot\n')
  assert.ok(!logs.some((l) => /root may not write there/.test(l)), logs.join('\n'))
})

test('the start command runs in every new sandbox; create answers once it is ready', async () => {
  const tpl = Template()
    .fromTemplate('base')
    .runCmd('echo built > /tmp/built')
    .setStartCmd('sleep 1; date +%s%N > /tmp/started; sleep 600', waitForFile('/tmp/started'))
  await build(tpl, 'tb-start')
  for (let i = 0; i < 2; i++) {
    const s = await create('tb-start')
    // the ready command saw the file before create answered
    assert.match(await run(s, 'cat /tmp/started'), /^\d+\n$/)
    assert.match(await run(s, 'pgrep -f "sleep 600" | wc -l'), /^[1-9]/)
  }
})

test('aliases and tags: exists, name:tag, assign, list and remove', async () => {
  assert.equal(await Template.exists('tb-basic'), true)
  assert.equal(await Template.exists('tb-never-built'), false)
  assert.equal(await Template.exists('base'), true)

  const tpl = Template({ fileContextPath: ctx }).fromTemplate('base').runCmd('echo v1 > /tmp/version')
  const { info } = await build(tpl, 'tb-tags:v1')
  assert.deepEqual(info.tags, ['v1'])
  assert.equal(await run(await create('tb-tags:v1'), 'cat /tmp/version'), 'v1\n')
  // no "default" tag was built, so the bare name starts nothing yet
  await assert.rejects(Sandbox.create('tb-tags'), /not found/)

  const assigned = await Template.assignTags('tb-tags:v1', ['prod', 'default'])
  assert.deepEqual(assigned.tags, ['prod', 'default'])
  assert.match(assigned.buildId, /^[0-9a-f-]{36}$/)
  assert.equal(await run(await create('tb-tags:prod'), 'cat /tmp/version'), 'v1\n')
  assert.equal(await run(await create('tb-tags'), 'cat /tmp/version'), 'v1\n')
  const tags = (await Template.getTags('tb-tags')).map((t) => t.tag).sort()
  assert.deepEqual(tags, ['default', 'prod', 'v1'])

  // a second build tagged v2 leaves prod on the first
  const v2 = Template().fromTemplate('base').runCmd('echo v2 > /tmp/version')
  await build(v2, 'tb-tags', { tags: ['v2'] })
  assert.equal(await run(await create('tb-tags:v2'), 'cat /tmp/version'), 'v2\n')
  assert.equal(await run(await create('tb-tags:prod'), 'cat /tmp/version'), 'v1\n')

  await Template.removeTags('tb-tags', 'prod')
  await assert.rejects(Sandbox.create('tb-tags:prod'), /not found/)
  assert.deepEqual((await Template.getTags('tb-tags')).map((t) => t.tag).sort(), ['default', 'v1', 'v2'])
})

test('copy() places files as E2B does: globs, folders, trailing slashes', async () => {
  const c = mkdtempSync(join(tmpdir(), 'sbx-tbcopy-'))
  try {
    mkdirSync(join(c, 'folder', 'sub'), { recursive: true })
    writeFileSync(join(c, 'folder', 'test.txt'), 'test\n')
    writeFileSync(join(c, 'folder', 'sub', 'deep.txt'), 'deep\n')
    writeFileSync(join(c, 'a.txt'), 'a\n')
    writeFileSync(join(c, 'b.txt'), 'b\n')
    writeFileSync(join(c, 'c.md'), 'c\n')
    const tpl = Template({ fileContextPath: c })
      .fromTemplate('base')
      .copy('folder/*', 'folder') // E2B's own test: the matched files land in the destination
      .copy('*.txt', 'txts/')
      .copy('folder', 'merged/')
      .copy('folder/', 'slashed')
      .copy('a.txt', 'renamed.txt')
      .copy('b.txt', 'folder') // an existing directory receives the file
      .copy(['a.txt', 'c.md'], 'many/')
    await build(tpl, 'tb-copy')
    const s = await create('tb-copy')
    const found = await run(s, 'cd /home/user && find folder txts merged slashed renamed.txt many -print | sort')
    assert.deepEqual(found.trim().split('\n'), [
      'folder', 'folder/b.txt', 'folder/sub', 'folder/sub/deep.txt', 'folder/test.txt',
      'many', 'many/a.txt', 'many/c.md',
      'merged', 'merged/sub', 'merged/sub/deep.txt', 'merged/test.txt',
      'renamed.txt',
      'slashed', 'slashed/sub', 'slashed/sub/deep.txt', 'slashed/test.txt',
      'txts', 'txts/a.txt', 'txts/b.txt',
    ])
    assert.equal(await run(s, 'cat /home/user/folder/test.txt /home/user/renamed.txt'), 'test\na\n')
  } finally {
    rmSync(c, { recursive: true, force: true })
  }
})

test('tags as E2B takes them: long ones, upper case folded, UUIDs refused', async () => {
  // E2B's own tests tag builds `v1-<uuid>` (39 characters)
  const tag = `v1-${randomUUID()}`
  const tpl = Template().fromTemplate('base').runCmd('echo long > /tmp/version')
  const { info } = await build(tpl, `tb-longtag:${tag}`)
  assert.deepEqual(info.tags, [tag])
  assert.equal(await run(await create(`tb-longtag:${tag}`), 'cat /tmp/version'), 'long\n')
  const long = 'r'.repeat(128)
  const assigned = await Template.assignTags(`tb-longtag:${tag}`, ['Release-2026', long])
  assert.deepEqual(assigned.tags, ['release-2026', long], 'lowercased, as E2B does')
  assert.equal(await run(await create('tb-longtag:release-2026'), 'cat /tmp/version'), 'long\n')
  assert.equal(await run(await create(`tb-longtag:${long}`), 'cat /tmp/version'), 'long\n')
  assert.deepEqual((await Template.getTags('tb-longtag')).map((t) => t.tag).sort(), [tag, 'release-2026', long].sort())
  for (const bad of [randomUUID(), 'r'.repeat(129), 'a..b']) {
    const r = await api('POST', '/templates/tags', { body: { target: `tb-longtag:${tag}`, tags: [bad] } })
    assert.equal(r.status, 400, bad)
    assert.match(r.json.message, /invalid tag/)
  }
})

test('list, get and delete a built template', async () => {
  const { info } = await build(Template().fromTemplate('base').runCmd('true'), 'tb-delete')
  const list = await api('GET', '/templates')
  assert.equal(list.status, 200)
  const mine = list.json.find((t) => t.templateID === info.templateId)
  assert.ok(mine, list.text)
  assert.deepEqual(mine.names, ['tb-delete'])
  assert.equal(mine.buildStatus, 'ready')
  assert.equal(mine.buildID, info.buildId)
  const got = await api('GET', `/templates/${info.templateId}`)
  assert.equal(got.status, 200)
  assert.equal(got.json.builds.length, 1)
  assert.equal(got.json.builds[0].status, 'ready')

  assert.equal(await Sandbox.deleteSnapshot('tb-delete'), true) // DELETE /templates/{id}
  assert.equal(await Template.exists('tb-delete'), false)
  await assert.rejects(Sandbox.create('tb-delete'), /not found/)
  assert.equal((await api('GET', `/templates/${info.templateId}`)).status, 404)
})

test('bad requests get E2B errors', async () => {
  let r = await api('POST', '/v3/templates', { body: { name: 'Bad Name!' } })
  assert.equal(r.status, 400)
  assert.match(r.json.message, /invalid template name/)
  r = await api('POST', '/v3/templates', { body: { name: 'base' } })
  assert.equal(r.status, 409)
  assert.match(r.json.message, /taken by a template not built through this API/)
  r = await api('POST', '/v3/templates', { body: { name: 'tb-bad' } })
  assert.equal(r.status, 202)
  const { templateID, buildID } = r.json
  r = await api('POST', `/v2/templates/${templateID}/builds/${buildID}`, { body: { fromTemplate: 'base', steps: [{ type: 'FROB', args: [] }] } })
  assert.equal(r.status, 400)
  assert.match(r.json.message, /type 'FROB' is not one sbx builds/)
  r = await api('POST', `/v2/templates/${templateID}/builds/${buildID}`, {
    body: { fromTemplate: 'base', steps: [{ type: 'COPY', args: ['x', '/x'], filesHash: 'a'.repeat(64) }] },
  })
  assert.equal(r.status, 400)
  assert.match(r.json.message, /were not uploaded/)
  r = await api('GET', `/templates/${templateID}/builds/00000000-0000-4000-8000-000000000000/status`)
  assert.equal(r.status, 404)
  // an upload link is good for its own file only
  r = await api('GET', `/templates/${templateID}/files/${'b'.repeat(64)}`)
  assert.equal(r.status, 201)
  assert.equal(r.json.present, false)
  const bad = r.json.url.replace('b'.repeat(64), 'c'.repeat(64))
  const put = await fetch(bad, { method: 'PUT', body: 'x' })
  assert.equal(put.status, 401)
})
