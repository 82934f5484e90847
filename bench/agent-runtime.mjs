// The agent's runtime (guest-agent/README.md, "Runtime"): what the static agent costs beside
// the dynamically linked one it replaced, and what a template made from an image costs beside
// `base`. Starts its own sbxd (SBX_BUILD, default build/; no warm pool; sparse disks):
//   1. the static agent (build/guest-agent/sbx-agent) and a dynamically linked one, relinked
//      here from the same objects against the shared libcjson, libcap, nettle and zlib: create
//      p50/p99 client-side and server-side on `base-host`, alternating, N each; the idle
//      agent's RSS and PSS (smaps_rollup of the agent's host pid). On `base-host`, whose /usr
//      is the host's, because it carries those libraries (the Debian `base` has no libcjson,
//      and a template without them cannot start the dynamic agent at all);
//   2. create p50 from imported images (tests/lib/images: busybox, musl, minbase) beside
//      `base`, alternating, N each (the agent provisions the user in the first three).
// Usage: node bench/agent-runtime.mjs [N]   (run from the repository, as root)
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir, loadavg } from 'node:os'
import { join } from 'node:path'
import { startSbxd, pct, TOP } from './lifecycle-lib.mjs'

const N = Number(process.argv[2] || 30)
// the template both agents of part 1 run on: the dynamic agent needs its shared libraries in
// the sandbox's root, and base-host's /usr is the host's, which has them
const DYN_TEMPLATE = 'base-host'
const BUILD = process.env.SBX_BUILD || join(TOP, 'build')
const work = mkdtempSync(join(tmpdir(), 'sbx-agent-bench-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true })) // a failed run too
const { userImages } = await import(join(TOP, 'tests/lib/images.mjs'))

function dynamicAgent() {
  const out = join(work, 'sbx-agent-dynamic')
  const o = (p) => join(BUILD, p)
  execFileSync('cc', ['-o', out, o('guest-agent/sbx-agent.p/main.c.o'), '-pie', '-Wl,-z,relro', '-Wl,-z,now',
    '-Wl,--start-group', o('guest-agent/libagent-core.a'), o('api/libsbx-api.a'), o('common/libsbx-common.a'),
    '-lcjson', '-lcap', '-lnettle', '-lz', '-lm', '-pthread', '-Wl,--end-group'])
  return out
}

async function create(d, template) {
  const t0 = performance.now()
  const r = await d.api('POST', '/v2/sandboxes', { templateID: template, timeout: 120 })
  const ms = performance.now() - t0
  if (r.status !== 201) throw new Error(`create ${template}: ${r.status} ${r.text}`)
  return { id: r.json.sandboxID, ms, us: d.serverUs(r.json.sandboxID) }
}

function agentMemory(d, id) {
  const pid = JSON.parse(readFileSync(join(d.state, 'sandboxes', id, 'sandbox.json'), 'utf8')).pid
  const kb = (k) => Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(new RegExp(`^${k}:\\s+(\\d+)`, 'm'))[1])
  return { rss: kb('Rss'), pss: kb('Pss') }
}

const line = (name, xs, us) =>
  `${name.padEnd(26)} client p50 ${pct(xs, 50).toFixed(1)} ms p99 ${pct(xs, 99).toFixed(1)} ms` +
  (us.length ? `   server p50 ${(pct(us, 50) / 1000).toFixed(1)} ms` : '') + `  (n=${xs.length})`

async function round(d, templates, n = N) {
  const res = Object.fromEntries(templates.map((t) => [t, { ms: [], us: [] }]))
  for (let i = 0; i < n; i++)
    for (const t of templates) {
      const c = await create(d, t)
      res[t].ms.push(c.ms)
      if (c.us) res[t].us.push(c.us)
      await d.api('DELETE', `/sandboxes/${c.id}`)
    }
  return res
}

console.log(`agent-runtime bench: N=${N}, load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
// 1. static against dynamic, on the host-/usr template (DYN_TEMPLATE, above)
// both sbxd at once, creates alternating between them, so that the machine's load (other
// builds) falls on both alike
const paths = { static: join(BUILD, 'guest-agent/sbx-agent'), dynamic: dynamicAgent() }
const servers = {}
for (const [name, agent] of Object.entries(paths))
  servers[name] = await startSbxd(['--pool-size', '0', '--disk-overcommit', '8', '--agent', agent, '--runtime', join(BUILD, 'guest-agent/runtime')])
try {
  const res = { static: { ms: [], us: [] }, dynamic: { ms: [], us: [] } }
  for (let i = 0; i < N + 5; i++)
    for (const name of i % 2 ? ['static', 'dynamic'] : ['dynamic', 'static']) {
      const d = servers[name]
      const c = await create(d, DYN_TEMPLATE)
      if (i >= 5) { // the first five of each warm the page cache
        res[name].ms.push(c.ms)
        if (c.us) res[name].us.push(c.us)
      }
      await d.api('DELETE', `/sandboxes/${c.id}`)
    }
  for (const name of ['static', 'dynamic']) {
    console.log(line(`${DYN_TEMPLATE}, ${name} agent`, res[name].ms, res[name].us))
  }
  // memory: one idle sandbox alone, then ten (the static agent's pages are shared by the
  // agents of every sandbox, the dynamic one's libraries also with the image's processes)
  for (const name of ['static', 'dynamic']) {
    const ids = []
    for (let k = 0; k < 10; k++) {
      ids.push((await create(servers[name], DYN_TEMPLATE)).id)
      if (k === 0 || k === 9) {
        await new Promise((r) => setTimeout(r, 1000))
        const ms = ids.map((id) => agentMemory(servers[name], id))
        const avg = (f) => Math.round(ms.reduce((a, m) => a + m[f], 0) / ms.length)
        console.log(`${name} agent, ${ids.length} idle sandbox(es): RSS ${avg('rss')} kB, PSS ${avg('pss')} kB each`)
      }
    }
  }
} finally {
  // a kept-alive connection sbxd closed while idle fails the first call: stop again
  for (const d of Object.values(servers)) await d.stop().catch(() => d.stop())
}
// 2. imported images beside base
if (process.env.AGENTS_ONLY) process.exit(0) // the first part only
const imgs = userImages()
const d = await startSbxd(['--pool-size', '0', '--disk-overcommit', '8'])
try {
  for (const name of ['busybox', 'musl', 'minbase']) {
    const file = join(work, `${name}.tar`)
    execFileSync('tar', ['-C', imgs[name], '-cf', file, '.'])
    const res = await fetch(`${d.url}/v1/images?name=${name}`, {
      method: 'POST', headers: { Authorization: `Bearer ${d.key}` }, body: readFileSync(file),
    })
    if (res.status !== 201) throw new Error(`import ${name}: ${res.status} ${await res.text()}`)
  }
  const templates = ['base', 'busybox', 'musl', 'minbase']
  await round(d, templates, 3) // warm-up
  const r = await round(d, templates)
  for (const t of templates) console.log(line(t, r[t].ms, r[t].us))
} finally {
  await d.stop().catch(() => d.stop())
  rmSync(work, { recursive: true, force: true })
}
console.log(`load after: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
