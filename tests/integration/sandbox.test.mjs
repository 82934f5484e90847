// End to end through real sandboxes: sbxd + sbx-jailer + sbx-agent + the base template.
// Binaries come from $SBX_JAILER / $SBX_AGENT (default build/jailer/sbx-jailer,
// build/guest-agent/sbx-agent), the template from $SBX_TEMPLATE_BUILD (default
// templates/build-all.sh). Skipped, with the reason, only when one of them does not exist.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL, sleep } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

let d

before(async () => {
  if (skip) return
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates })
})
after(async () => {
  await d?.stop()
})

const cgroupDirs = (id) => ['unified', 'memory', 'pids', 'cpu', 'cpuacct', 'freezer']
  .map((h) => `/sys/fs/cgroup/${h}/sbx/${id}`).filter((p) => existsSync(p))

function envelope(obj) {
  const json = Buffer.from(JSON.stringify(obj))
  const head = Buffer.alloc(5)
  head.writeUInt32BE(json.length, 1)
  return Buffer.concat([head, json])
}

function parseEnvelopes(buf) {
  const out = []
  for (let off = 0; off + 5 <= buf.length;) {
    const len = buf.readUInt32BE(off + 1)
    out.push({ flags: buf[off], msg: JSON.parse(buf.subarray(off + 5, off + 5 + len).toString()) })
    off += 5 + len
  }
  return out
}

async function create(body = {}) {
  const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', ...body } })
  assert.equal(r.status, 201, r.text)
  return r.json
}

