// Thin storage (server/storage/README.md, "Thin storage"): what a sandbox's disk costs on the
// storage pool, beside the preallocated ext4 images where it helps to compare. Starts its own
// sbxd on a fresh state dir each time (SBX_BUILD, default build/). Prints figures, asserts none.
//
// Usage: node bench/storage-bench.mjs [PART] [N]
//   snapshot  a sandbox holding 512 MiB of written data: snapshot (synced, and just written),
//             fork of one, restore; the same snapshot with --disk image (a copy, for scale)
//   create    cold create-to-first-output, N one after another (default 50), pool and image;
//             from the warm pool (pool disks)
//   concurrent  N SDK creates at once (default 300), each then running a command
//   idle      N idle base sandboxes (default 5000) made through the SDK, 8 at a time, each
//             having run a command: time, memory and host disk per sandbox; then sbxd is
//             restarted on them (time to re-adopt all) and they are killed
//   all       snapshot, create, concurrent (the idle run is long: ask for it)
import { performance } from 'node:perf_hooks'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startSbxd, fmt, memAvailable, sleep, TOP } from './lifecycle-lib.mjs'

const { Sandbox } = await import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))
const PART = process.argv[2] || 'all'
const N = process.argv[3] ? Number(process.argv[3]) : undefined
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const opts = (d) => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key })
const since = (t) => performance.now() - t

async function timed(f) {
  const t = performance.now()
  const r = await f()
  return [since(t), r]
}

// The pool's used bytes, from /metrics.
async function poolUsed(d) {
  const m = (await d.api('GET', '/metrics')).text
  const x = m.match(/^sbx_storage_pool_bytes\{kind="used"\} (\d+)/m)
  return x ? Number(x[1]) : NaN
}

async function snapshotPart() {
  for (const disk of ['pool', 'image']) {
    const d = await startSbxd(['--pool-size', '0', ...(disk === 'pool' ? ['--storage-pool', '4G'] : ['--disk', 'image'])])
    // a 2 GiB disk: 512 MiB kept, and 512 MiB more written before each "just written" one
    const c0 = await d.api('POST', '/v2/sandboxes', { templateID: 'base', diskSizeMB: 2048, timeout: 3600 })
    const s = await Sandbox.connect(c0.json.sandboxID, opts(d))
    await s.commands.run('head -c 512M /dev/urandom > /home/user/data && sync', { timeoutMs: 300_000 })
    const snaps = [], forks = [], dirty = [], restores = []
    for (let i = 0; i < (disk === 'pool' ? 5 : 2); i++) {
      const [ms, r] = await timed(() => d.api('POST', `/sandboxes/${s.sandboxId}/snapshots`, {}))
      snaps.push(ms)
      const id = r.json.snapshotID
      if (disk === 'pool') {
        const [rm, c] = await timed(() => d.api('POST', '/v2/sandboxes', { templateID: id, timeout: 60 }))
        restores.push(rm)
        await d.api('DELETE', `/sandboxes/${c.json.sandboxID}`)
      }
      await d.api('DELETE', `/templates/${id}`)
    }
    console.log(`[${disk}] snapshot of a sandbox holding 512 MiB (synced): ${fmt(snaps)}; first ` +
      `${snaps[0].toFixed(1)} ms (the template's layers are put in the store once); loadavg ${load()}`)
    if (disk === 'pool') {
      for (let i = 0; i < 5; i++) {
        const [ms, r] = await timed(() => d.api('POST', `/sandboxes/${s.sandboxId}/fork`, { count: 1, timeout: 60 }))
        forks.push(ms)
        for (const x of r.json || []) if (x.sandbox) await d.api('DELETE', `/sandboxes/${x.sandbox.sandboxID}`)
      }
      // just written: the snapshot waits for btrfs to write the dirty pages of that subvolume
      for (let i = 0; i < 3; i++) {
        await s.commands.run(`head -c 512M /dev/urandom > /home/user/data${i}`, { timeoutMs: 300_000 })
        const [ms, r] = await timed(() => d.api('POST', `/sandboxes/${s.sandboxId}/snapshots`, {}))
        dirty.push(ms)
        await d.api('DELETE', `/templates/${r.json.snapshotID}`)
        await s.commands.run(`rm /home/user/data${i} && sync`)
      }
    }
    if (disk === 'pool') {
      console.log(`[${disk}] snapshot right after writing 512 MiB (dirty pages flushed first): ${fmt(dirty)}`)
      console.log(`[${disk}] fork (count 1, the API call: snapshot, create, delete): ${fmt(forks)}`)
      console.log(`[${disk}] restore (create from the snapshot): ${fmt(restores)}`)
    }
    console.log(`  loadavg ${load()}`)
    await d.stop()
  }
}

