// The TypeScript client's images from registries, templates and storage, against a real sbxd:
// the images users bring (tests/lib/images: Debian minbase with python3 and an app layer, a
// static busybox, a musl image) pushed with skopeo to Debian's docker-registry on loopback,
// plain and behind Basic auth, pulled with Images.pull / pullStream. Progress arrives as the
// pull goes, the template starts sandboxes, failures are typed, and a pull stopped by the client
// (an AbortSignal, a loop left early) stops on the server: its blob transfer through a slowed
// proxy is abandoned, no template appears, sbxd logs the cancel. Templates.list, Storage.get,
// and Storage.grow on an sbxd of the test's own while a sandbox on its pool writes.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { client, sbxdLog, waitFor } from './ts-lib.mjs'
import { userImages, startRegistry, push, MKOCI } from '../lib/images.mjs'
import { startBasicRegistry, startCountingProxy, layoutDigests } from '../lib/registry.mjs'
import { startSbxd, REAL } from '../integration/sbxd.mjs'

const {
  Sbx, Images, Templates, Storage, BadRequestError, ConflictError, ForbiddenError, NotFoundError,
  SbxError, ServiceUnavailableError, UnavailableError, PullStream,
} = client

const MiB = 1 << 20
const DATA_MB = 48 // the cancelled image's own layer: random, so never in the layer store
const SLOW = 4 * MiB // bytes a second through the proxy: ~12 s for that layer

let imgs, work, reg, basic, proxy, dataLayer
const tid = (host, path) => `${host.replace(':', '-')}-${path.replace(/\//g, '-')}`

// busybox's layer plus a layer of random data (an image carrying a model or a data set)
function dataImage(out) {
  const bb = layoutDigests(imgs.busybox)
  const base = join(work, 'busybox.tar')
  writeFileSync(base, gunzipSync(readFileSync(join(imgs.busybox, 'blobs/sha256', bb.layers[0].slice(7)))))
  const tree = join(work, 'data-tree')
  mkdirSync(join(tree, 'data'), { recursive: true })
  writeFileSync(join(tree, 'data/weights.bin'), randomBytes(DATA_MB * MiB))
  execFileSync('python3', [MKOCI, out, '--layer', base, '--layer', tree, '--cmd', '["sh"]', '--workdir', '/data'])
  return out
}

before(async () => {
  imgs = userImages()
  work = mkdtempSync(join(tmpdir(), 'sbx-ts-pull-'))
  reg = await startRegistry()
  basic = await startBasicRegistry('bob', 'pw-of-bob')
  proxy = await startCountingProxy(reg.url, { bytesPerSec: SLOW })
  await push(imgs.minbaseApp, `${reg.host}/ts/minbase-app:v1`)
  await push(imgs.busybox, `${reg.host}/ts/busybox:v1`, { format: 'v2s2' })
  await push(imgs.musl, `${reg.host}/ts/musl:v1`)
  await push(imgs.busybox, `${basic.host}/team/busybox:v1`, { creds: 'bob:pw-of-bob' })
  const data = dataImage(join(work, 'data'))
  await push(data, `${reg.host}/ts/data:v1`)
  dataLayer = layoutDigests(data).layers[1]
})

after(async () => {
  for (const s of [proxy, basic, reg]) await s?.stop().catch(() => {})
  if (work) rmSync(work, { recursive: true, force: true })
})

async function cleanup(...templates) {
  for (const t of templates) await Images.delete(t).catch((e) => { if (!(e instanceof NotFoundError)) throw e })
}

