// Egress figures (server/egress/README.md "Egress"). Starts its own sbxd (SBX_BUILD, default build/)
// and the egress tests' outside namespace (tests/integration/egress-net.mjs), then prints:
//   - create latency, loopback-only against allowInternetAccess (a veth pair, its rules),
//     alternating, N of each, one sandbox with a link kept running meanwhile: sbxd's own
//     figure ("started ... in N us") and the client's; the kill of each;
//   - PUT /sandboxes/{id}/network: replacing a sandbox's rules, and giving a loopback-only
//     sandbox its link;
//   - a 100 MB download from the outside through the sandbox's link (veth, forward, NAT)
//     against the host's own download from the same server, best of 3 each.
// Usage (root): node bench/egress-bench.mjs [N=30]
import { execFileSync } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { sleep } from './lifecycle-lib.mjs'
import { OUT, e2b, pct, fmt, withEgressSbxd } from './egress-lib.mjs'

const N = Number(process.argv[2] || 30)

await withEgressSbxd([], async (d, opts) => {
  const serverUs = () => [...d.stderr().matchAll(/started \(template [^)]*\) in (\d+) us/g)].map((m) => Number(m[1]) / 1000)
  const lo = { client: [], server: [] }, eg = { client: [], server: [] }
  // warm-up: the resolver and the page cache; one sandbox with a link stays, so that the
  // table exists as on a server in use (the first link after none also makes the table)
  await (await e2b.Sandbox.create('base', { ...opts })).kill()
  const resident = await e2b.Sandbox.create('base', { ...opts, allowInternetAccess: true, timeoutMs: 600000 })
  for (let i = 0; i < 2 * N; i++) {
    const which = i % 2 ? eg : lo
    const before = serverUs().length
    const t0 = performance.now()
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 60, ...(i % 2 ? { allow_internet_access: true } : {}) } })
    which.client.push(performance.now() - t0)
    if (r.status !== 201) throw new Error(r.text)
    for (let k = 0; k < 50 && serverUs().length === before; k++) await sleep(5)
    which.server.push(serverUs().at(-1))
    const t1 = performance.now()
    await d.api('DELETE', `/sandboxes/${r.json.sandboxID}`)
    ;(which.kill ??= []).push(performance.now() - t1)
  }
  // PUT /sandboxes/{id}/network on the resident sandbox: the rules replaced in one transaction
  const upd = []
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    const r = await d.api('PUT', `/sandboxes/${resident.sandboxId}/network`, { body: i % 2 ? { allowOut: [OUT.b4], denyOut: ['0.0.0.0/0'] } : { allow_internet_access: true } })
    upd.push(performance.now() - t0)
    if (r.status !== 204) throw new Error(r.text)
  }
  // and on a loopback-only sandbox, which gets its link then (the jailer's --attach-egress)
  const att = []
  for (let i = 0; i < Math.min(N, 10); i++) {
    const lo = await e2b.Sandbox.create('base', { ...opts })
    const t0 = performance.now()
    const r = await d.api('PUT', `/sandboxes/${lo.sandboxId}/network`, { body: { allowOut: [OUT.a4] } })
    att.push(performance.now() - t0)
    if (r.status !== 204) throw new Error(r.text)
    await lo.kill()
  }
  await resident.kill()
  console.log('create, loopback only      (sbxd) ' + fmt(lo.server))
  console.log('create, allowInternetAccess (sbxd) ' + fmt(eg.server))
  console.log('create, loopback only      (client) ' + fmt(lo.client))
  console.log('create, allowInternetAccess (client) ' + fmt(eg.client))
  console.log('kill, loopback only      (client) ' + fmt(lo.kill))
  console.log('kill, allowInternetAccess (client) ' + fmt(eg.kill))
  console.log('PUT network, rules replaced     (client) ' + fmt(upd))
  console.log('PUT network, link attached     (client) ' + fmt(att))
  console.log(`extra create latency of a link: p50 ${(pct(eg.server, 50) - pct(lo.server, 50)).toFixed(2)} ms (sbxd)`)

  const MB = 100
  const url = `http://${OUT.a4}/bytes/${MB * 1024 * 1024}`
  const host = [], sbx = []
  const s = await e2b.Sandbox.create('base', { ...opts, allowInternetAccess: true, timeoutMs: 600000 })
  for (let i = 0; i < 3; i++) {
    host.push(Number(execFileSync('curl', ['-sS', '-o', '/dev/null', '-w', '%{speed_download}', url], { encoding: 'utf8' })))
    sbx.push(Number((await s.commands.run(`curl -sS -o /dev/null -w '%{speed_download}' ${url}`, { timeoutMs: 120000 })).stdout))
  }
  await s.kill()
  const mbs = (b) => (b / 1048576).toFixed(0)
  console.log(`${MB} MB download, host's own:        best ${mbs(Math.max(...host))} MB/s  (${host.map(mbs).join(', ')})`)
  console.log(`${MB} MB download, through egress:    best ${mbs(Math.max(...sbx))} MB/s  (${sbx.map(mbs).join(', ')})`)
})
