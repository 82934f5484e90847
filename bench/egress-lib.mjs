// Shared by the egress benches (egress-bench.mjs, transform-bench.mjs): the egress tests'
// outside namespace (tests/integration/egress-net.mjs) and a private sbxd (SBX_BUILD, default
// build/) whose sandboxes resolve through it, the SDK, and percentiles. Nothing here asserts a
// time. Root only, as the namespaces are.
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { removeCgroupParent } from './lifecycle-lib.mjs'

const TOP = resolve(fileURLToPath(import.meta.url), '../..')
// SBX_BUILD absolute, or relative to the repository; sbxd from it too, not from build/
export const BUILD = resolve(TOP, process.env.SBX_BUILD || 'build')
process.env.SBXD ||= join(BUILD, 'server/sbxd')
const { startSbxd, realTemplates } = await import('../tests/integration/sbxd.mjs')
const { OUT, outsideUp } = await import('../tests/integration/egress-net.mjs')

export { OUT }
export const e2b = await import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))

export const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))] }
export const fmt = (xs) => `p50 ${pct(xs, 50).toFixed(2)} ms  p90 ${pct(xs, 90).toFixed(2)} ms  min ${Math.min(...xs).toFixed(2)} ms  (n=${xs.length})`

// a cgroup parent of this bench's own, never the default one other sbxd share; removed after
const CGROUP = `sbx-bench-egress-${process.pid}`

// The outside namespace up, then sbxd with --egress-dns pointing at it (and args more);
// run(d, opts, outside) with the SDK's options for that sbxd; both torn down however it ends.
export async function withEgressSbxd(args, run, sdk = {}) {
  const outside = await outsideUp()
  let d
  try {
    d = await startSbxd({ jailer: join(BUILD, 'jailer/sbx-jailer'), agent: join(BUILD, 'guest-agent/sbx-agent'),
      prepare: realTemplates, args: ['--egress-dns', OUT.dns, '--egress-max', 'any', '--cgroup-parent', CGROUP,
        ...(typeof args === 'function' ? args(outside) : args)] })
    return await run(d, { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key, ...sdk }, outside)
  } finally {
    if (d) await d.stop()
    await removeCgroupParent(CGROUP)
    outside.down()
  }
}
