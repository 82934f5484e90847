// kill -9 of sbxd in the middle of load, then a restart on the same state dir: every running
// and paused sandbox is adopted with its token and timeout, snapshots and keys survive, and
// nothing is orphaned (dirs, cgroups, mounts, processes).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { startSbxd, realTemplates, REAL, sleep, envdStdout } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

let d
after(async () => { await d?.stop() })

const cgroupGone = (id) => !['unified', 'memory', 'pids', 'cpu', 'freezer']
  .some((h) => existsSync(`/sys/fs/cgroup/${h}/sbx/${id}`))
const mounted = (state) => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(state))

const run = (id, token, cmd) => envdStdout(d.url, id, token, cmd)

test('kill -9 mid-load, restart: running and paused sandboxes adopted, nothing lost or orphaned', { skip }, async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, args: ['--pool-size', '2', '--pool-templates', 'base'] })
  const boxes = []
  for (let i = 0; i < 6; i++) {
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: i === 5 ? 3 : 600, metadata: { i: String(i) } } })
    assert.equal(r.status, 201, r.text)
    boxes.push(r.json)
  }
  await run(boxes[0].sandboxID, boxes[0].envdAccessToken, 'echo survived > /tmp/mark; (sleep 1000 &) ; true')
  assert.equal((await d.api('POST', `/sandboxes/${boxes[1].sandboxID}/pause`, { body: {} })).status, 204)
  const snap = await d.api('POST', `/sandboxes/${boxes[2].sandboxID}/snapshots`, { body: { name: 'restart-snap' } })
  assert.equal(snap.status, 201, snap.text)

  // load in flight: creates racing the kill
  const inflight = Array.from({ length: 4 }, () => d.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } }).catch((e) => e))
  await sleep(15)
  d.proc.kill('SIGKILL')
  await new Promise((r) => d.proc.exitCode !== null || d.proc.signalCode ? r() : d.proc.once('exit', r))
  const settled = await Promise.all(inflight)
  const old = d
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old, args: ['--pool-size', '2', '--pool-templates', 'base'] })
  assert.equal(d.key, old.key, 'keys survive')

  const list = (await d.api('GET', '/v2/sandboxes')).json
  const byId = Object.fromEntries(list.map((s) => [s.sandboxID, s]))
  for (const b of boxes.slice(0, 5)) assert.ok(byId[b.sandboxID], `sandbox ${b.sandboxID} adopted`)
  assert.equal(byId[boxes[1].sandboxID].state, 'paused')
  assert.equal(byId[boxes[0].sandboxID].state, 'running')
  // creates that got their 201 before the kill are adopted too; the others left nothing
  for (const r of settled) if (r?.status === 201) assert.ok(byId[r.json.sandboxID], 'a 201 sandbox survives')
  // same token, same processes
  assert.equal(await run(boxes[0].sandboxID, boxes[0].envdAccessToken, 'cat /tmp/mark'), 'survived\n')
  // the short timeout keeps running across the restart: it expires
  for (let i = 0; i < 80 && (await d.api('GET', `/sandboxes/${boxes[5].sandboxID}`)).status === 200; i++) await sleep(100)
  assert.equal((await d.api('GET', `/sandboxes/${boxes[5].sandboxID}`)).status, 404, 'timeout continued')
  // the snapshot survives and starts
  const c = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'restart-snap' } })
  assert.equal(c.status, 201, c.text)
  // the paused one resumes
  const res = await d.api('POST', `/v2/sandboxes/${boxes[1].sandboxID}/connect`, { body: { timeout: 60 } })
  assert.equal(res.status, 201)

  // everything goes: kill all, stop (pool torn down), then nothing may be left
  const all = (await d.api('GET', '/v2/sandboxes')).json.map((s) => s.sandboxID)
  for (const id of all) assert.equal((await d.api('DELETE', `/sandboxes/${id}`)).status, 204)
  await d.api('DELETE', '/templates/restart-snap')
  const state = d.state
  const ids = [...all, ...settled.filter((r) => r?.status === 201).map((r) => r.json.sandboxID)]
  await d.stop({ keep: true })
  assert.deepEqual(readdirSync(`${state}/sandboxes`), [], 'no sandbox dirs')
  assert.deepEqual(mounted(state), [], 'no mounts')
  for (const id of ids) assert.ok(cgroupGone(id), `cgroups of ${id} gone`)
  const layers = readdirSync(`${state}/layers`).filter((l) => /^[0-9a-f]{64}$/.test(l))
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old, args: ['--pool-size', '0'] })
  const after2 = readdirSync(`${state}/layers`).filter((l) => /^[0-9a-f]{64}$/.test(l))
  // what stays is the templates' own layers, put in the store by the first snapshot of each
  // and kept while the template exists (so the next snapshot does not hash it again)
  const imported = readdirSync(`${state}/layers/.imports`).map((f) => readFileSync(`${state}/layers/.imports/${f}`, 'utf8').slice(0, 64))
  assert.deepEqual(after2.filter((l) => !imported.includes(l)), [], `unreferenced layers collected at start (had ${layers.length})`)
})

