// Images pulled from registries (server/pull/README.md): the images users bring
// (tests/lib/images.mjs: busybox with no libc, a musl image with a zstd layer, Debian minbase
// with python3 and an app image on it, none holding anything of sbx's) pushed with skopeo to
// Debian's docker-registry on loopback, plain, behind token auth, Basic auth, TLS of a CA made
// here, and on a non-loopback address; pulled through POST /v1/images/pull. What sbxd stored
// is checked: the template, its layers and digests, the files in the layer store. A counting
// proxy in front of the plain registry tells how often each blob was transferred.
import { test, before, after } from 'node:test'
import { Template } from 'e2b'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSbxd, TOP } from './sbxd.mjs'
import { userImages, startRegistry, push, MKOCI } from '../lib/images.mjs'
import {
  startTokenRegistry, startBasicRegistry, startTlsRegistry, startCountingProxy,
  layoutDigests, makeIndexLayout,
} from '../lib/registry.mjs'

const MKBOMB = new URL('../lib/images/mkbomb.py', import.meta.url).pathname
// a non-loopback IPv4 address of this machine: a registry there is not on loopback
const OTHER_ADDR = Object.values(networkInterfaces()).flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address
const SBX = join(process.env.SBX_TEST_BUILD || join(TOP, 'build'), 'cli/sbx')

let imgs, work, anon, proxy, tok, basic, tls, insecure, plainOther, d, bare
const stops = []

async function pull(srv, body, { stream = false } = {}) {
  const res = await fetch(`${srv.url}/v1/images/pull`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${srv.key}`, 'Content-Type': 'application/json',
      ...(stream ? { Accept: 'application/x-ndjson' } : {}),
    },
    body: JSON.stringify(body),
  })
  const text = await res.text()
  if (stream) return { status: res.status, lines: text.trim().split('\n').map((l) => JSON.parse(l)) }
  return { status: res.status, json: text ? JSON.parse(text) : undefined }
}

// A streamed pull's lines, each with the time it arrived (at, ms).
async function timedLines(srv, body) {
  const res = await fetch(`${srv.url}/v1/images/pull`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${srv.key}`, 'Content-Type': 'application/json', Accept: 'application/x-ndjson' },
    body: JSON.stringify(body),
  })
  const out = []
  let buf = ''
  for await (const chunk of res.body) {
    buf += Buffer.from(chunk).toString()
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      out.push({ ...JSON.parse(buf.slice(0, i)), at: performance.now() })
      buf = buf.slice(i + 1)
    }
  }
  return out
}

async function v1(srv, method, path) {
  const res = await fetch(srv.url + path, { method, headers: { Authorization: `Bearer ${srv.key}` } })
  const text = await res.text()
  return { status: res.status, json: text ? JSON.parse(text) : undefined }
}

// The layer store: layer dirs (64 hex) and leftover temp dirs.
function store(state) {
  const dir = join(state, 'layers')
  const all = existsSync(dir) ? readdirSync(dir) : []
  return { layers: all.filter((n) => /^[0-9a-f]{64}$/.test(n)).sort(), tmp: all.filter((n) => n.startsWith('.tmp-')) }
}

