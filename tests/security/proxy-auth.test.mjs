// What a signed /files URL grants and what a refused request leaves behind (escape battery
// group F): URLs made by the unmodified npm `e2b` SDK (uploadUrl/downloadUrl), fetched raw so
// extra headers, statuses and bodies are visible.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { sandboxFetch, envelope, API_URL } from '../lib/env.mjs'

let sbx
const made = []
const ROOT_BASIC = 'Basic ' + Buffer.from('root:').toString('base64') // cm9vdDo=
const USER_BASIC = 'Basic ' + Buffer.from('user:').toString('base64')

before(async () => {
  sbx = await Sandbox.create()
  made.push(sbx)
  await sbx.commands.run('echo top-secret > /root/secret && chmod 600 /root/secret', { user: 'root' })
})

after(async () => {
  for (const s of made) await s.kill().catch(() => {})
})

const viaHeaders = (s) => ({ 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49983' })
const form = (name, text) => {
  const f = new FormData()
  f.append('file', new Blob([text]), name)
  return f
}
const exists = async (path) =>
  (await sbx.commands.run(`test -e ${path} && echo yes || echo no`, { user: 'root' })).stdout.trim()

test('a URL signed for the default user reads as that user, whatever Authorization says', async () => {
  const url = await sbx.downloadUrl('/root/secret')
  assert.doesNotMatch(url, /username=/, 'the SDK signs for the default user')
  for (const [how, headers] of [['header-less', {}], ['sandbox headers', viaHeaders(sbx)]]) {
    for (const auth of [ROOT_BASIC, 'basic cm9vdDo=', 'Basic  cm9vdDo=']) {
      const r = await fetch(url, { headers: { ...headers, Authorization: auth } })
      const text = await r.text()
      assert.notEqual(r.status, 200, `${how}, ${auth}: ${text}`)
      assert.doesNotMatch(text, /top-secret/, `${how}, ${auth}`)
    }
  }
  // the same file signed for root is readable, and a Basic header for user does not demote it
  const rootUrl = await sbx.downloadUrl('/root/secret', { user: 'root' })
  const r = await fetch(rootUrl, { headers: { Authorization: USER_BASIC } })
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'top-secret\n')
})

test('a URL signed for the default user writes as that user, whatever Authorization says', async () => {
  for (const [i, headers] of [{}, viaHeaders(sbx)].entries()) {
    const target = `/root/planted-${i}`
    const url = await sbx.uploadUrl(target)
    const r = await fetch(url, { method: 'POST', body: form('x', 'planted'), headers: { ...headers, Authorization: ROOT_BASIC } })
    const text = await r.text()
    assert.notEqual(r.status, 200, text)
    assert.equal(await exists(target), 'no', `${target} was written as root`)
  }
  // signed for the default user, the write lands as user
  const url = await sbx.uploadUrl('/home/user/by-signature.txt')
  const r = await fetch(url, { method: 'POST', body: form('x', 'mine'), headers: { Authorization: ROOT_BASIC } })
  assert.equal(r.status, 200, await r.text())
  const owner = await sbx.commands.run('stat -c %U /home/user/by-signature.txt')
  assert.equal(owner.stdout, 'user\n')
})

// envd's validateSigning messages (its auth.go), as JSON {code,message}.
async function refusal(url, init = {}) {
  const r = await fetch(url, init)
  const text = await r.text()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: r.status, json, text }
}

