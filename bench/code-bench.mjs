// Code interpreter figures (issues 4 and 12). Starts its own sbxd (SBX_BUILD, default build/)
// twice: without a pool, then with a warm pool of code-interpreter-v1 sandboxes. Prints:
//  - runCode('1+1') on a warm context: at the agent (frames on the sandbox's agent.sock, no
//    HTTP) and through sbxd with the unmodified @e2b/code-interpreter SDK;
//  - per language (python, javascript, r, java): warm '1+1' at the agent, a cold context's
//    creation (POST /contexts answers once the kernel is ready) at the agent and through the
//    SDK, and the idle kernel's memory;
//  - the first runCode importing pandas + matplotlib in a brand-new sandbox (create and
//    first run timed separately), cold and from the pool;
//  - idle memory of a sandbox with its default (prewarmed) Python context.
// Nothing here asserts a time. Jupyter beside it: bench/code-jupyter.py.
//   SBX_BUILD=build-code node bench/code-bench.mjs [N]
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { startSbxd, pct, fmt, sleep, TOP } from './lifecycle-lib.mjs'

const require = createRequire(join(TOP, 'tests', 'package.json'))
const { Sandbox } = require('@e2b/code-interpreter')
const N = Number(process.argv[2] || 300)
const IMPORT = 'import pandas as pd\nimport matplotlib.pyplot as plt\npd.DataFrame({"a": [1, 2]}).shape'

function sdkOpts(d) {
  return { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key }
}

// A sandbox's cgroups are <its sbxd's cgroup parent>/<id> in each hierarchy.
function cgroupBytes(d, id) {
  const cg = `${d.cgroupParent}/${id}`
  for (const f of [`/sys/fs/cgroup/memory/${cg}/memory.usage_in_bytes`, `/sys/fs/cgroup/unified/${cg}/memory.current`]) {
    try { return Number(readFileSync(f, 'utf8')) } catch {}
  }
  return NaN
}

function processes(d, id) {
  const cg = `${d.cgroupParent}/${id}`
  let pids = []
  for (const f of [`/sys/fs/cgroup/pids/${cg}/cgroup.procs`, `/sys/fs/cgroup/unified/${cg}/cgroup.procs`, `/sys/fs/cgroup/memory/${cg}/cgroup.procs`]) {
    try { pids = readFileSync(f, 'utf8').trim().split('\n').filter(Boolean); if (pids.length) break } catch {}
  }
  return pids.map((pid) => {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, 2).join(' ')
      const rss = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1])
      const pss = Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/Pss:\s+(\d+)/)[1])
      return { pid, cmd, rss, pss }
    } catch { return null }
  }).filter(Boolean)
}

async function firstRuns(d, label, rounds, waitPool) {
  const create = [], first = []
  for (let i = 0; i < rounds; i++) {
    if (waitPool) await sleep(2500) // let the pool refill (one member at a time)
    const t0 = performance.now()
    const sbx = await Sandbox.create(sdkOpts(d))
    const t1 = performance.now()
    const e = await sbx.runCode(IMPORT)
    const t2 = performance.now()
    if (e.error || e.text !== '(2, 1)') throw new Error(`unexpected ${JSON.stringify(e.error || e.text)}`)
    create.push(t1 - t0)
    first.push(t2 - t1)
    await sbx.kill()
  }
  console.log(`${label}: create ${fmt(create)}`)
  console.log(`${label}: first runCode importing pandas+matplotlib ${fmt(first)}`)
  console.log(`${label}: create + first runCode p50 ${(pct(create, 50) + pct(first, 50)).toFixed(1)} ms`)
}

// Asynchronously: a synchronous child would block this event loop for seconds, and the SDK's
// kept-alive connections would then be reused after sbxd closed them for idleness (6 s) before
// Node had read the close: "fetch failed: other side closed" (any server that closes idle
// connections does the same to a client whose loop stalls past its timeout).
async function agentBench(args) {
  const r = await promisify(execFile)('/usr/bin/python3', [join(TOP, 'bench/code-agent.py'), ...args],
    { encoding: 'utf8' }).catch((e) => e)
  return (r.stdout || r.stderr || String(r)).trim()
}