// Every layer a template of the state dir names.
function referenced(state) {
  const out = new Set()
  const t = join(state, 'templates')
  for (const n of existsSync(t) ? readdirSync(t) : []) {
    const f = join(t, n, 'template.json')
    if (!existsSync(f)) continue
    for (const l of JSON.parse(readFileSync(f)).layers || []) out.add(l.replace(/^sha256:/, '').replace(/^.*\/layers\//, ''))
  }
  return out
}

function storeLayer(srv, img, i) {
  return join(srv.state, 'layers', img.layers[i].layer.replace('sha256:', ''))
}

before(async () => {
  assert.ok(OTHER_ADDR, 'this test needs a non-loopback IPv4 address on this machine')
  imgs = userImages()
  work = mkdtempSync(join(tmpdir(), 'sbx-pull-'))
  anon = await startRegistry()
  stops.push(anon.stop)
  await push(imgs.busybox, `${anon.host}/test/busybox:v1`)
  await push(imgs.busybox, `${anon.host}/test/busybox-docker:v1`, { format: 'v2s2' })
  await push(imgs.busybox, `${anon.host}/library/busybox:1.36`)
  await push(imgs.musl, `${anon.host}/test/musl:v1`)
  await push(imgs.minbase, `${anon.host}/test/minbase:v1`)
  await push(imgs.minbaseApp, `${anon.host}/test/minbase-app:v1`)
  makeIndexLayout(join(work, 'multi'), [
    { layout: imgs.musl, os: 'linux', architecture: 'arm64' },
    { layout: imgs.busybox, os: 'linux', architecture: 'amd64' },
  ])
  await push(join(work, 'multi'), `${anon.host}/test/multi:v1`, { all: true })
  makeIndexLayout(join(work, 'arm-only'), [{ layout: imgs.musl, os: 'linux', architecture: 'arm64' }])
  await push(join(work, 'arm-only'), `${anon.host}/test/arm-only:v1`, { all: true })
  proxy = await startCountingProxy(anon.url)
  stops.push(proxy.stop)

  tok = await startTokenRegistry({ alice: 'secret', carol: 'from-config' })
  stops.push(tok.stop)
  await push(imgs.busybox, `${tok.host}/private/busybox:v1`, { creds: 'alice:secret' })
  await push(imgs.musl, `${tok.host}/private/musl:v1`, { creds: 'alice:secret' })
  basic = await startBasicRegistry('bob', 'pw-of-bob')
  stops.push(basic.stop)
  await push(imgs.busybox, `${basic.host}/team/busybox:v1`, { creds: 'bob:pw-of-bob' })
  tls = await startTlsRegistry()
  stops.push(tls.stop)
  await push(imgs.busybox, `${tls.host}/secure/busybox:v1`)
  insecure = await startRegistry('', { host: OTHER_ADDR })
  stops.push(insecure.stop)
  await push(imgs.busybox, `${insecure.host}/lan/busybox:v1`)
  plainOther = await startRegistry('', { host: OTHER_ADDR })
  stops.push(plainOther.stop)
  await push(imgs.busybox, `${plainOther.host}/lan/busybox:v1`)

  // sbxd's Docker config.json: carol's credentials for the token registry
  const cfg = join(work, 'docker')
  mkdirSync(cfg)
  writeFileSync(join(cfg, 'config.json'), JSON.stringify({
    auths: { [`https://${tok.host}/v1/`]: { auth: Buffer.from('carol:from-config').toString('base64') } },
    credsStore: 'desktop',
  }))
  d = await startSbxd({
    args: ['--registry-ca', tls.ca, '--registry-mirror', `http://${proxy.host}`,
      '--insecure-registry', insecure.host, '--max-layer-size', '256M'],
    env: { DOCKER_CONFIG: cfg },
  })
  // an sbxd with no registry options and no credentials
  mkdirSync(join(work, 'no-docker'))
  bare = await startSbxd({ env: { DOCKER_CONFIG: join(work, 'no-docker') } })
})

after(async () => {
  if (d) await d.stop()
  if (bare) await bare.stop()
  for (const s of stops.reverse()) await s().catch(() => {})
  if (work) rmSync(work, { recursive: true, force: true })
})

test('an image by tag from a loopback registry: template, layers by digest, config, files', async () => {
  const want = layoutDigests(imgs.minbaseApp)
  const r = await pull(d, { image: `${proxy.host}/test/minbase-app:v1` })
  assert.equal(r.status, 201, JSON.stringify(r.json))
  const img = r.json
  const id = `${proxy.host.replace(':', '-')}-test-minbase-app:v1`
  assert.equal(img.template, id)
  assert.equal(img.digest, want.manifest)
  assert.deepEqual(img.layers.map((l) => l.digest), want.layers)
  assert.deepEqual(img.cmd, ['python3', '/app/hello.py'])
  assert.equal(img.workingDir, '/app')
  assert.ok(img.env.includes('LANG=C.UTF-8'))
  assert.deepEqual(img.source, { reference: `${proxy.host}/test/minbase-app:v1`, registry: proxy.host })
  // the files are in the layer store, each layer a directory of it
  assert.equal(readFileSync(join(storeLayer(d, img, 1), 'app/hello.py'), 'utf8'),
    'import sys\nprint("app on python", sys.version_info[0])\n')
  assert.ok(existsSync(join(storeLayer(d, img, 0), 'usr/bin/python3')))
  const tpl = JSON.parse(readFileSync(join(d.state, 'templates', id, 'template.json')))
  assert.deepEqual(tpl.layers, img.layers.map((l) => l.layer))
  // the image's WorkingDir is kept in its record; its template starts as E2B's do, as user in
  // /home/user (a Dockerfile's WORKDIR becomes a build step's setWorkdir instead)
  assert.equal(tpl.envd.defaultWorkdir, '/home/user')
  assert.equal(tpl.envd.defaultUser, 'user')
  assert.equal((await v1(d, 'GET', `/v1/images/${id}`)).json.digest, want.manifest)
  for (const l of want.layers) assert.equal(proxy.blobs[l], 1, `blob ${l} transferred once`)
})

test('an image on the same base transfers only its own layers; the same image again none', async () => {
  proxy.reset()
  const base = layoutDigests(imgs.minbase)
  const r = await pull(d, { image: `${proxy.host}/test/minbase:v1` })
  assert.equal(r.status, 201, JSON.stringify(r.json))
  assert.deepEqual(r.json.layers.map((l) => [l.digest, l.reused]), [[base.layers[0], true]])
  assert.equal(proxy.blobs[base.layers[0]], undefined, 'the shared base layer is not transferred')
  const again = await pull(d, { image: `${proxy.host}/test/minbase-app:v1` }, { stream: true })
  const last = again.lines.at(-1)
  assert.equal(last.status, 'done', JSON.stringify(last))
  assert.ok(last.image.layers.every((l) => l.reused))
  assert.ok(again.lines.some((l) => l.status === 'layer-done' && l.layer.reused && /already in the layer store/.test(l.message)))
  const blobsSeen = Object.keys(proxy.blobs).filter((k) => k !== base.config && k !== layoutDigests(imgs.minbaseApp).config)
  assert.deepEqual(blobsSeen, [], 'no layer transferred')
})

test('formats: Docker v2 schema 2, a zstd layer, an index (linux/amd64 picked), by digest', async () => {
  const bb = layoutDigests(imgs.busybox)
  const docker = await pull(d, { image: `${anon.host}/test/busybox-docker:v1` })
  assert.equal(docker.status, 201, JSON.stringify(docker.json))
  assert.equal(docker.json.format, 'docker')
  assert.ok(existsSync(join(storeLayer(d, docker.json, 0), 'bin/busybox')))

  const musl = await pull(d, { image: `${anon.host}/test/musl:v1` })
  assert.equal(musl.status, 201, JSON.stringify(musl.json))
  assert.equal(musl.json.format, 'oci')
  assert.ok(existsSync(join(storeLayer(d, musl.json, 0), 'lib/ld-musl-x86_64.so.1')))

  const multi = await pull(d, { image: `${anon.host}/test/multi:v1` })
  assert.equal(multi.status, 201, JSON.stringify(multi.json))
  assert.equal(multi.json.digest, bb.manifest, 'the amd64 image of the index')
  assert.match(multi.json.source.indexDigest, /^sha256:[0-9a-f]{64}$/)
  assert.deepEqual(multi.json.layers.map((l) => l.digest), bb.layers)

  const arm = await pull(d, { image: `${anon.host}/test/arm-only:v1` })
  assert.equal(arm.status, 400, JSON.stringify(arm.json))
  assert.match(arm.json.error.message, /has no image for linux\/amd64 \(it has: linux\/arm64\)/)

  const byDigest = await pull(d, { image: `${anon.host}/test/musl@${layoutDigests(imgs.musl).manifest}` })
  assert.equal(byDigest.status, 201, JSON.stringify(byDigest.json))
  assert.match(byDigest.json.template, /-test-musl:sha256-[0-9a-f]{12}$/)
  // a digest the registry does not have
  const none = await pull(d, { image: `${anon.host}/test/musl@sha256:${'0'.repeat(64)}` })
  assert.equal(none.status, 404, JSON.stringify(none.json))
  assert.match(none.json.error.message, /has no \/v2\/test\/musl\/manifests\/sha256:0+: MANIFEST_UNKNOWN/)
})

test('--registry-mirror: docker.io images come from the mirror first', async () => {
  proxy.reset()
  const r = await pull(d, { image: 'busybox:1.36' })
  assert.equal(r.status, 201, JSON.stringify(r.json))
  assert.equal(r.json.template, 'busybox:1.36')
  assert.deepEqual(r.json.source, { reference: 'docker.io/library/busybox:1.36', registry: proxy.host })
  assert.ok(Object.keys(proxy.manifests).some((u) => u === '/v2/library/busybox/manifests/1.36'))
  // not on the mirror: asked there first, then Docker Hub. Offline (CI), Docker Hub cannot be
  // reached and the mirror's answer is the one given; online, Docker Hub's refusal
  proxy.reset()
  const miss = await pull(d, { image: 'library/nosuch:1' })
  assert.equal(proxy.manifests['/v2/library/nosuch/manifests/1'], 1)
  if (miss.status === 404) assert.match(miss.json.error.message, new RegExp(`registry ${proxy.host} has no /v2/library/nosuch/manifests/1`))
  else assert.match(miss.json.error.message, /registry registry-1\.docker\.io refused access to library\/nosuch/)
})

test("an offline site's fromImage('busybox:1.36') (the SDK's build) comes from the mirror", async () => {
  proxy.reset()
  const logs = []
  const tpl = Template().fromImage('busybox:1.36')
  await Template.build(tpl, 'mirrored', { apiUrl: d.url, apiKey: d.key, onBuildLogs: (e) => logs.push(e.message) })
  // pulled by the API test above: here already, so not pulled again unless skipCache
  assert.ok(logs.some((l) => /image busybox:1\.36 is template 'busybox:1\.36' already/.test(l)), logs.join('\n'))
  await Template.build(Template().skipCache().fromImage('busybox:1.36'), 'mirrored',
    { apiUrl: d.url, apiKey: d.key, onBuildLogs: (e) => logs.push(e.message) })
  assert.ok(logs.some((l) => l === 'pulling docker.io/library/busybox:1.36'), logs.join('\n'))
  assert.ok(logs.some((l) => l.includes(`from ${proxy.host}`)), logs.join('\n'))
  assert.equal(proxy.manifests['/v2/library/busybox/manifests/1.36'], 1)
  const t = JSON.parse(readFileSync(join(d.state, 'templates', 'mirrored', 'template.json')))
  assert.deepEqual(t.layers.length, 1)
})

test('token auth: refused without credentials, with a wrong password; given or from config.json', async () => {
  const image = `${tok.host}/private/busybox:v1`
  const anonR = await pull(bare, { image })
  assert.equal(anonR.status, 403, JSON.stringify(anonR.json))
  assert.equal(anonR.json.error.code, 'registry_denied')
  assert.match(anonR.json.error.message, /wants credentials for private\/busybox: give a user name and password/)
  assert.deepEqual(store(bare.state).layers, [])
  const bad = await pull(d, { image, username: 'alice', password: 'wrong' })
  assert.equal(bad.status, 403, JSON.stringify(bad.json))
  assert.match(bad.json.error.message, /refused the credentials given for private\/busybox/)
  tok.requests.length = 0
  const good = await pull(d, { image, username: 'alice', password: 'secret' })
  assert.equal(good.status, 201, JSON.stringify(good.json))
  assert.deepEqual(tok.requests.map((q) => [q.user, q.scope]), [['alice', 'repository:private/busybox:pull']],
    'one token for the whole pull')
  tok.requests.length = 0
  await v1(d, 'DELETE', `/v1/images/${good.json.template}`)
  const fromConfig = await pull(d, { image })
  assert.equal(fromConfig.status, 201, JSON.stringify(fromConfig.json))
  assert.deepEqual(tok.requests.map((q) => q.user), ['carol'])
})

test('Basic auth (htpasswd): refused without credentials, pulled with them', async () => {
  const image = `${basic.host}/team/busybox:v1`
  const no = await pull(d, { image })
  assert.equal(no.status, 403, JSON.stringify(no.json))
  assert.match(no.json.error.message, /wants credentials \(Basic auth\)/)
  const yes = await pull(d, { image, username: 'bob', password: 'pw-of-bob' })
  assert.equal(yes.status, 201, JSON.stringify(yes.json))
})

test('HTTPS with --registry-ca; without it the certificate is refused, naming the option', async () => {
  const image = `${tls.host}/secure/busybox:v1`
  const ok = await pull(d, { image })
  assert.equal(ok.status, 201, JSON.stringify(ok.json))
  const r = await pull(bare, { image })
  assert.equal(r.status, 502, JSON.stringify(r.json))
  assert.equal(r.json.error.code, 'unreachable')
  assert.match(r.json.error.message, /over https: SSL peer certificate.*--registry-ca FILE/)
  assert.deepEqual(store(bare.state).layers, [])
})

test('plain HTTP only for loopback or an --insecure-registry', async () => {
  const ok = await pull(d, { image: `${insecure.host}/lan/busybox:v1` })
  assert.equal(ok.status, 201, JSON.stringify(ok.json))
  const no = await pull(d, { image: `${plainOther.host}/lan/busybox:v1` })
  assert.equal(no.status, 502, JSON.stringify(no.json))
  assert.match(no.json.error.message, /cannot be reached over https: .*--insecure-registry HOST\[:PORT\]/)
})

test('sbx image pull: progress on stderr, the template on stdout; a password from stdin', async () => {
  const env = { ...process.env, SBX_URL: d.url, SBX_API_KEY: d.key }
  const ok = spawnSync(SBX, ['image', 'pull', `${basic.host}/team/busybox:v1`, '--name', 'cli-bb:one',
    '--username', 'bob', '--password-stdin'], { env, input: 'pw-of-bob\n', encoding: 'utf8' })
  assert.equal(ok.status, 0, ok.stderr)
  assert.match(ok.stderr, new RegExp(`pulling ${basic.host}/team/busybox:v1`))
  assert.match(ok.stdout, /^sha256:[0-9a-f]{64}: 1 layer\(s\), [01] already stored; template cli-bb:one\n$/)
  const bad = spawnSync(SBX, ['image', 'pull', `${basic.host}/team/busybox:v1`, '--username', 'bob',
    '--password-stdin'], { env, input: 'wrong\n', encoding: 'utf8' })
  assert.equal(bad.status, 1)
  assert.match(bad.stderr, /sbx: registry .* refused the credentials given for team\/busybox/)
  assert.equal((await v1(d, 'GET', '/v1/images/cli-bb:one')).status, 200)
  const usage = spawnSync(SBX, ['image', 'pull'], { env, encoding: 'utf8' })
  assert.equal(usage.status, 2)
})

test('bad requests: a malformed reference, a template name taken by a built template', async () => {
  const bad = await pull(d, { image: 'Not/A:Valid:Ref' })
  assert.equal(bad.status, 400, JSON.stringify(bad.json))
  const noBody = await pull(d, { name: 'x' })
  assert.equal(noBody.status, 400)
  mkdirSync(join(d.state, 'templates', 'mine'), { recursive: true })
  writeFileSync(join(d.state, 'templates', 'mine', 'template.json'), JSON.stringify({ name: 'mine', layers: [] }))
  const taken = await pull(d, { image: `${anon.host}/test/busybox:v1`, name: 'mine' })
  assert.equal(taken.status, 409, JSON.stringify(taken.json))
  rmSync(join(d.state, 'templates', 'mine'), { recursive: true })
})

test('concurrent pulls of two images on one base: the base is transferred once', async () => {
  for (const id of [`${proxy.host.replace(':', '-')}-test-minbase-app:v1`, `${proxy.host.replace(':', '-')}-test-minbase:v1`]) {
    assert.ok([204, 404].includes((await v1(d, 'DELETE', `/v1/images/${id}`)).status))
  }
  const base = layoutDigests(imgs.minbase).layers[0]
  assert.ok(!store(d.state).layers.some((h) => existsSync(join(d.state, 'layers', h, 'usr/bin/python3'))), 'base collected')
  proxy.reset()
  proxy.opts.bytesPerSec = 16 << 20 // ~4 s for the base layer: the two pulls overlap
  try {
    const [a, b] = await Promise.all([
      timedLines(d, { image: `${proxy.host}/test/minbase-app:v1` }),
      timedLines(d, { image: `${proxy.host}/test/minbase:v1` }),
    ])
    const done = (x) => x.find((l) => l.status === 'done')
    assert.ok(done(a) && done(b), JSON.stringify([a.at(-1), b.at(-1)]))
    assert.equal(proxy.blobs[base], 1, 'one transfer of the shared layer')
    assert.equal(done(a).image.layers[0].layer, done(b).image.layers[0].layer)
    // they overlapped: each had its manifest before the base layer was stored by either
    const stored = Math.min(...[a, b].map((x) => x.find((l) => l.status === 'layer-done' && l.layer.digest === base).at))
    for (const x of [a, b]) assert.ok(x.find((l) => l.status === 'resolved').at < stored)
    // one of them waited for the other's transfer
    assert.equal([a, b].filter((x) => x.find((l) => l.status === 'layer-done' && l.layer.digest === base).layer.reused).length, 1)
  } finally {
    proxy.opts.bytesPerSec = 0
  }
})

test('a blob that is not its digest is refused before it is extracted; nothing stays', async () => {
  const app = layoutDigests(imgs.minbaseApp)
  const id = `${proxy.host.replace(':', '-')}-test-minbase-app:v1`
  await v1(d, 'DELETE', `/v1/images/${id}`) // its app layer goes: the store must fetch it
  const before = store(d.state)
  proxy.opts.corrupt = app.layers[1]
  try {
    const r = await pull(d, { image: `${proxy.host}/test/minbase-app:v1` })
    assert.equal(r.status, 502, JSON.stringify(r.json))
    assert.equal(r.json.error.code, 'bad_registry')
    assert.match(r.json.error.message, new RegExp(`layer ${app.layers[1]} from registry ${proxy.host} does not match its digest`))
  } finally {
    proxy.opts.corrupt = undefined
  }
  assert.deepEqual(store(d.state), before)
  assert.equal((await v1(d, 'GET', `/v1/images/${id}`)).status, 404)
  const again = await pull(d, { image: `${proxy.host}/test/minbase-app:v1` })
  assert.equal(again.status, 201, JSON.stringify(again.json))
})

test('decompression bombs: refused past --max-layer-size as they are written, pulled or imported', async () => {
  const one = join(work, 'bomb-one')
  const many = join(work, 'bomb-many')
  // 2 GiB of zeros in one file (2 MiB of gzip), and 600 files of 1 MiB (0.6 MiB of gzip)
  const b1 = JSON.parse(execFileSync('python3', [MKBOMB, one, '--one', '2048']))
  const b2 = JSON.parse(execFileSync('python3', [MKBOMB, many, '--many', '600']))
  assert.ok(b1.compressed < 3 << 20 && b2.compressed < 1 << 20)
  await push(one, `${anon.host}/bomb/one:v1`)
  await push(many, `${anon.host}/bomb/many:v1`)
  const before = store(d.state)
  const usedBefore = Number(execFileSync('du', ['-sk', join(d.state, 'layers')]).toString().split('\t')[0])
  for (const [name, b] of [['one', b1], ['many', b2]]) {
    const r = await pull(d, { image: `${anon.host}/bomb/${name}:v1` })
    assert.equal(r.status, 413, JSON.stringify(r.json))
    assert.equal(r.json.error.code, 'too_large')
    assert.match(r.json.error.message,
      new RegExp(`layer sha256:${b.layer.slice(7, 19)} is larger than 256 MiB uncompressed, this server's --max-layer-size`))
    assert.deepEqual(store(d.state), before, `${name}: nothing left in the layer store`)
  }
  // the same images imported as archives (OCI layouts): the same bound
  for (const [name, layout, b] of [['one', one, b1], ['many', many, b2]]) {
    const file = join(work, `bomb-${name}.tar`)
    execFileSync('tar', ['-C', layout, '-cf', file, '.'])
    const res = await fetch(`${d.url}/v1/images?name=bomb-${name}`, {
      method: 'POST', headers: { Authorization: `Bearer ${d.key}` }, body: readFileSync(file),
    })
    const j = await res.json()
    assert.equal(res.status, 413, JSON.stringify(j))
    assert.match(j.error.message, /is larger than 256 MiB uncompressed/)
    assert.ok(b.layer)
    assert.deepEqual(store(d.state), before, `import ${name}: nothing left`)
  }
  const usedAfter = Number(execFileSync('du', ['-sk', join(d.state, 'layers')]).toString().split('\t')[0])
  assert.ok(usedAfter - usedBefore < 1024, `the layer store grew by ${usedAfter - usedBefore} KiB`)
})

test('an imported archive whose layer is not its digest is refused before anything is extracted', async () => {
  // an image whose layer the store does not have
  const tree = join(work, 'fresh-tree')
  mkdirSync(join(tree, 'data'), { recursive: true })
  writeFileSync(join(tree, 'data/blob.bin'), randomBytes(256 << 10))
  const layout = join(work, 'fresh')
  execFileSync('python3', [MKOCI, layout, '--layer', tree])
  const file = join(work, 'fresh.tar')
  execFileSync('tar', ['-C', layout, '-cf', file, '.'])
  const buf = readFileSync(file)
  // flip a byte inside the layer blob, keeping the archive readable: its member's header
  // starts with its name, ./blobs/sha256/<hex>
  const layer = layoutDigests(layout).layers[0].slice(7)
  const at = buf.indexOf(Buffer.from(`blobs/sha256/${layer}`))
  assert.ok(at > 0)
  const hdr = Math.floor(at / 512) * 512
  buf[hdr + 512 + 4096] ^= 0xff
  const before = store(d.state)
  const res = await fetch(`${d.url}/v1/images?name=fresh-bad`, {
    method: 'POST', headers: { Authorization: `Bearer ${d.key}` }, body: buf,
  })
  const j = await res.json()
  assert.equal(res.status, 400, JSON.stringify(j))
  assert.match(j.error.message, new RegExp(`layer blobs/sha256/${layer} does not match its digest`))
  assert.deepEqual(store(d.state), before)
})

test('a pull interrupted by kill -9 leaves nothing in use; the next sbxd pulls it whole', async () => {
  const s = await startSbxd()
  let s2
  try {
    proxy.opts.bytesPerSec = 8 << 20
    const res = await fetch(`${s.url}/v1/images/pull`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${s.key}`, Accept: 'application/x-ndjson', 'Content-Type': 'application/json' },
      body: JSON.stringify({ image: `${proxy.host}/test/minbase-app:v1` }),
    })
    const reader = res.body.getReader()
    let text = ''
    // wait for the app layer to be stored and the base to be under way
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      text += Buffer.from(value).toString()
      if (/"layer-done"/.test(text) && /"bytes":[1-9][0-9]{6,}/.test(text)) break
    }
    assert.match(text, /"layer-done"/, text)
    s.proc.kill('SIGKILL')
    await new Promise((r) => (s.proc.exitCode !== null || s.proc.signalCode ? r() : s.proc.once('exit', r)))
    reader.cancel().catch(() => {})
    proxy.opts.bytesPerSec = 0
    s2 = await startSbxd({ reuse: { dir: s.dir, state: s.state } })
    const st = store(s.state)
    assert.deepEqual(st.tmp, [], 'no half-extracted layer')
    const refs = referenced(s.state)
    assert.deepEqual(st.layers.filter((h) => !refs.has(h)), [], 'no layer that no template names')
    assert.equal(existsSync(join(s.state, 'templates', `${proxy.host.replace(':', '-')}-test-minbase-app:v1`)), false)
    const r = await pull(s2, { image: `${proxy.host}/test/minbase-app:v1` })
    assert.equal(r.status, 201, JSON.stringify(r.json))
    assert.ok(existsSync(join(storeLayer(s2, r.json, 0), 'usr/bin/python3')))
    assert.ok(existsSync(join(storeLayer(s2, r.json, 1), 'app/hello.py')))
  } finally {
    proxy.opts.bytesPerSec = 0
    if (s2) await s2.stop()
    else await s.stop().catch(() => {})
  }
})

test('a pull past the state disk\'s free space stops with 507 and leaves nothing', async () => {
  const base = mkdtempSync(join(tmpdir(), 'sbx-pull-disk-'))
  const img = `${base}.img`
  let s
  execFileSync('truncate', ['-s', '160M', img])
  execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', img])
  execFileSync('mount', ['-o', 'loop', img, base])
  try {
    s = await startSbxd({ reuse: { dir: base }, args: ['--disk-reserve', '8'] })
    const free = () => Number(execFileSync('df', ['-k', '--output=avail', base]).toString().split('\n')[1])
    const before = free()
    const r = await pull(s, { image: `${anon.host}/test/minbase:v1` })
    assert.equal(r.status, 507, JSON.stringify(r.json))
    assert.equal(r.json.error.code, 'no_space')
    assert.match(r.json.error.message, /not enough space on the host's state disk for layer sha256:[0-9a-f]{12}[^:]*: \d+ MiB more wanted, \d+ MiB free beyond the 8 MiB reserve/)
    const st = store(s.state)
    assert.deepEqual(st, { layers: [], tmp: [] })
    assert.ok(Math.abs(free() - before) < 2048, `free space back: ${before} → ${free()} KiB`)
    // a small image still fits
    const ok = await pull(s, { image: `${anon.host}/test/busybox:v1` })
    assert.equal(ok.status, 201, JSON.stringify(ok.json))
  } finally {
    if (s) await s.stop({ keep: true }).catch(() => {})
    try { execFileSync('umount', ['-l', base]) } catch {}
    rmSync(base, { recursive: true, force: true })
    rmSync(img, { force: true })
  }
})