const envd = (s, path, init = {}) => fetch(d.url + path, {
  ...init, duplex: 'half',
  headers: { 'E2b-Sandbox-Id': s.sandboxID, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': s.envdAccessToken, ...(init.headers || {}) },
})

const start = (s, cmd, extra = {}) => envd(s, '/process.Process/Start', {
  method: 'POST',
  headers: { 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1' },
  body: envelope({ process: { cmd: '/bin/bash', args: ['-l', '-c', cmd] }, stdin: false, ...extra }),
})

test('create, health, run a command, kill: nothing left behind', { skip }, async () => {
  const t0 = Date.now()
  const s = await create({ envVars: { GREETING: 'hi' } })
  const createMs = Date.now() - t0
  const dir = join(d.state, 'sandboxes', s.sandboxID)
  assert.ok(existsSync(join(dir, 'sandbox.json')))
  assert.ok(cgroupDirs(s.sandboxID).length > 0, 'no cgroup for the sandbox')

  const h = await envd(s, '/health')
  assert.equal(h.status, 204)

  const r = await start(s, 'echo $GREETING; id -u')
  assert.equal(r.status, 200)
  const frames = parseEnvelopes(Buffer.from(await r.arrayBuffer()))
  const out = frames.filter((f) => f.msg.event?.data?.stdout)
    .map((f) => Buffer.from(f.msg.event.data.stdout, 'base64').toString()).join('')
  assert.equal(out, 'hi\n1000\n')
  assert.equal(frames.at(-1).flags, 2)

  const pid = JSON.parse(readFileSync(join(dir, 'sandbox.json'), 'utf8')).pid
  assert.equal((await d.api('DELETE', `/sandboxes/${s.sandboxID}`)).status, 204)
  assert.ok(!existsSync(dir), 'sandbox dir left behind')
  assert.deepEqual(cgroupDirs(s.sandboxID), [])
  // sbxd is the agents' subreaper: not even a zombie is left
  for (let i = 0; i < 20 && existsSync(`/proc/${pid}`); i++) await sleep(10)
  assert.ok(!existsSync(`/proc/${pid}`), `agent ${pid} still there`)
  assert.equal((await envd(s, '/health')).status, 502)
  console.log(`# create took ${createMs} ms`)
})

test('process output streams before the process ends', { skip }, async () => {
  const s = await create()
  try {
    const t0 = Date.now()
    const r = await start(s, 'echo first; sleep 1.5; echo second')
    const reader = r.body.getReader()
    let buf = Buffer.alloc(0)
    let firstAt
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buf = Buffer.concat([buf, Buffer.from(value)])
      const text = parseEnvelopes(buf).filter((f) => f.msg.event?.data?.stdout)
        .map((f) => Buffer.from(f.msg.event.data.stdout, 'base64').toString()).join('')
      if (!firstAt && text.includes('first')) firstAt = Date.now() - t0
    }
    const total = Date.now() - t0
    assert.ok(firstAt !== undefined && firstAt < 1000, `first output after ${firstAt} ms`)
    assert.ok(total >= 1400, `stream ended after ${total} ms`)
  } finally {
    await d.api('DELETE', `/sandboxes/${s.sandboxID}`)
  }
})

test('files: upload 8 MB through /files and read it back', { skip }, async () => {
  const s = await create()
  try {
    const data = Buffer.alloc(8 << 20)
    for (let i = 0; i < data.length; i += 4096) data[i] = i & 255
    const up = await envd(s, '/files?path=%2Fhome%2Fuser%2Fbig.bin', {
      method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: data,
    })
    assert.ok(up.status < 300, `upload ${up.status} ${await up.text()}`)
    const down = await envd(s, '/files?path=%2Fhome%2Fuser%2Fbig.bin')
    assert.equal(down.status, 200)
    assert.ok(Buffer.from(await down.arrayBuffer()).equals(data))
  } finally {
    await d.api('DELETE', `/sandboxes/${s.sandboxID}`)
  }
})

test('timeout: a 2 s sandbox is killed and cleaned up by sbxd', { skip }, async () => {
  const s = await create({ timeout: 2 })
  const dir = join(d.state, 'sandboxes', s.sandboxID)
  let gone = false
  for (let i = 0; i < 100 && !gone; i++) {
    await sleep(100)
    gone = (await d.api('GET', `/sandboxes/${s.sandboxID}`)).status === 404
  }
  assert.ok(gone)
  for (let i = 0; i < 50 && existsSync(dir); i++) await sleep(100)
  assert.ok(!existsSync(dir))
  assert.deepEqual(cgroupDirs(s.sandboxID), [])
})

test('a restarted sbxd adopts a running sandbox: same token, processes still run', { skip }, async () => {
  const s = await create({ timeout: 600 })
  await start(s, 'sleep 1000 >/dev/null 2>&1 &').then((r) => r.arrayBuffer())
  const old = d
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old })
  const g = await d.api('GET', `/sandboxes/${s.sandboxID}`)
  assert.equal(g.status, 200, g.text)
  assert.equal(g.json.envdAccessToken, s.envdAccessToken)
  const r = await start(s, 'pgrep -x sleep >/dev/null && echo alive')
  const out = parseEnvelopes(Buffer.from(await r.arrayBuffer())).filter((f) => f.msg.event?.data?.stdout)
    .map((f) => Buffer.from(f.msg.event.data.stdout, 'base64').toString()).join('')
  assert.equal(out, 'alive\n')
  assert.equal((await d.api('DELETE', `/sandboxes/${s.sandboxID}`)).status, 204)
  assert.deepEqual(cgroupDirs(s.sandboxID), [])
})

test('concurrent creates get distinct uid ranges', { skip }, async () => {
  const all = await Promise.all([create(), create(), create()])
  try {
    const bases = all.map((s) => {
      const pid = JSON.parse(readFileSync(join(d.state, 'sandboxes', s.sandboxID, 'sandbox.json'), 'utf8')).pid
      return readFileSync(`/proc/${pid}/uid_map`, 'utf8').trim().split(/\s+/)[1]
    })
    assert.equal(new Set(bases).size, 3, `uid bases ${bases}`)
  } finally {
    for (const s of all) await d.api('DELETE', `/sandboxes/${s.sandboxID}`)
  }
  assert.deepEqual(readdirSync(join(d.state, 'sandboxes')), [])
})
