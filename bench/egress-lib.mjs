// Shared by the egress benches (egress-bench.mjs, transform-bench.mjs): the egress tests'
// outside namespace (tests/integration/egress-net.mjs) and a private sbxd (SBX_BUILD, default
// build/) whose sandboxes resolve through it, the SDK, and percentiles. Nothing here asserts a
// time. Root only, as the namespaces are.
import { join } from 'node:path'
import { startSbxd, realTemplates, TOP } from '../tests/integration/sbxd.mjs'
import { OUT, outsideUp } from '../tests/integration/egress-net.mjs'

export { OUT }
export const BUILD = join(TOP, process.env.SBX_BUILD || 'build')
export const e2b = await import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))

export const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))] }
export const fmt = (xs) => `p50 ${pct(xs, 50).toFixed(2)} ms  p90 ${pct(xs, 90).toFixed(2)} ms  min ${Math.min(...xs).toFixed(2)} ms  (n=${xs.length})`

// The outside namespace up, then sbxd with --egress-dns pointing at it (and args more);
// run(d, opts, outside) with the SDK's options for that sbxd; both torn down however it ends.
export async function withEgressSbxd(args, run, sdk = {}) {
  const outside = await outsideUp()
  let d
  try {
    d = await startSbxd({ jailer: join(BUILD, 'jailer/sbx-jailer'), agent: join(BUILD, 'guest-agent/sbx-agent'),
      prepare: realTemplates, args: ['--egress-dns', OUT.dns, '--egress-max', 'any', ...(typeof args === 'function' ? args(outside) : args)] })
    return await run(d, { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key, ...sdk }, outside)
  } finally {
    if (d) await d.stop()
    outside.down()
  }
}