// Create, then the first byte of `echo x`'s output, through envd's process.Start (raw Connect).
async function createToOutput(d, template = 'base') {
  const t = performance.now()
  const c = await d.api('POST', '/v2/sandboxes', { templateID: template, timeout: 60 })
  if (c.status !== 201) throw new Error(`create ${c.status}: ${c.text}`)
  const body = Buffer.from(JSON.stringify({ process: { cmd: '/bin/sh', args: ['-c', 'echo x'] } }))
  const head = Buffer.alloc(5)
  head.writeUInt32BE(body.length, 1)
  const res = await fetch(`${d.url}/process.Process/Start`, {
    method: 'POST',
    headers: { 'E2b-Sandbox-Id': c.json.sandboxID, 'E2b-Sandbox-Port': '49983',
      'X-Access-Token': c.json.envdAccessToken, 'Content-Type': 'application/connect+json',
      'Connect-Protocol-Version': '1' },
    body: Buffer.concat([head, body]),
  })
  const reader = res.body.getReader()
  let first = null
  for (;;) {
    const { done, value } = await reader.read()
    if (first === null && value && value.length > 5) first = since(t)
    if (done) break
  }
  await d.api('DELETE', `/sandboxes/${c.json.sandboxID}`)
  return first
}

async function createPart(n = 50) {
  for (const [name, args] of [['pool', ['--pool-size', '0', '--storage-pool', '4G']],
    ['image', ['--pool-size', '0', '--disk', 'image']],
    ['pool, warm pool', ['--pool-size', '2', '--pool-templates', 'base', '--storage-pool', '4G']]]) {
    const d = await startSbxd(args)
    if (name.includes('warm')) await sleep(3000)
    for (let i = 0; i < 5; i++) await createToOutput(d) // warm-up
    const xs = []
    for (let i = 0; i < n; i++) {
      xs.push(await createToOutput(d))
      if (name.includes('warm')) await sleep(150) // the pool refills
    }
    console.log(`[${name}] create-to-first-output: ${fmt(xs)}; loadavg ${load()}`)
    await d.stop()
  }
}

async function concurrentPart(n = 300) {
  const d = await startSbxd(['--pool-size', '0', '--storage-pool', '8G'])
  const t = performance.now()
  const res = await Promise.allSettled(Array.from({ length: n }, async () => {
    const s = await Sandbox.create('base', { ...opts(d), timeoutMs: 600_000 })
    const r = await s.commands.run('echo ok')
    if (r.stdout !== 'ok\n') throw new Error(`ran: ${r.stdout}`)
    return s
  }))
  const ok = res.filter((r) => r.status === 'fulfilled').length
  const why = [...new Set(res.filter((r) => r.status === 'rejected').map((r) => String(r.reason?.message || r.reason).slice(0, 120)))]
  console.log(`${n} concurrent SDK creates + echo: ${ok} succeeded, ${n - ok} failed in ${(since(t) / 1000).toFixed(1)} s` +
    `${why.length ? `; failures: ${why.join(' | ')}` : ''}; loadavg ${load()}`)
  const stoppedMs = await d.stop()
  console.log(`  all killed and sbxd stopped in ${(stoppedMs / 1000).toFixed(1)} s`)
}

