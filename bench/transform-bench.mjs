// Network transform figures (server/egress/README.md "Credentials"). Starts its own sbxd (SBX_BUILD,
// default build/) and the egress tests' outside namespace (tests/integration/egress-net.mjs),
// then prints, for N HTTPS requests made one after another by curl inside one sandbox
// (curl's time_total, a new connection each):
//   - to a name with a transform: intercepted (TLS to the proxy, a leaf from the cache, TLS
//     upstream, the header added), with curl verifying the proxy's leaf and with -k (the
//     difference is curl loading and checking the CA bundle, the client's own cost);
//   - to a name without one, in the same sandbox: redirected to the proxy, relayed untouched;
//   - the same name from a sandbox without rules: not redirected at all;
// and a 100 MB download through an intercepted connection against the untouched relay, and
// connections per second: M requests by one curl with 8 in flight, each on a connection of
// its own (Connection: close), -k, through each path.
// Usage (root): node bench/transform-bench.mjs [N=50] [M=400]
import { e2b, fmt, withEgressSbxd } from './egress-lib.mjs'

const N = Number(process.argv[2] || 50)
const M = Number(process.argv[3] || 400)
// N requests in one shell: time_total of each, in ms
async function times(s, url, extra = '') {
  const r = await s.commands.run(`for i in $(seq ${N}); do curl -s -4 ${extra} -o /dev/null -w '%{time_total}\\n' ${url}; done`,
    { timeoutMs: 600000 })
  return r.stdout.trim().split('\n').map((x) => Number(x) * 1000)
}
async function download(s, url, extra = '') {
  let best = 0
  for (let i = 0; i < 3; i++) {
    const r = await s.commands.run(`curl -s -4 ${extra} -o /dev/null -w '%{speed_download}' ${url}`, { timeoutMs: 600000 })
    best = Math.max(best, Number(r.stdout) / 1e6)
  }
  return best.toFixed(0)
}
// M requests, 8 at a time, a new connection each: answered 200s per second of wall time
async function rate(s, url) {
  const r = await s.commands.run(`s=$(date +%s%N); ` +
    `curl -s -k -4 --parallel --parallel-max 8 -H 'Connection: close' -w '%{http_code}\\n' ` +
    `$(for i in $(seq ${M}); do printf '%s -o /dev/null ' ${url}; done) | grep -c '^200$'; ` +
    `echo $(( ($(date +%s%N) - s) / 1000000 ))`, { timeoutMs: 600000 })
  const [ok, ms] = r.stdout.trim().split('\n').map(Number)
  return `${(ok / (ms / 1000)).toFixed(0)}/s (${ok} of ${M} in ${ms} ms)`
}
await withEgressSbxd((outside) => ['--egress-upstream-ca', outside.cert], async (d, opts) => {
  await e2b.Secret.create('bench', 'x'.repeat(40), opts)
  const rules = { 'www.allowed.test': [{ transform: { headers: { Authorization: `Bearer ${e2b.Secret.fill('bench')}` } } }] }
  const withRules = await e2b.Sandbox.create('base', { ...opts, network: { allowOut: ['www.allowed.test', 'other.test'], rules } })
  const without = await e2b.Sandbox.create('base', { ...opts, network: { allowOut: ['www.allowed.test', 'other.test'] } })
  await times(withRules, 'https://www.allowed.test/') // warm-up: the leaf is minted once
  console.log(`intercepted (transform):      ${fmt(await times(withRules, 'https://www.allowed.test/'))}`)
  console.log(`intercepted, curl -k:          ${fmt(await times(withRules, 'https://www.allowed.test/', '-k'))}`)
  console.log(`relayed untouched (no rule):  ${fmt(await times(withRules, 'https://other.test/', '-k'))}`)
  console.log(`not redirected (no rules):    ${fmt(await times(without, 'https://www.allowed.test/', '-k'))}`)
  console.log(`100 MB, intercepted: ${await download(withRules, 'https://www.allowed.test/bytes/100000000')} MB/s, ` +
    `relayed untouched: ${await download(withRules, 'https://other.test/bytes/100000000', '-k')} MB/s, ` +
    `not redirected: ${await download(without, 'https://www.allowed.test/bytes/100000000', '-k')} MB/s (best of 3)`)
  console.log(`connections per second, 8 in flight: intercepted ${await rate(withRules, 'https://www.allowed.test/')}, ` +
    `relayed untouched ${await rate(withRules, 'https://other.test/')}, ` +
    `not redirected ${await rate(without, 'https://www.allowed.test/')}`)
  await withRules.kill()
  await without.kill()
}, { timeoutMs: 600000 })
