// The sandbox list's order is the order of the creates, also for creates within one second, and
// a restarted sbxd keeps it (the record holds startedAt below the second). sbxd with
// fixtures/fake-jailer.py: creates are quick, so several share a second.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { startSbxd, fakeTemplate, FIXTURES } from './sbxd.mjs'

let d
after(async () => { await d?.stop() })

const ids = (r) => r.json.map((s) => s.sandboxID)

test('list order follows the creates, within a second too, and survives a restart', async () => {
  const jailer = join(FIXTURES, 'fake-jailer.py')
  d = await startSbxd({ jailer, agent: '/bin/true', prepare: (s) => fakeTemplate(s) })
  const made = []
  for (let i = 0; i < 8; i++) {
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
    assert.equal(r.status, 201, r.text)
    made.push(r.json.sandboxID)
  }
  for (const s of (await d.api('GET', '/v2/sandboxes')).json) {
    assert.match(s.startedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'the wire format is unchanged')
  }
  const check = async (api) => {
    assert.deepEqual(ids(await api('GET', '/v2/sandboxes')), [...made].reverse())
    assert.deepEqual(ids(await api('GET', '/v2/sandboxes?order=asc')), made)
    // one per page, both ways
    for (const [order, want] of [['desc', [...made].reverse()], ['asc', made]]) {
      const got = []
      let tok = ''
      do {
        const r = await api('GET', `/v2/sandboxes?limit=1&order=${order}${tok ? `&nextToken=${encodeURIComponent(tok)}` : ''}`)
        assert.equal(r.status, 200, r.text)
        got.push(...ids(r))
        tok = r.headers.get('x-next-token')
      } while (tok)
      assert.deepEqual(got, want, order)
    }
  }
  await check(d.api)
  await d.stop({ keep: true })
  d = await startSbxd({ jailer, agent: '/bin/true', reuse: d })
  await check(d.api)
})