test('a pull reports progress as it goes; its template starts sandboxes as user in /home/user', async () => {
  const ref = `${reg.host}/ts/minbase-app:v1`
  const want = layoutDigests(imgs.minbaseApp)
  const events = []
  const early = []
  const img = await Images.pull(ref, {
    name: 'ts-live',
    onProgress: async (ev) => { // awaited: the first event comes before the template exists
      if (!events.length) early.push(await Images.get('ts-live').then(() => 'there', (e) => e.constructor.name))
      events.push(ev)
    },
  })
  try {
    assert.deepEqual(early, ['NotFoundError'])
    assert.deepEqual([img.template, img.tag, img.format, img.digest], ['ts-live', 'latest', 'oci', want.manifest])
    assert.deepEqual(img.layers.map((l) => l.digest), want.layers)
    assert.deepEqual(img.source, { reference: ref, registry: reg.host, indexDigest: undefined })
    assert.deepEqual([img.user, img.workingDir, img.cmd], ['', '/app', ['python3', '/app/hello.py']])
    const st = events.map((e) => e.status)
    assert.equal(st[0], 'resolving')
    assert.equal(st.at(-1), 'template')
    assert.ok(st.includes('resolved'), st.join())
    const done = events.filter((e) => e.status === 'layer-done').map((e) => e.layer)
    assert.deepEqual(done.map((l) => [l.index, l.count, l.digest]).sort(), want.layers.map((d, i) => [i + 1, 2, d]))
    const s = await Sbx.create({ template: 'ts-live' })
    try {
      assert.equal((await s.exec(['python3', '/app/hello.py'])).check().stdout, 'app on python 3\n')
      assert.equal((await s.exec(['id', '-un'])).stdout, 'user\n')
      assert.equal((await s.sh('pwd')).stdout, '/home/user\n')
    } finally { await s.kill() }
    const t = (await Templates.list()).find((x) => x.name === 'ts-live')
    assert.deepEqual([t.kind, t.layers], ['image', 2])
    const again = await Images.pull(ref, { name: 'ts-live:v2' })
    assert.equal(again.template, 'ts-live:v2')
    assert.ok(again.layers.every((l) => l.reused))
  } finally {
    await cleanup('ts-live', 'ts-live:v2')
  }
})

test('pullStream iterated; a template named after the image; failures typed', async () => {
  const p = await Images.pullStream(`${reg.host}/ts/busybox:v1`)
  assert.ok(p instanceof PullStream)
  const st = []
  for await (const ev of p) st.push(ev.status)
  assert.deepEqual([st[0], st.at(-1), p.closed], ['resolving', 'template', true])
  assert.equal(p.image.template, tid(reg.host, 'ts/busybox:v1'))
  assert.equal(p.image.format, 'docker')
  await cleanup(p.image.template)

  const nf = await Images.pull(`${reg.host}/ts/busybox:nosuchtag`).catch((e) => e)
  assert.ok(nf instanceof NotFoundError && /nosuchtag/.test(nf.message), String(nf))
  await assert.rejects(Images.pull('Not/A:Valid:Ref'), BadRequestError)
  const denied = await Images.pull(`${basic.host}/team/busybox:v1`).catch((e) => e)
  assert.ok(denied instanceof ForbiddenError && denied.code === 'registry_denied', String(denied))
  await assert.rejects(Images.pull(`${basic.host}/team/busybox:v1`, { username: 'bob', password: 'nope' }), /refused the credentials/)
  const ok = await Images.pull(`${basic.host}/team/busybox:v1`, { name: 'ts-basic', username: 'bob', password: 'pw-of-bob' })
  assert.equal(ok.template, 'ts-basic')
  await cleanup('ts-basic')
  const down = await Images.pull('127.0.0.1:1/ts/busybox:v1').catch((e) => e)
  assert.ok(down instanceof ServiceUnavailableError && down instanceof UnavailableError && down.code === 'unreachable', String(down))
  await assert.rejects(Images.pull(`${basic.host}/team/busybox:v1`, { username: 'bob' }), TypeError)
})

const cancelled = (ref) => sbxdLog().split('\n').filter((l) => l.includes(`pull of '${ref}' failed`) && l.includes('cancelled')).length
const moving = (ev) => ev.status === 'layer' && ev.layer.digest === dataLayer && ev.layer.bytes > 0

// The data layer's transfer was abandoned by sbxd before its end, no template came of it, and
// sbxd logged the cancel (once more than before).
async function assertStoppedOnServer(ref, before, template) {
  let last
  await waitFor(() => { last = proxy.ended[dataLayer]?.at(-1); return last }, 'the blob transfer to end', 20_000)
  assert.ok(last.aborted && last.sent < last.size, JSON.stringify(last))
  await waitFor(() => cancelled(ref) > before, 'sbxd to log the cancelled pull')
  await assert.rejects(Images.get(template), NotFoundError)
}

