// The setting every egress test file shares: the unmodified SDK against a real sbxd whose
// egress points at the outside namespace (egress-net.mjs), and the sandboxes a file created,
// killed when it ends. egressSuite() registers the file's before/after hooks and returns the
// suite's state; tests read suite.d (replaced by suite.start() when a test restarts sbxd) and
// suite.e2b.
import { before, after } from 'node:test'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL, TOP } from './sbxd.mjs'
import { OUT, outsideUp } from './egress-net.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')

// upstreamCa: the proxy trusts the outside's own certificate upstream (no public CA here).
export function egressSuite({ upstreamCa = false } = {}) {
  const suite = {
    skip: missing.length ? `not built: ${missing.join(', ')}` : false,
    d: null, e2b: null, outside: null, created: [],
    // sbxd's egress flags for this suite (with any more of a test's own)
    args: (...more) => ['--egress-dns', OUT.dns, '--egress-max', 'any',
      ...(upstreamCa ? ['--egress-upstream-ca', suite.outside.cert] : []), ...more],
    opts: () => ({ apiUrl: suite.d.url, sandboxUrl: suite.d.url, apiKey: suite.d.key, timeoutMs: 120000 }),
    // (re)starts the suite's sbxd: on a fresh state dir, or on reuse's (a stopped sbxd)
    async start(args = suite.args(), reuse = null) {
      suite.d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, args,
        ...(reuse ? { reuse } : { prepare: realTemplates }) })
      return suite.d
    },
    async create(o = {}) {
      const s = await suite.e2b.Sandbox.create('base', { ...suite.opts(), ...o })
      suite.created.push(s)
      return s
    },
  }
  before(async () => {
    if (suite.skip) return
    suite.e2b = await import(SDK)
    suite.outside = await outsideUp()
    await suite.start()
  })
  after(async () => {
    for (const s of suite.created) await s.kill().catch(() => {})
    await suite.d?.stop()
    suite.outside?.down()
  })
  return suite
}
