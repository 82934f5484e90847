// Load and limits: 200 concurrent sandboxes each running a command (bounded, cleaned up), and
// 500 concurrent SDK creates queued past --max-creates, and the limits filled to see 429 with
// Retry-After.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, REAL, sleep, envdStdout } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

let d
after(async () => { await d?.stop() })

const run = (s, cmd) => envdStdout(d.url, s.sandboxID, s.envdAccessToken, cmd)

// n tasks with at most k in flight; the first failure stops every worker
async function pool(n, k, fn) {
  const out = new Array(n)
  let next = 0
  let failed = false
  await Promise.all(Array.from({ length: k }, async () => {
    while (next < n && !failed) {
      const i = next++
      try { out[i] = await fn(i) } catch (e) { failed = true; throw e }
    }
  }))
  return out
}

test('200 sandboxes at once, each runs a command; all cleaned up', { skip, timeout: 120_000 }, async (t) => {
  // 200 default 1 GiB disks are more than this machine's disk holds preallocated: the test is
  // about concurrency, so its disks are sparse (--disk-overcommit; tests/integration/
  // state-disk.test.mjs covers admission)
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--pool-size', '4', '--pool-templates', 'base', '--max-creates', '8', '--disk-overcommit', '100'] })
  const N = 200
  const t0 = Date.now()
  // creates bounded by --max-creates: the excess waits its turn (a 429 + Retry-After only
  // after --create-wait, which this test would retry)
  let retried = 0
  const boxes = await pool(N, 32, async (i) => {
    for (;;) {
      const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', metadata: { i: String(i) } } })
      if (r.status === 201) return r.json
      assert.equal(r.status, 429, r.text)
      assert.equal(r.headers.get('retry-after'), '1')
      retried++
      await sleep(50 + Math.random() * 100)
    }
  })
  const created = Date.now() - t0
  assert.equal(new Set(boxes.map((b) => b.sandboxID)).size, N)
  assert.match((await d.api('GET', '/v2/sandboxes?limit=100')).headers.get('x-next-token'), /^[A-Za-z0-9_-]+=*$/)
  // 200 alive together, each runs a command (100 requests in flight: sbxd allows 128
  // connections per client address)
  const outs = await pool(N, 100, (i) => run(boxes[i], `sleep 0.2; echo $((${i} * 2))`))
  outs.forEach((o, i) => assert.equal(o, `${i * 2}\n`))
  console.log(`# 200 creates in ${created} ms (${retried} 429 retries), commands in ${Date.now() - t0 - created} ms`)
  await pool(N, 16, (i) => d.api('DELETE', `/sandboxes/${boxes[i].sandboxID}`))
  assert.deepEqual((await d.api('GET', '/v2/sandboxes')).json, [])
  const dirs = readdirSync(`${d.state}/sandboxes`)
  assert.ok(dirs.length <= 4, `only pool members remain (${dirs.length})`)
})

test('limits: --max-sandboxes gives 429 with Retry-After; a kill makes room', { skip }, async () => {
  await d?.stop()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--pool-size', '0', '--max-sandboxes', '3'] })
  const ok = []
  for (let i = 0; i < 3; i++) {
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } })
    assert.equal(r.status, 201)
    ok.push(r.json.sandboxID)
  }
  const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } })
  assert.equal(r.status, 429)
  assert.equal(r.json.code, 429)
  assert.match(r.json.message, /too many sandboxes/)
  assert.equal(r.headers.get('retry-after'), '1')
  // paused sandboxes count too
  await d.api('POST', `/sandboxes/${ok[0]}/pause`, { body: {} })
  assert.equal((await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } })).status, 429)
  await d.api('DELETE', `/sandboxes/${ok[0]}`)
  const again = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } })
  assert.equal(again.status, 201)
  const prom = await d.api('GET', '/metrics')
  assert.match(prom.text, /^sbx_rejected_total [1-9]\d*$/m)
})