test('aborting a pull (AbortSignal) cancels it on the server', async () => {
  const ref = `${proxy.host}/ts/data:v1`
  const before = cancelled(ref)
  proxy.reset()
  const ctl = new AbortController()
  const e = await Images.pull(ref, { name: 'ts-abort', signal: ctl.signal, onProgress: (ev) => { if (moving(ev)) ctl.abort() } }).catch((x) => x)
  assert.ok(e instanceof SbxError && /aborted/.test(e.message), String(e))
  await assertStoppedOnServer(ref, before, 'ts-abort')
})

test('leaving a pullStream loop early cancels the pull on the server', async () => {
  const ref = `${proxy.host}/ts/data:v1`
  const before = cancelled(ref)
  proxy.reset()
  const p = await Images.pullStream(ref, { name: 'ts-left' })
  for await (const ev of p) if (moving(ev)) break
  assert.ok(p.closed && p.image === undefined)
  await assertStoppedOnServer(ref, before, 'ts-left')
})

test('templates and the storage pool: what a create takes, what a disk holds', async () => {
  const ts = await Templates.list()
  const names = ts.map((t) => t.name)
  assert.deepEqual(names, [...names].sort())
  const base = ts.find((t) => t.name === 'base')
  assert.deepEqual([base.kind, base.cpuCount, base.memoryMb, base.diskSizeMb], ['builtin', 2, 1024, 1024])
  assert.ok(names.includes('code-interpreter-v1'))
  const s = await Sbx.create({ template: 'base' })
  try {
    const st = await Storage.get()
    assert.equal(st.backend, 'pool')
    assert.equal(st.pool.kind, 'image')
    assert.equal(st.pool.used + st.pool.free, st.pool.size)
    const mine = st.sandboxes.find((x) => x.id === s.id)
    assert.deepEqual([mine.state, mine.diskMb, mine.limit], ['running', 1024, 1024 * MiB])
    await s.sh('head -c 24M /dev/urandom > /home/user/blob && sync')
    let d
    await waitFor(async () => {
      d = (await Storage.get()).sandboxes.find((x) => x.id === s.id)
      return d.referenced >= 24 * MiB
    }, 'the pool to show the 24 MiB', 40_000)
    assert.ok(d.exclusive >= 24 * MiB, JSON.stringify(d))
  } finally { await s.kill() }
})

test('Storage.grow grows a pool while a sandbox on it writes; what cannot grow is refused', { skip: !REAL.jailer && 'sbx-jailer not built' }, async () => {
  const linkTemplates = (state) => symlinkSync(join(process.env.SBX_TEST_STATE, 'templates'), join(state, 'templates'))
  const d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: linkTemplates, args: ['--storage-pool', '512M'] })
  const t = await startSbxd({ prepare: linkTemplates, args: ['--disk', 'tmpfs'] })
  try {
    const o = { url: d.url, apiKey: d.key, maxRetries: 0 }
    const before = await Storage.get(o)
    assert.deepEqual([before.backend, before.pool.kind, before.pool.imageBytes], ['pool', 'image', 512 * MiB])
    const s = await Sbx.create({ template: 'base', ...o })
    try {
      await s.sh('head -c 8M /dev/urandom > /home/user/a && sync')
      const after = await Storage.grow('768M', o)
      assert.equal(after.pool.imageBytes, 768 * MiB)
      assert.ok(after.pool.size >= before.pool.size + 200 * MiB, JSON.stringify([before.pool, after.pool]))
      assert.ok(after.sandboxes.some((x) => x.id === s.id))
      assert.equal((await s.sh('head -c 8M /dev/urandom > /home/user/b && echo still')).stdout, 'still\n')
      assert.equal((await Storage.grow(1 << 30, o)).pool.imageBytes, 1 << 30) // bytes
    } finally { await s.kill() }
    await assert.rejects(Storage.grow('512M', o), (e) => e instanceof BadRequestError && /that large already/.test(e.message))
    await assert.rejects(Storage.grow('lots', o), BadRequestError)
    await assert.rejects(Storage.grow(1.5, o), TypeError)
    const to = { url: t.url, apiKey: t.key }
    assert.deepEqual(await Storage.get(to), { backend: 'tmpfs', pool: undefined, sandboxes: [] })
    await assert.rejects(Storage.grow('1G', to), (e) => e instanceof ConflictError && /without a storage pool/.test(e.message))
  } finally {
    await t.stop()
    await d.stop()
  }
})