const LANGS = ['python', 'javascript', 'r', 'java']

async function perLanguage(d, sbx, sock) {
  for (const lang of LANGS) {
    const n = lang === 'java' ? Math.min(N, 200) : N * 3
    console.log(`${lang}: '1+1' warm on its default context, at the agent: ${await agentBench([sock, String(n), '1+1', lang])}`)
  }
  for (const lang of LANGS)
    console.log(`${lang}: cold context (POST /contexts + DELETE), at the agent: ${await agentBench(['--create', sock, lang, '5'])}`)
  for (const lang of LANGS) {
    const ts = []
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now()
      const ctx = await sbx.createCodeContext({ language: lang })
      ts.push(performance.now() - t0)
      await sbx.removeCodeContext(ctx)
    }
    console.log(`${lang}: cold createCodeContext, SDK through sbxd: ${fmt(ts)}`)
  }
  await sleep(500)
  const label = (pid) => {
    const c = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    return [['kernel.py', 'python'], ['kernel.mjs', 'javascript'], ['kernel.R', 'r'], ['SbxKernel', 'java']]
      .find(([k]) => c.includes(k))?.[1]
  }
  const kernels = processes(d, sbx.sandboxId).map((p) => ({ ...p, lang: label(p.pid) })).filter((p) => p.lang)
  console.log('idle default kernels: ' + kernels.map((p) =>
    `${p.lang} rss ${(p.rss / 1024).toFixed(1)} MiB pss ${(p.pss / 1024).toFixed(1)} MiB`).join('; '))
}

const cold = await startSbxd(['--pool-size', '0'])
try {
  await firstRuns(cold, 'brand-new sandbox, no pool', 5, false)
  const sbx = await Sandbox.create(sdkOpts(cold))
  const sock = join(cold.state, 'sandboxes', sbx.sandboxId, 'agent.sock')
  await sleep(1000)
  const mem = processes(cold, sbx.sandboxId)
  const cg = cgroupBytes(cold, sbx.sandboxId)
  console.log(`idle sandbox with its default python context: cgroup ${(cg / 1048576).toFixed(1)} MiB; ` +
    mem.map((p) => `${p.cmd.split('/').pop()} rss ${(p.rss / 1024).toFixed(1)} MiB pss ${(p.pss / 1024).toFixed(1)} MiB`).join('; '))

  // At the agent: frames straight on agent.sock (bench/code-agent.py, a lean client).
  console.log(`runCode('1+1') warm, at the agent (frames on agent.sock): ${await agentBench([sock, String(N * 3)])}`)

  for (let i = 0; i < 20; i++) await sbx.runCode('1+1')
  const viaSdk = []
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    const e = await sbx.runCode('1+1')
    viaSdk.push(performance.now() - t0)
    if (e.text !== '2') throw new Error(e.text)
  }
  console.log(`runCode('1+1') warm, SDK through sbxd (HTTP): ${fmt(viaSdk)}`)

  const js = []
  await sbx.runCode('1+1', { language: 'javascript' })
  for (let i = 0; i < Math.min(N, 200); i++) {
    const t0 = performance.now()
    await sbx.runCode('1+1', { language: 'javascript' })
    js.push(performance.now() - t0)
  }
  console.log(`runCode('1+1', javascript) warm, SDK through sbxd: ${fmt(js)}`)
  await perLanguage(cold, sbx, sock)
  await sbx.kill()
} finally {
  await cold.stop()
}

const pooled = await startSbxd(['--pool-size', '2', '--pool-templates', 'code-interpreter-v1'])
try {
  await sleep(4000)
  await firstRuns(pooled, 'sandbox from the warm pool', 5, true)
} finally {
  await pooled.stop()
}