test('bad and expired signatures get envd 401s, with or without sandbox headers', async () => {
  await sbx.files.write('/home/user/sig.txt', 'sig')
  const good = await sbx.downloadUrl('/home/user/sig.txt')
  const tampered = good.replace(/signature=v1_./, (m) => m.slice(0, -1) + (m.endsWith('A') ? 'B' : 'A'))
  const expired = await sbx.downloadUrl('/home/user/sig.txt', { useSignatureExpiration: -10 })
  const upExpired = await sbx.uploadUrl('/home/user/sig-up.txt', { useSignatureExpiration: -10 })
  const upTampered = (await sbx.uploadUrl('/home/user/sig-up.txt')).replace(/signature=v1_[^&]+/, 'signature=v1_nope')
  const cases = [
    ['GET tampered', tampered, {}, 'invalid signature'],
    ['GET expired', expired, {}, 'signature is already expired'],
    ['POST tampered', upTampered, { method: 'POST', body: form('x', 'no') }, 'invalid signature'],
    ['POST expired', upExpired, { method: 'POST', body: form('x', 'no') }, 'signature is already expired'],
  ]
  for (const [name, url, init, message] of cases) {
    for (const [how, headers] of [['header-less', {}], ['sandbox headers', viaHeaders(sbx)]]) {
      const r = await refusal(url, { ...init, headers })
      assert.equal(r.status, 401, `${name} ${how}: ${r.text}`)
      assert.deepEqual(r.json, { code: 401, message }, `${name} ${how}`)
    }
  }
  assert.equal(await exists('/home/user/sig-up.txt'), 'no')
  // the header alone decides when it is sent; no signature and no header says so
  const h = viaHeaders(sbx)
  let r = await refusal(good, { headers: { ...h, 'X-Access-Token': 'wrong' } })
  assert.deepEqual([r.status, r.json], [401, { code: 401, message: 'access token present in header but does not match' }])
  r = await refusal(`${API_URL}/files?path=/home/user/sig.txt`, { headers: h })
  assert.deepEqual([r.status, r.json], [401, { code: 401, message: 'missing signature query parameter' }])
  r = await refusal(good.replace(/signature=[^&]+/, 'signature_expiration=x'), { headers: h })
  assert.equal(r.status, 400, r.text)
  // a header-less /files that is no signed URL at all stays the control plane's 404
  r = await refusal(`${API_URL}/files?path=/home/user/sig.txt`)
  assert.equal(r.status, 404, r.text)
})

const RESUME_DENIED = "This sandbox can't be resumed with the credentials provided. Check your access token and try again."

test('autoResume: a request refused for its credentials leaves the sandbox paused', async () => {
  const s = await Sandbox.create({ timeoutMs: 120_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  made.push(s)
  await s.files.write('/home/user/r.txt', 'resume me')
  const goodUrl = await s.downloadUrl('/home/user/r.txt')
  const expiredUrl = await s.downloadUrl('/home/user/r.txt', { useSignatureExpiration: -10 })
  assert.equal(await s.pause(), true)
  const start = envelope({ process: { cmd: '/bin/true' } })
  const startInit = (token) => ({
    method: 'POST', body: start,
    headers: { 'Content-Type': 'application/connect+json', ...(token ? { 'X-Access-Token': token } : {}) },
  })
  const attempts = [
    ['Start, wrong token', () => sandboxFetch(s.sandboxId, 49983, '/process.Process/Start', startInit('wrong'))],
    ['Start, no token', () => sandboxFetch(s.sandboxId, 49983, '/process.Process/Start', startInit())],
    ['/files, wrong token', () => sandboxFetch(s.sandboxId, 49983, '/files?path=/home/user/r.txt', { headers: { 'X-Access-Token': 'wrong' } })],
    ['/files, expired signature', () => sandboxFetch(s.sandboxId, 49983, new URL(expiredUrl).pathname + new URL(expiredUrl).search)],
    ['/files, tampered signature', () => sandboxFetch(s.sandboxId, 49983, '/files' + new URL(goodUrl).search.replace(/signature=v1_[^&]+/, 'signature=v1_x'))],
    ['/execute, wrong token', () => sandboxFetch(s.sandboxId, 49999, '/execute', { method: 'POST', headers: { 'X-Access-Token': 'wrong', 'Content-Type': 'application/json' }, body: '{"code":"1"}' })],
    ['/health, no token', () => sandboxFetch(s.sandboxId, 49983, '/health')],
  ]
  for (const [name, go] of attempts) {
    const r = await go()
    const text = await r.text()
    assert.equal(r.status, 403, `${name}: ${text}`)
    assert.deepEqual(JSON.parse(text), { sandboxId: s.sandboxId, message: RESUME_DENIED, code: 403 }, name)
    assert.equal((await s.getInfo()).state, 'paused', `${name} resumed the sandbox`)
  }
  // a header-less expired signed URL cannot name the sandbox either
  const r = await refusal(expiredUrl)
  assert.deepEqual([r.status, r.json], [401, { code: 401, message: 'signature is already expired' }])
  assert.equal((await s.getInfo()).state, 'paused')
  // a valid signature is a credential: it resumes, and reads
  const ok = await fetch(goodUrl)
  assert.equal(ok.status, 200)
  assert.equal(await ok.text(), 'resume me')
  assert.equal((await s.getInfo()).state, 'running')
})