test('a sandbox persisted to disk while paused survives a restart and resumes with its files', { skip }, async () => {
  await d?.stop()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--pool-size', '0', '--persist-paused-after', '1'] })
  const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', envVars: { KEEP: 'env-kept' } } })
  const s = r.json
  await run(s.sandboxID, s.envdAccessToken, 'echo on-disk > /home/user/f; (sleep 1000 &); true')
  assert.equal((await d.api('POST', `/sandboxes/${s.sandboxID}/pause`, { body: {} })).status, 204)
  let rec
  for (let i = 0; i < 100; i++) {
    rec = JSON.parse(readFileSync(`${d.state}/sandboxes/${s.sandboxID}/sandbox.json`, 'utf8'))
    // The record says persisted first (the new layer is referenced before the processes go),
    // then pid 0 once they are gone.
    if (rec.persisted && rec.pid === 0) break
    await sleep(100)
  }
  assert.equal(rec.persisted, true, 'persisted within ~10 s (sampler period 5 s)')
  assert.equal(rec.pid, 0, 'no agent pid once persisted')
  assert.ok(cgroupGone(s.sandboxID), 'no processes, no cgroups while on disk')
  const old = d
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old, args: ['--pool-size', '0'] })
  const info = await d.api('GET', `/sandboxes/${s.sandboxID}`)
  assert.equal(info.json.state, 'paused')
  const c = await d.api('POST', `/v2/sandboxes/${s.sandboxID}/connect`, { body: { timeout: 60 } })
  assert.equal(c.status, 201, c.text)
  assert.equal(c.json.envdAccessToken, s.envdAccessToken, 'same token')
  assert.equal(await run(s.sandboxID, s.envdAccessToken, 'cat /home/user/f; echo $KEEP; pgrep -c sleep || true'), 'on-disk\nenv-kept\n0\n',
    'files kept, env kept, processes restarted')
})

test('SIGTERM: no new connections, the request in flight finishes, sandboxes keep running', { skip }, async () => {
  await d?.stop()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, args: ['--pool-size', '1', '--pool-templates', 'base'] })
  const s = (await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } })).json
  const slow = run(s.sandboxID, s.envdAccessToken, 'sleep 1.5; echo finished')
  await sleep(300)
  d.proc.kill('SIGTERM')
  await sleep(200)
  // a new connection is refused (kept-alive ones may still carry a request or two)
  const { connect } = await import('node:net')
  const refused = await new Promise((r) => {
    const c = connect(Number(new URL(d.url).port), '127.0.0.1')
    c.on('connect', () => { c.destroy(); r(false) })
    c.on('error', (e) => r(e.code === 'ECONNREFUSED'))
  })
  assert.ok(refused, 'not accepting any more')
  assert.equal(await slow, 'finished\n', 'the request in flight got its whole answer')
  await new Promise((r) => d.proc.exitCode !== null ? r() : d.proc.once('exit', r))
  assert.equal(d.proc.exitCode, 0)
  assert.match(d.stderr(), /state saved: 1 sandbox\(es\) keep running/)
  assert.match(d.stderr(), /removed \(pool shutdown\)/)
  const old = d
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old })
  assert.equal(await run(s.sandboxID, s.envdAccessToken, 'echo still'), 'still\n')
})
