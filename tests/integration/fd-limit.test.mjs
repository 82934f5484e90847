// sbxd out of file descriptors (its RLIMIT_NOFILE reached: about four per sandbox, so a host
// whose limit is low meets it long before memory): new creates are refused with an error, and
// every sandbox already running keeps running. A create that failed before it had an id once
// tore down "the sandbox with no id", whose cgroup is the parent of all sandboxes.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, rmdirSync, existsSync } from 'node:fs'
import { startSbxd, realTemplates, REAL, sleep } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false
const PARENT = `sbx-fdlimit-${process.pid}`
const NOFILE = 260
let d
after(async () => {
  await d?.stop()
  for (const h of readdirSync('/sys/fs/cgroup')) {
    try { rmdirSync(`/sys/fs/cgroup/${h}/${PARENT}`) } catch {}
  }
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
