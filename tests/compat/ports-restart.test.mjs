// A private sandbox's ports across an sbxd restart: sandbox.json keeps the trafficAccessToken
// and maskRequestHost, so the adopted sandbox's ports still refuse a request without the token
// (server/README.md "Sandbox ports"; lifecycle/adopt.c refuses a record with a broken token
// rather than open its ports). Starts its own sbxd twice on one state dir.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, REAL } from '../integration/sbxd.mjs'
import { request, json, startServer } from './ports-lib.mjs'

let d
after(async () => {
  await d?.stop()
})

test('an adopted private sandbox still needs its traffic token; the mask still applies', async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates })
  const opts = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key })
  const sbx = await Sandbox.create({ ...opts(), network: { allowPublicTraffic: false, maskRequestHost: 'masked:${PORT}' } })
  const tok = { 'e2b-traffic-access-token': sbx.trafficAccessToken }
  await startServer(sbx, 8000, { headers: tok })

  const old = d
  await old.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old })
  // the new sbxd listens elsewhere: the same sandbox under the new domain
  const s2 = await Sandbox.connect(sbx.sandboxId, opts())
  const url = `http://${s2.getHost(8000)}/host`
  const none = await request(url)
  assert.equal(none.status, 403)
  assert.match(json(none).message, /Token header 'e2b-traffic-access-token' is missing/)
  const ok = await request(url, { headers: tok })
  assert.equal(ok.status, 200)
  assert.equal(json(ok).host, 'masked:8000')
  await s2.kill()
})
