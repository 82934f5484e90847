// Template builds from registry images through the unmodified `e2b` SDK (server/pull/README.md,
// server/template-build/README.md "Bases"): Template().fromImage(ref[, credentials]), fromGCPRegistry
// and fromAWSRegistry as E2B's SDK sends them, against Debian's docker-registry on loopback
// (anonymous, token auth with a token server in this process, Basic auth), the images users
// bring pushed there with skopeo. A build with no steps needs no sandbox: what sbxd made of the
// image (the template's layers, the build record) is checked here; sandboxes started from
// pulled images are tests/compat/image-pull-run.test.mjs.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Template, BuildError } from 'e2b'
import { API_KEY, API_URL, STATE, api } from '../lib/env.mjs'
import { userImages, startRegistry, push } from '../lib/images.mjs'
import { startTokenRegistry, startBasicRegistry, layoutDigests } from '../lib/registry.mjs'

let imgs, anon, tok, gcp
const GCP_KEY = {
  type: 'service_account', project_id: 'sbx-test', private_key_id: '0123abcd',
  client_email: 'puller@sbx-test.iam.gserviceaccount.com', client_id: '1234567890',
}
const aliases = []

async function build(tpl, name, opts = {}) {
  const logs = []
  aliases.push(name)
  const info = await Template.build(tpl, name, { ...opts, onBuildLogs: (e) => logs.push(e.message) })
  return { info, logs }
}

async function image(id) {
  const res = await fetch(`${API_URL}/v1/images/${encodeURIComponent(id)}`, { headers: { Authorization: `Bearer ${API_KEY}` } })
  return res.status === 200 ? res.json() : undefined
}

const tplLayers = (name) => JSON.parse(readFileSync(join(STATE, 'templates', name, 'template.json'))).layers

before(async () => {
  imgs = userImages()
  anon = await startRegistry()
  await push(imgs.minbaseApp, `${anon.host}/sdk/app:v1`)
  await push(imgs.busybox, `${anon.host}/sdk/moving:v1`)
  tok = await startTokenRegistry({ alice: 'alice-secret-pw' })
  await push(imgs.musl, `${tok.host}/private/musl:v1`, { creds: 'alice:alice-secret-pw' })
  gcp = await startBasicRegistry('_json_key', JSON.stringify(GCP_KEY))
  await push(imgs.busybox, `${gcp.host}/gcp/busybox:v1`, { creds: `_json_key:${JSON.stringify(GCP_KEY)}` })
  tok.requests.length = 0 // skopeo's
})

after(async () => {
  for (const a of aliases) await api('DELETE', `/templates/${a}`).catch(() => {})
  for (const r of [anon, tok, gcp]) if (r) await r.stop().catch(() => {})
})

test('fromImage pulls the image: the build log shows it, the template is made of its layers', async () => {
  const ref = `${anon.host}/sdk/app:v1`
  const { logs } = await build(Template().fromImage(ref), 'pull-app')
  assert.ok(logs.some((l) => l.includes(`pulling ${ref}`)), logs.join('\n'))
  assert.ok(logs.some((l) => /layer 2\/2 sha256:[0-9a-f]{12}: (pulled|already in the layer store)/.test(l)), logs.join('\n'))
  const img = await image(`${anon.host.replace(':', '-')}-sdk-app:v1`)
  assert.ok(img, 'the pulled image is listed')
  assert.deepEqual(img.layers.map((l) => l.digest), layoutDigests(imgs.minbaseApp).layers)
  assert.deepEqual(tplLayers('pull-app'), img.layers.map((l) => l.layer))
  // a second template on it: the image is here, nothing is pulled again
  const again = await build(Template().fromImage(ref), 'pull-app-2')
  assert.ok(again.logs.some((l) => /is template '.*-sdk-app:v1' already/.test(l)), again.logs.join('\n'))
  assert.ok(!again.logs.some((l) => /pulling/.test(l)), again.logs.join('\n'))
})

test('fromImage with registry credentials (token auth); the build record keeps no password', async () => {
  const ref = `${tok.host}/private/musl:v1`
  await assert.rejects(build(Template().fromImage(ref), 'pull-private-anon'), (e) => {
    assert.ok(e instanceof BuildError)
    assert.match(e.message, /pulling '.*private\/musl:v1' failed: registry .* wants credentials for private\/musl/)
    return true
  })
  const { info, logs } = await build(
    Template().fromImage(ref, { username: 'alice', password: 'alice-secret-pw' }), 'pull-private')
  assert.ok(logs.some((l) => l.includes(`pulling ${ref}`)), logs.join('\n'))
  assert.deepEqual(tok.requests.filter((q) => q.user === 'alice').map((q) => q.scope),
    ['repository:private/musl:pull'], 'one token, for pulling')
  const rec = readFileSync(join(STATE, 'build/builds', `${info.buildId}.json`), 'utf8')
  assert.ok(!rec.includes('alice-secret-pw'), 'the password is not on disk')
  assert.deepEqual(JSON.parse(rec).spec.fromImageRegistry, { type: 'registry', username: 'alice' })
  assert.deepEqual(tplLayers('pull-private').length, 1)
})

test('a tag that moved: kept until skipCache pulls it again', async () => {
  const ref = `${anon.host}/sdk/moving:v1`
  await build(Template().fromImage(ref), 'pull-moving')
  const first = tplLayers('pull-moving')
  await push(imgs.musl, ref) // the tag now names another image
  await build(Template().fromImage(ref), 'pull-moving')
  assert.deepEqual(tplLayers('pull-moving'), first, 'the image pulled before is used')
  const { logs } = await build(Template().skipCache().fromImage(ref), 'pull-moving')
  assert.ok(logs.some((l) => l.includes(`pulling ${ref}`)), logs.join('\n'))
  const img = await image(`${anon.host.replace(':', '-')}-sdk-moving:v1`)
  assert.deepEqual(img.layers.map((l) => l.digest), layoutDigests(imgs.musl).layers)
  assert.deepEqual(tplLayers('pull-moving'), img.layers.map((l) => l.layer))
})

test('fromGCPRegistry: the service account key is the password of _json_key', async () => {
  const { logs } = await build(
    Template().fromGCPRegistry(`${gcp.host}/gcp/busybox:v1`, { serviceAccountJSON: GCP_KEY }),
    'pull-gcp')
  assert.ok(logs.some((l) => l.includes(`pulling ${gcp.host}/gcp/busybox:v1`)), logs.join('\n'))
  assert.equal(tplLayers('pull-gcp').length, 1)
})

test('fromAWSRegistry is refused at the start, saying what to give instead', async () => {
  const tpl = Template().fromAWSRegistry('123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:1', {
    accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'example-secret', region: 'eu-west-1',
  })
  await assert.rejects(build(tpl, 'pull-aws'), (e) => {
    assert.match(e.message, /fromAWSRegistry is not supported.*username: 'AWS', password: <the output of `aws ecr get-login-password/)
    return true
  })
})