async function idlePart(limit = 5000) {
  const FLOOR = 3 * 1024 ** 3
  const d = await startSbxd(['--pool-size', '0', '--storage-pool', '16G'])
  const mem0 = memAvailable(), used0 = await poolUsed(d)
  const t0 = performance.now()
  const lat = []
  let made = 0, stop = null
  async function worker() {
    while (!stop && made < limit) {
      made++
      const t = performance.now()
      try {
        const s = await Sandbox.create('base', { ...opts(d), timeoutMs: 3_600_000 })
        await s.commands.run('echo hi')
      } catch (e) {
        stop = `create or command failed: ${String(e.message || e).slice(0, 200)}`
        console.log(d.log().split('\n').filter((l) => l.includes('"level":"error"')).slice(-3).join('\n'))
        made--
        break
      }
      lat.push(since(t))
      if (lat.length % 500 === 0)
        console.log(`${lat.length} sandboxes, MemAvailable ${(memAvailable() / 1024 ** 3).toFixed(2)} GiB, ` +
          `last 500 ${fmt(lat.slice(-500))}, ${(since(t0) / 1000).toFixed(0)} s, loadavg ${load()}`)
      if (memAvailable() < FLOOR) stop = 'MemAvailable under 3 GiB'
      if (since(t0) > 900_000) stop = '15 minutes passed'
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  const secs = since(t0) / 1000
  await sleep(31_000) // the pool's qgroups are as of its last commit (30 s)
  const n = lat.length
  const mem1 = memAvailable(), used1 = await poolUsed(d)
  const m = (await d.api('GET', '/metrics')).text
  const ref = Number(m.match(/^sbx_storage_pool_bytes\{kind="referenced"\} (\d+)/m)?.[1])
  const exc = Number(m.match(/^sbx_storage_pool_bytes\{kind="exclusive"\} (\d+)/m)?.[1])
  console.log(`disks: ${(ref / n / 1024).toFixed(1)} KiB referenced and ${(exc / n / 1024).toFixed(1)} KiB exclusive ` +
    `per sandbox (qgroups); the pool's used bytes (statvfs) moved by ${((used1 - used0) / 1048576).toFixed(1)} MiB`)
  console.log(`held ${n} idle base sandboxes, each having run a command (${stop || `the limit, ${limit}`}) in ` +
    `${secs.toFixed(1)} s; MemAvailable ${(mem0 / 1024 ** 3).toFixed(2)} → ${(mem1 / 1024 ** 3).toFixed(2)} GiB ` +
    `= ${((mem0 - mem1) / n / 1048576).toFixed(2)} MiB each; pool used ${((used1 - used0) / 1048576).toFixed(1)} MiB ` +
    `= ${((used1 - used0) / n / 1024).toFixed(1)} KiB each; loadavg ${load()}`)
  console.log(`create + echo: first 100 ${fmt(lat.slice(0, 100))}; last 100 ${fmt(lat.slice(-100))}`)
  // restart on them: SIGTERM (sandboxes keep running), start again, time until it answers
  // and has adopted them all
  d.proc.kill('SIGTERM')
  await new Promise((r) => d.proc.exitCode !== null ? r() : d.proc.once('exit', r))
  const tr = performance.now()
  const d2 = await d.restart()
  let listed = 0
  for (let page = '', more = true; more;) {
    const r = await d2.api('GET', `/v2/sandboxes?limit=100${page}`)
    listed += r.json.length
    const next = r.headers.get('x-next-token')
    more = !!next
    page = next ? `&nextToken=${encodeURIComponent(next)}` : ''
  }
  const adopted = d2.log().match(/adopted (\d+) sandbox/)
  console.log(`restart: answering with ${adopted ? adopted[1] : '?'} re-adopted (${listed} listed) ` +
    `${(since(tr) / 1000).toFixed(1)} s after the start; loadavg ${load()}`)
  const stoppedMs = await d2.stop()
  console.log(`all killed and sbxd stopped in ${(stoppedMs / 1000).toFixed(1)} s`)
}

if (PART === 'snapshot' || PART === 'all') await snapshotPart()
if (PART === 'create' || PART === 'all') await createPart(N)
if (PART === 'concurrent' || PART === 'all') await concurrentPart(N)
if (PART === 'idle') await idlePart(N)
