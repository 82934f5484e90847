// Template builds (issue 14): a 3-step template (runCmd, copy, runCmd) built through the
// unmodified `e2b` SDK against its own sbxd (SBX_BUILD, default build/): the first build on a
// fresh state dir (the base's layers imported into the store once), a cold build of other
// steps on the same base (every step in a build sandbox), the same build again (every step
// from the cache), and a create from the result. N rounds of the last three with new content
// each round. Nothing here asserts a time.
//   node bench/template-build.mjs [N]
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSbxd, fmt, TOP } from './lifecycle-lib.mjs'

const require = createRequire(join(TOP, 'tests', 'package.json'))
const { Template, Sandbox } = require('e2b')
const N = Number(process.argv[2] || 5)

const d = await startSbxd(['--pool-size', '0'])
const opts = { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key }
const ctx = mkdtempSync(join(tmpdir(), 'sbx-tb-bench-'))
const tpl = (i) => {
  writeFileSync(join(ctx, 'data.txt'), `round ${i}\n`)
  return Template({ fileContextPath: ctx })
    .fromTemplate('base')
    .runCmd(`echo round ${i} > /tmp/one`)
    .copy('data.txt', '/home/user/data.txt')
    .runCmd('wc -c /home/user/data.txt > /home/user/size')
}
const timed = async (f) => { const t0 = performance.now(); await f(); return performance.now() - t0 }
const steps = { built: [], cached: [] }
const build = (t, name) => Template.build(t, name, {
  ...opts,
  onBuildLogs: (e) => {
    const m = e.message.match(/(\d+) step\(s\) run, (\d+) from the cache/)
    if (m) { steps.built.push(+m[1]); steps.cached.push(+m[2]) }
  },
})
try {
  const first = await timed(() => build(tpl('first'), 'bench-first'))
  console.log(`first build on a fresh state dir (base layers imported): ${first.toFixed(0)} ms`)
  const cold = [], cached = [], create = []
  for (let i = 0; i < N; i++) {
    cold.push(await timed(() => build(tpl(i), `bench-${i}`)))
    cached.push(await timed(() => build(tpl(i), `bench-${i}`)))
    create.push(await timed(async () => { const s = await Sandbox.create(`bench-${i}`, opts); await s.kill() }))
  }
  console.log(`3-step build, cold (every step in a build sandbox): ${fmt(cold)}`)
  console.log(`3-step build, unchanged (every step from the cache): ${fmt(cached)}`)
  console.log(`create + kill of the built template:                 ${fmt(create)}`)
  console.log(`steps run per build: ${steps.built.join(' ')}; from the cache: ${steps.cached.join(' ')}`)
  console.log('(client-side: Template.build() returns after its status poll, every 200 ms, sees ready)')
} finally {
  rmSync(ctx, { recursive: true, force: true })
  await d.stop()
}