test('500 concurrent SDK creates all succeed: past --max-creates they wait their turn', { skip, timeout: 300_000 }, async (t) => {
  await d?.stop()
  // sparse disks: 500 preallocated 1 GiB disks are more than this machine's disk
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--pool-size', '0', '--max-creates', '16', '--disk-overcommit', '1000'] })
  const opts = { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key, requestTimeoutMs: 240_000 }
  const t0 = Date.now()
  const results = await Promise.allSettled(Array.from({ length: 500 }, () => Sandbox.create('base', opts)))
  const failed = results.filter((r) => r.status === 'rejected')
  t.diagnostic(`500 concurrent creates in ${Date.now() - t0} ms, ${failed.length} failed`)
  const boxes = results.filter((r) => r.status === 'fulfilled').map((r) => r.value)
  await pool(boxes.length, 32, (i) => d.api('DELETE', `/sandboxes/${boxes[i].sandboxId}`))
  assert.equal(failed.length, 0, failed.slice(0, 3).map((f) => String(f.reason)).join('; '))
  assert.equal(new Set(boxes.map((b) => b.sandboxId)).size, 500)
})

test('limits: --max-creates with --create-wait 0 refuses concurrent cold creates past it with 429', { skip }, async () => {
  await d?.stop()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--pool-size', '0', '--max-creates', '1', '--create-wait', '0'] })
  const rs = await Promise.all(Array.from({ length: 6 }, () => d.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } })))
  const codes = rs.map((r) => r.status)
  assert.ok(codes.includes(201), codes.join())
  assert.ok(codes.includes(429), codes.join())
  for (const r of rs) {
    if (r.status === 429) assert.match(r.json.message, /creations in progress/)
    else await d.api('DELETE', `/sandboxes/${r.json.sandboxID}`)
  }
})

test('an OOM-killed sandbox is reported as such, not a silent 404', { skip }, async () => {
  const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', memoryMB: 64 } })
  assert.equal(r.status, 201, r.text)
  const s = r.json
  // fill the tmpfs-backed disk past the memory limit: the cgroup OOM-kills the whole sandbox
  await run(s, 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=200 2>/dev/null; echo done').catch(() => {})
  await run(s, 'python3 -c "a = bytearray(300 << 20)" 2>/dev/null; echo done').catch(() => {})
  let prom
  for (let i = 0; i < 80; i++) { // the sampler reads the OOM counter every 5 s
    prom = await d.api('GET', '/metrics')
    if (/^sbx_oom_kills_total [1-9]/m.test(prom.text)) break
    await sleep(100)
  }
  assert.match(prom.text, /^sbx_oom_kills_total [1-9]\d*$/m)
  const info = await d.api('GET', `/sandboxes/${s.sandboxID}`)
  if (info.status === 404) assert.match(info.json.message, /out of memory/)
  else await d.api('DELETE', `/sandboxes/${s.sandboxID}`)
})

test('image disks: each size its own ext4 file system; at most 16 pristine images kept', { skip, timeout: 120_000 }, async () => {
  await d?.stop()
  // the fallback where the kernel has no btrfs (storage/disk-image.h)
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, args: ['--pool-size', '0', '--disk', 'image'] })
  // 20 distinct sizes: 16 are cached as pristine images, the rest formatted per sandbox
  const sizes = Array.from({ length: 20 }, (_, i) => 32 + i)
  const boxes = await pool(sizes.length, 4, async (i) => {
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: sizes[i] } })
    assert.equal(r.status, 201, r.text)
    return r.json
  })
  const images = readdirSync(`${d.state}/disk-images`).filter((n) => n.startsWith('ext4-'))
  assert.ok(images.length <= 16, images.join())
  assert.ok(images.includes(`ext4-${1024 * 1024 * 1024}`)) // the default size, made at start
  const outs = await pool(boxes.length, 4, (i) => run(boxes[i], "df -k / | awk 'NR==2 {print $2}'; echo x > /home/user/f && cat /home/user/f"))
  outs.forEach((o, i) => {
    const [kb, x] = o.trim().split('\n')
    // ext4 keeps a few % for its own metadata
    assert.ok(Number(kb) > sizes[i] * 1024 * 0.85 && Number(kb) <= sizes[i] * 1024, `${sizes[i]} MiB: ${o}`)
    assert.equal(x, 'x')
  })
  await pool(boxes.length, 8, (i) => d.api('DELETE', `/sandboxes/${boxes[i].sandboxID}`))
  assert.deepEqual(readdirSync(`${d.state}/sandboxes`), [])
})
