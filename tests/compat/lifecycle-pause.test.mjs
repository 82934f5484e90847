// Pause / resume / timeouts through the unmodified npm `e2b` SDK (2.51.0): the cgroup freezer
// keeps processes and memory, connect thaws, state shows in getInfo and list.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { api, sleep, waitFor, sandboxDirs, cgroupExists } from '../lib/env.mjs'

const made = []
after(async () => { for (const s of made) await s.kill().catch(() => {}) })

async function create(opts) {
  const s = await Sandbox.create(opts)
  made.push(s)
  return s
}

const frozen = (id) => readFileSync(`/sys/fs/cgroup/unified/sbx/${id}/cgroup.freeze`, 'utf8').trim() === '1'

test('pause freezes: state paused, no CPU, processes and memory intact after connect', async () => {
  const s = await create()
  // a background counter: it must not advance while paused, and must still exist after
  await s.files.write('/tmp/count.sh', 'i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.05; done\n')
  await s.commands.run('sh /tmp/count.sh', { background: true })
  await s.commands.run('echo kept-in-memory > /dev/shm/m')
  await sleep(300)
  assert.equal(await s.pause(), true)
  assert.ok(frozen(s.sandboxId), 'cgroup.freeze is 1')
  const info = await s.getInfo()
  assert.equal(info.state, 'paused')
  const st1 = readFileSync(`/sys/fs/cgroup/cpuacct/sbx/${s.sandboxId}/cpuacct.usage`, 'utf8')
  await sleep(400)
  const st2 = readFileSync(`/sys/fs/cgroup/cpuacct/sbx/${s.sandboxId}/cpuacct.usage`, 'utf8')
  assert.equal(st1, st2, 'no CPU used while frozen')

  // envd of a paused sandbox: 502 at once (its agent is frozen), not a hanging request
  const t0 = Date.now()
  const h = await fetch(`${process.env.E2B_SANDBOX_URL}/health`, { headers: { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49983' } })
  assert.equal(h.status, 502)
  assert.ok(Date.now() - t0 < 1000)
  assert.equal(await s.isRunning(), false)

  const c = await Sandbox.connect(s.sandboxId)
  assert.equal((await c.getInfo()).state, 'running')
  assert.equal(await c.isRunning(), true)
  assert.ok(!frozen(s.sandboxId))
  const n1 = Number((await c.commands.run('cat /tmp/n')).stdout)
  await sleep(300)
  const n2 = Number((await c.commands.run('cat /tmp/n')).stdout)
  assert.ok(n2 > n1, `the background loop runs again (${n1} → ${n2})`)
  assert.equal((await c.commands.run('cat /dev/shm/m')).stdout, 'kept-in-memory\n')
})

test('pause twice: second returns false (409); unknown id: 404 → NotFound', async () => {
  const s = await create()
  assert.equal(await s.pause(), true)
  assert.equal(await s.pause(), false)
  const r = await api('POST', `/sandboxes/${s.sandboxId}/pause`, { body: {} })
  assert.equal(r.status, 409)
  assert.equal(r.json.code, 409)
  await assert.rejects(Sandbox.pause('doesnotexist0000'), /not found/i)
  // connect on a paused sandbox answers 201 (resumed), on a running one 200
  const c1 = await api('POST', `/v2/sandboxes/${s.sandboxId}/connect`, { body: { timeout: 60 } })
  assert.equal(c1.status, 201)
  const c2 = await api('POST', `/v2/sandboxes/${s.sandboxId}/connect`, { body: { timeout: 60 } })
  assert.equal(c2.status, 200)
})

test('a paused sandbox does not time out; resume restarts its timeout', async () => {
  const s = await create({ timeoutMs: 2000 })
  await s.pause()
  await sleep(3000)
  assert.equal((await s.getInfo()).state, 'paused', 'still there after its endAt')
  const c = await Sandbox.connect(s.sandboxId, { timeoutMs: 2000 })
  const info = await c.getInfo()
  assert.equal(info.state, 'running')
  assert.ok(info.endAt.getTime() - Date.now() <= 2500)
  assert.ok(await waitFor(async () => !(await Sandbox.list().nextItems()).some((x) => x.sandboxId === s.sandboxId), 6000))
})

test('lifecycle onTimeout pause: the sandbox is paused at its timeout, not killed', async () => {
  const s = await create({ timeoutMs: 1500, lifecycle: { onTimeout: 'pause' } })
  await s.files.write('/home/user/keep.txt', 'still here')
  const info = await s.getInfo()
  assert.equal(info.state, 'running')
  const raw = await api('GET', `/sandboxes/${s.sandboxId}`)
  assert.equal(raw.json.lifecycle.onTimeout, 'pause')
  assert.ok(await waitFor(async () => (await s.getInfo()).state === 'paused', 5000))
  const c = await Sandbox.connect(s.sandboxId)
  assert.equal((await c.files.read('/home/user/keep.txt')), 'still here')
})

test('setTimeout shortens and extends; endAt follows', async () => {
  const s = await create()
  await s.setTimeout(1000)
  let info = await s.getInfo()
  assert.ok(info.endAt.getTime() - Date.now() < 2000)
  await s.setTimeout(120_000)
  info = await s.getInfo()
  assert.ok(info.endAt.getTime() - Date.now() > 100_000)
  const r = await api('POST', `/sandboxes/${s.sandboxId}/refreshes`, { body: { duration: 600 } })
  assert.equal(r.status, 204)
  info = await s.getInfo()
  assert.ok(info.endAt.getTime() - Date.now() > 500_000, 'refresh extends')
})

test('killing a paused sandbox removes everything', async () => {
  const s = await create()
  await s.pause()
  const id = s.sandboxId
  assert.equal(await s.kill(), true)
  assert.ok(await waitFor(() => !sandboxDirs().includes(id) && !cgroupExists(id), 5000))
  assert.ok(!readFileSync('/proc/self/mountinfo', 'utf8').includes(`/sandboxes/${id}/`))
})

test('autoResume: traffic to a paused sandbox resumes it, with its create timeout', async () => {
  const s = await create({ timeoutMs: 120_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  await s.files.write('/home/user/x', 'auto')
  assert.equal(await s.pause(), true)
  assert.equal((await s.getInfo()).state, 'paused')
  assert.equal(await s.files.read('/home/user/x'), 'auto') // this request resumed it
  const info = await s.getInfo()
  assert.equal(info.state, 'running')
  assert.ok(info.endAt.getTime() - Date.now() > 100_000)
  const raw = await api('GET', `/sandboxes/${s.sandboxId}`)
  assert.equal(raw.json.lifecycle.autoResume, true)
})

// A process that must not survive a filesystem-only pause, and the kernel's boot id.
const fresh = async (s) => {
  await s.commands.run('sleep 600', { background: true })
  await s.files.write('/home/user/files-only.txt', 'kept on disk')
  return (await s.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout
}
const afterFresh = async (c, bootBefore) => {
  assert.equal(await c.files.read('/home/user/files-only.txt'), 'kept on disk')
  const r = await c.commands.run('pgrep -x sleep || echo none; cat /proc/sys/kernel/random/boot_id')
  const [procs, boot] = r.stdout.trim().split('\n')
  assert.equal(procs, 'none', 'no process of before the pause is left')
  assert.notEqual(boot + '\n', bootBefore, 'a new boot_id')
}

test('pause({ keepMemory: false }): files kept, processes dropped; resume starts fresh with a new boot_id', async () => {
  const s = await create()
  const boot = await fresh(s)
  assert.equal(await s.pause({ keepMemory: false }), true)
  assert.equal((await s.getInfo()).state, 'paused')
  assert.ok(!cgroupExists(s.sandboxId), 'its processes and cgroup are gone while paused')
  assert.equal(await s.pause({ keepMemory: false }), false, 'already paused: 409')
  const c = await Sandbox.connect(s.sandboxId)
  assert.equal((await c.getInfo()).state, 'running')
  await afterFresh(c, boot)
})

test('onTimeout pause with keepMemory false (autoPauseMemory false): the timeout keeps files only', async () => {
  const s = await create({ timeoutMs: 3000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } })
  const boot = await fresh(s)
  assert.ok(await waitFor(async () => (await s.getInfo()).state === 'paused' && !cgroupExists(s.sandboxId), 10000))
  const c = await Sandbox.connect(s.sandboxId)
  await afterFresh(c, boot)
  // the SDK refuses autoResume with keepMemory false; so does the API
  const r = await api('POST', '/v2/sandboxes', { body: { templateID: 'base', autoPause: true, autoPauseMemory: false, autoResume: { enabled: true } } })
  assert.equal(r.status, 400, r.text)
  assert.match(r.json.message, /autoResume cannot be used with autoPauseMemory false/)
})

test('connect with onResume "reboot": a sandbox paused with its memory starts fresh on its files', async () => {
  const s = await create()
  const boot = await fresh(s)
  assert.equal(await s.pause(), true)
  const c = await Sandbox.connect(s.sandboxId, { onResume: 'reboot' })
  await afterFresh(c, boot)
})

test('setTimeout(0) expires the sandbox now, as on E2B', async () => {
  const s = await create()
  await s.setTimeout(0)
  assert.ok(await waitFor(async () => !(await s.isRunning().catch(() => false)) && !cgroupExists(s.sandboxId), 5000))
  const r = await api('GET', `/sandboxes/${s.sandboxId}`)
  assert.equal(r.status, 404)
})
