// What sandboxes may take from the host (server/README.md, "Limits"):
//  - a create above the operator's per-sandbox maxima is a 400 naming the limit;
//  - all sandboxes together live under a parent cgroup with memory and task limits, so fork
//    bombs in several sandboxes, each within its own pids.max, cannot take the host's tasks;
//  - fs.file-max is raised: open files are bounded by each sandbox's memory limit.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, rmdirSync, existsSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, REAL, sleep } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

const read = (p) => readFileSync(p, 'utf8').trim()
// A parent cgroup of this test's own (--cgroup-parent), so that no other sbxd on the host (the
// suites' own, or another run's) shares or resets its limits.
const PARENT = `sbx-limits-${process.pid}`
let d
after(async () => {
  await d?.stop()
  for (const h of readdirSync('/sys/fs/cgroup')) {
    try { rmdirSync(`/sys/fs/cgroup/${h}/${PARENT}`) } catch {}
  }
  try { rmdirSync(`/sys/fs/cgroup/${PARENT}`) } catch {}
})

test('limits: per-sandbox maxima are 400s naming the limit; the parent cgroup caps all sandboxes', { skip, timeout: 180_000 }, async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--max-sandbox-cpus', '2', '--max-sandbox-memory', '2048', '--max-sandbox-disk', '4096', '--total-pids', '300', '--cgroup-parent', PARENT] })
  const create = (body) => d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', ...body } })
  for (const [body, re] of [
    [{ memoryMB: 256 * 1024 }, /memoryMB 262144 is above this server's limit of 2048 MiB per sandbox/],
    [{ cpuCount: 64 }, /cpuCount 64 is above this server's limit of 2 CPUs per sandbox/],
    [{ diskSizeMB: 256 * 1024 }, /diskSizeMB 262144 is above this server's limit of 4096 MiB per sandbox/],
  ]) {
    const r = await create(body)
    assert.equal(r.status, 400, r.text)
    assert.match(r.json.message, re)
  }
  // within the maxima: fine
  const ok = await create({ memoryMB: 2048, cpuCount: 2, timeout: 120 })
  assert.equal(ok.status, 201, ok.text)

  // the parent cgroup: tasks capped at --total-pids, memory at the derived total
  const pidsDir = [`/sys/fs/cgroup/pids/${PARENT}`, `/sys/fs/cgroup/${PARENT}`].find((p) => existsSync(`${p}/pids.max`))
  assert.ok(pidsDir, 'a pids hierarchy')
  assert.equal(read(`${pidsDir}/pids.max`), '300')
  const memDir = [`/sys/fs/cgroup/memory/${PARENT}`, `/sys/fs/cgroup/${PARENT}`].find((p) => existsSync(p))
  const memLimit = Number(read(existsSync(`${memDir}/memory.limit_in_bytes`) ? `${memDir}/memory.limit_in_bytes` : `${memDir}/memory.max`))
  const hostMem = Number(read('/proc/meminfo').match(/MemTotal:\s+(\d+)/)[1]) * 1024
  assert.ok(memLimit < hostMem && memLimit >= hostMem * 0.8, `sbx memory limit ${memLimit} of ${hostMem}`)

  // two fork bombs (each sandbox allows 1024 tasks) together stay under 300
  const opts = { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key }
  const a = await Sandbox.connect(ok.json.sandboxID, opts)
  const b = await Sandbox.create('base', { ...opts, timeoutMs: 120_000 })
  // both commands start before either forks (a bomb that filled the cap first would leave the
  // other sandbox no task to start its command with)
  const bomb = 'sleep 2; for i in $(seq 400); do sleep 8 & done 2>/dev/null; wait'
  await Promise.all([a, b].map((s) => s.commands.run(bomb, { background: true })))
  let peak = 0
  for (let i = 0; i < 60; i++) {
    peak = Math.max(peak, Number(read(`${pidsDir}/pids.current`)))
    await sleep(100)
  }
  assert.ok(peak <= 300, `all sandboxes together held ${peak} tasks`)
  assert.ok(peak >= 250, `the bombs ran into the cap (${peak})`)
  // the host forks fine meanwhile (this test runs), and once the bombs are over both sandboxes
  // answer again
  await sleep(9000)
  for (const s of [a, b]) assert.equal((await s.commands.run('echo alive')).stdout, 'alive\n')
  await b.kill()

  // open files: the kernel-wide count is no longer a shared limit
  assert.ok(BigInt(read('/proc/sys/fs/file-max')) >= 2n ** 62n, 'fs.file-max raised')
})
