// sbxd's file descriptors: a running sandbox costs it two (its agent's pidfd and the read end
// of its log FIFO), so RLIMIT_NOFILE / 2 sandboxes fit, and none is left behind when sandboxes
// go. Out of descriptors (the limit reached), new creates are refused with an error, and every
// sandbox already running keeps running. A create that failed before it had an id once tore
// down "the sandbox with no id", whose cgroup is the parent of all sandboxes.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readlinkSync, rmdirSync, existsSync } from 'node:fs'
import { startSbxd, realTemplates, REAL, sleep, envdStdout } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false
const PARENT = `sbx-fdlimit-${process.pid}`
const NOFILE = 260
let d, d2
after(async () => {
  await d?.stop()
  await d2?.stop()
  for (const h of readdirSync('/sys/fs/cgroup')) {
    for (const p of [PARENT, `${PARENT}-budget`])
      try { rmdirSync(`/sys/fs/cgroup/${h}/${p}`) } catch {}
  }
})

// sbxd's open descriptors by kind (sockets, pidfds, FIFOs, files), sandbox ids taken out
function descriptors(pid) {
  const kinds = {}
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let l
    try { l = readlinkSync(`/proc/${pid}/fd/${fd}`) } catch { continue }
    l = l.replace(/socket:\[\d+\]/, 'socket').replace(/sandboxes\/[^/]+/, 'sandboxes/ID')
    kinds[l] = (kinds[l] || 0) + 1
  }
  return kinds
}
const total = (kinds) => Object.values(kinds).reduce((a, b) => a + b, 0)

test('a running sandbox costs sbxd two descriptors; none stay after it is gone', { skip, timeout: 300_000 }, async () => {
  const N = 16
  d2 = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--cgroup-parent', `${PARENT}-budget`] })
  const made = []
  // warm up: one sandbox made and killed, so lazily opened daemon-wide descriptors are in the base
  const w = await d2.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
  assert.equal(w.status, 201, w.text)
  assert.equal(await envdStdout(d2.url, w.json.sandboxID, w.json.envdAccessToken, 'echo hi'), 'hi\n')
  assert.equal((await d2.api('DELETE', `/sandboxes/${w.json.sandboxID}`)).status, 204)
  await sleep(500)
  const base = descriptors(d2.proc.pid)
  for (let i = 0; i < N; i++) {
    const r = await d2.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
    assert.equal(r.status, 201, r.text)
    made.push(r.json.sandboxID)
    // each has run a command: its agent connection was opened and used
    assert.equal(await envdStdout(d2.url, r.json.sandboxID, r.json.envdAccessToken, 'echo hi'), 'hi\n')
  }
  await sleep(500)
  const running = descriptors(d2.proc.pid)
  // client connections to sbxd (keep-alive) may add a few sockets whatever the count
  assert.ok(total(running) - total(base) <= 2 * N + 8,
    `${total(running) - total(base)} more descriptors for ${N} sandboxes: ${JSON.stringify(running)}`)
  for (const id of made) assert.equal((await d2.api('DELETE', `/sandboxes/${id}`)).status, 204)
  await sleep(1000)
  const after = descriptors(d2.proc.pid)
  assert.ok(total(after) - total(base) <= 8, `left after the kills: ${JSON.stringify(after)} (base ${JSON.stringify(base)})`)
  assert.ok(!Object.keys(after).some((k) => k.includes('sandboxes/ID') || (k.includes('pidfd') && after[k] > (base[k] || 0))),
    `a sandbox's descriptor stayed open: ${JSON.stringify(after)}`)
  await d2.stop()
  d2 = null
})

test('out of file descriptors: creates are refused, running sandboxes live on', { skip, timeout: 300_000 }, async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    wrap: ['prlimit', `--nofile=${NOFILE}:${NOFILE}`], args: ['--cgroup-parent', PARENT] })
  const made = []
  let refused = null
  for (let i = 0; i < NOFILE && !refused; i++) {
    let r
    try {
      r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
    } catch (e) {
      refused = `connection: ${e.cause?.code || e.message}` // accept(2) itself hit EMFILE
      break
    }
    if (r.status === 201) made.push(r.json.sandboxID)
    else refused = `${r.status} ${r.text}`
  }
  assert.ok(refused, `sbxd never ran out of descriptors in ${made.length} creates`)
  assert.ok(made.length >= 10, `only ${made.length} sandboxes before the refusal: ${refused}`)
  if (!refused.startsWith('connection'))
    assert.match(refused, /^5\d\d \{"code":5\d\d,"message":".+"\}$/, 'a refusal in the API\'s shape')
  // at the limit, creates racing each other fail at any step (a uid slot's host-wide claim,
  // the jail spec, the jailer...): none may take a running sandbox with it
  for (let round = 0; round < 15; round++) {
    const rs = await Promise.all(Array.from({ length: 8 }, () =>
      d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } }).catch(() => null)))
    for (const r of rs) if (r?.status === 201) made.push(r.json.sandboxID)
  }
  await sleep(2000)
  // every sandbox made before is still there: its cgroup, its agent, the list
  const hier = existsSync(`/sys/fs/cgroup/unified/${PARENT}`) ? `/sys/fs/cgroup/unified/${PARENT}` : `/sys/fs/cgroup/${PARENT}`
  const alive = made.filter((id) => existsSync(`${hier}/${id}`))
  assert.deepEqual(alive, made, `sandboxes lost after the refusal (${refused})`)
  let listed
  for (let i = 0; i < 20 && !listed; i++) {
    try { listed = await d.api('GET', '/v2/sandboxes?limit=100') } catch { await sleep(250) }
  }
  assert.equal(listed.status, 200)
  const ids = new Set(listed.json.map((s) => s.sandboxID))
  assert.ok(made.slice(0, 100).every((id) => ids.has(id) || made.length > 100), 'listed')
  // freeing a few makes room again
  for (const id of made.splice(0, 5)) assert.equal((await d.api('DELETE', `/sandboxes/${id}`)).status, 204)
  const again = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
  assert.equal(again.status, 201, again.text)
  made.push(again.json.sandboxID)
  for (const id of made) await d.api('DELETE', `/sandboxes/${id}`)
})
