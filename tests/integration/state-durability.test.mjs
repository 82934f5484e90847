// What sbxd acknowledges survives a restart, and a restart restores what the records say:
//  - with the state disk full, a change that cannot be recorded is refused (507) and left
//    undone, never acknowledged and then lost (timeout, refresh, pause), while the sandbox's
//    own writes still land on its disk (the storage pool was preallocated) and are there after
//    the restart;
//  - a sandbox left frozen by an sbxd that died mid-snapshot is running again after a restart;
//  - --delete-paused-after removes sandboxes paused for longer than the operator keeps them.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL, sleep, envdStdout, fillUp } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

let d
let mnt
after(async () => {
  await d?.stop()
  if (mnt) {
    try { execFileSync('umount', ['-l', mnt]) } catch {}
    rmSync(mnt, { recursive: true, force: true })
  }
})

const run = (id, token, cmd) => envdStdout(d.url, id, token, cmd, { timeoutMs: 10000 })

test('state disk full: timeout, refresh and pause are refused with 507 and stay undone across a restart; the sandbox\'s own writes still land', { skip }, async () => {
  // A small file system of its own for the state dir, holding the storage pool (preallocated
  // in it when sbxd starts) and the records.
  // (a tmpfs: ext4 keeps a few blocks back after ENOSPC, enough for small records)
  mnt = mkdtempSync(join(tmpdir(), 'sbxd-full-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=384m,mode=0700', 'tmpfs', mnt])
  const state = join(mnt, 'state')
  mkdirSync(state)
  realTemplates(state, { host: true }) // a small state file system
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: { dir: mnt }, args: ['--storage-pool', '256M'] })
  const c = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
  assert.equal(c.status, 201, c.text)
  const s = c.json
  const before = (await d.api('GET', `/sandboxes/${s.sandboxID}`)).json.endAt

  const filler = fillUp(mnt)
  // the records cannot be written now, but the sandbox's disk is the pool's: its writes land
  assert.equal(await run(s.sandboxID, s.envdAccessToken,
    'head -c 16M /dev/urandom > /home/user/w && sync && sha256sum < /home/user/w > /home/user/w.sum && ' +
    'dd if=/home/user/w iflag=direct bs=1M 2>/dev/null | sha256sum | cmp - /home/user/w.sum && echo landed'), 'landed\n')
  const t = await d.api('POST', `/sandboxes/${s.sandboxID}/timeout`, { body: { timeout: 30 } })
  assert.equal(t.status, 507, t.text)
  assert.match(t.json.message, /could not be recorded/)
  const r = await d.api('POST', `/sandboxes/${s.sandboxID}/refreshes`, { body: { duration: 3600 } })
  assert.equal(r.status, 507, r.text)
  assert.equal((await d.api('GET', `/sandboxes/${s.sandboxID}`)).json.endAt, before, 'endAt unchanged')
  const p = await d.api('POST', `/sandboxes/${s.sandboxID}/pause`, { body: {} })
  assert.equal(p.status, 507, p.text)
  const info = (await d.api('GET', `/sandboxes/${s.sandboxID}`)).json
  assert.equal(info.state, 'running', 'a pause that could not be recorded is undone')
  assert.equal(await run(s.sandboxID, s.envdAccessToken, 'echo alive'), 'alive\n')
  assert.match(d.stderr(), /saving record/)

  // Room again: the same calls succeed; a restart restores exactly what was acknowledged.
  rmSync(filler)
  assert.equal((await d.api('POST', `/sandboxes/${s.sandboxID}/timeout`, { body: { timeout: 500 } })).status, 204)
  const acked = (await d.api('GET', `/sandboxes/${s.sandboxID}`)).json.endAt
  assert.notEqual(acked, before)
  fillUp(mnt)
  assert.equal((await d.api('POST', `/sandboxes/${s.sandboxID}/timeout`, { body: { timeout: 30 } })).status, 507)
  rmSync(filler)
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: { dir: mnt }, args: ['--storage-pool', '256M'] })
  const again = (await d.api('GET', `/sandboxes/${s.sandboxID}`)).json
  assert.equal(again.endAt, acked, 'the acknowledged endAt, not the refused one')
  assert.equal(again.state, 'running')
  assert.equal(await run(s.sandboxID, s.envdAccessToken, 'sha256sum < /home/user/w | cmp - /home/user/w.sum && echo kept'), 'kept\n')
  assert.equal((await d.api('DELETE', `/sandboxes/${s.sandboxID}`)).status, 204)
  await d.stop({ keep: true }) // the dir is a mount point: unmounted below
  d = undefined
  assert.ok(!readFileSync('/proc/self/mountinfo', 'utf8').includes(`${state}/pool `), 'the pool went with the last sandbox')
  execFileSync('umount', [mnt])
  rmSync(mnt, { recursive: true, force: true })
  mnt = undefined
})

test('an sbxd that died with a sandbox frozen (mid-snapshot) restores it running', { skip }, async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates })
  const c = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
  assert.equal(c.status, 201, c.text)
  const s = c.json
  const p = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
  const paused = p.json
  assert.equal((await d.api('POST', `/sandboxes/${paused.sandboxID}/pause`, { body: {} })).status, 204)
  d.proc.kill('SIGKILL')
  await new Promise((r) => d.proc.exitCode !== null || d.proc.signalCode ? r() : d.proc.once('exit', r))
  // What a snapshot does first, and what a dead sbxd leaves: the running one frozen; and the
  // paused one thawed, as if sbxd died in the middle of resuming it.
  writeFileSync(`/sys/fs/cgroup/unified/sbx/${s.sandboxID}/cgroup.freeze`, '1')
  writeFileSync(`/sys/fs/cgroup/unified/sbx/${paused.sandboxID}/cgroup.freeze`, '0')
  const old = d
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old })
  const info = (await d.api('GET', `/sandboxes/${s.sandboxID}`)).json
  assert.equal(info.state, 'running', 'recorded running: running')
  assert.equal(await run(s.sandboxID, s.envdAccessToken, 'echo thawed'), 'thawed\n')
  assert.equal((await d.api('GET', `/sandboxes/${paused.sandboxID}`)).json.state, 'paused', 'recorded paused: paused')
  const frozen = execFileSync('cat', [`/sys/fs/cgroup/unified/sbx/${paused.sandboxID}/cgroup.freeze`]).toString().trim()
  assert.equal(frozen, '1', 'frozen again, as its record says')
  await d.stop()
  d = undefined
})

test('--delete-paused-after removes a sandbox paused for longer, and says why', { skip }, async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, args: ['--delete-paused-after', '2'] })
  const a = (await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })).json
  const b = (await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })).json
  assert.equal((await d.api('POST', `/sandboxes/${a.sandboxID}/pause`, { body: {} })).status, 204)
  let gone
  for (let i = 0; i < 300 && !gone; i++) {
    await sleep(100)
    const g = await d.api('GET', `/sandboxes/${a.sandboxID}`)
    if (g.status === 404) gone = g
  }
  assert.ok(gone, 'removed within 30 s (2 s + a sampler period of 5 s, on a loaded machine)')
  assert.match(gone.json.message, /paused for longer/)
  // the registry forgets it first, then the teardown removes its dir
  for (let i = 0; i < 100 && existsSync(join(d.state, 'sandboxes', a.sandboxID)); i++) await sleep(50)
  assert.ok(!existsSync(join(d.state, 'sandboxes', a.sandboxID)), 'its dir is gone')
  assert.equal((await d.api('GET', `/sandboxes/${b.sandboxID}`)).json.state, 'running', 'a running one stays')
})
