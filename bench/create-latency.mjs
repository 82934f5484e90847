// Create latency, measured honestly through the HTTP API of a running sbxd.
// For N sandboxes one after another: time POST /sandboxes (create), then time from the start of
// create to the first stdout byte of `echo x` (create-to-first-output), then run `true`, then
// delete. Beside it: `bwrap --unshare-all ... true` on the same machine, the floor for "start an
// isolated process". Prints p50/p99 of each. Needs E2B_API_URL and E2B_API_KEY (make run prints
// them). Usage: node bench/create-latency.mjs [N=100]
import { spawnSync } from 'node:child_process'
import { performance } from 'node:perf_hooks'

const N = Number(process.argv[2] || 100)
const URL_ = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
if (!URL_ || !KEY) throw new Error('export E2B_API_URL and E2B_API_KEY first')

function envelope(obj) {
  const json = Buffer.from(JSON.stringify(obj))
  const head = Buffer.alloc(5)
  head.writeUInt32BE(json.length, 1)
  return Buffer.concat([head, json])
}

async function runUntilFirstOutput(id, token, cmd) {
  const res = await fetch(`${URL_}/process.Process/Start`, {
    method: 'POST',
    headers: {
      'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token,
      'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1',
    },
    body: envelope({ process: { cmd: '/bin/sh', args: ['-c', cmd] } }),
  })
  const reader = res.body.getReader()
  let firstData = null
  let buf = Buffer.alloc(0)
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    buf = Buffer.concat([buf, Buffer.from(value)])
    while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
      const len = buf.readUInt32BE(1)
      const msg = JSON.parse(buf.subarray(5, 5 + len).toString())
      if (firstData === null && msg.event?.data) firstData = performance.now()
      buf = buf.subarray(5 + len)
    }
  }
  return firstData
}

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const fmt = (xs) => `p50 ${pct(xs, 50).toFixed(2)} ms  p99 ${pct(xs, 99).toFixed(2)} ms  (n=${xs.length})`

const create = [], firstOut = [], runTrue = []
for (let i = 0; i < N; i++) {
  const t0 = performance.now()
  const res = await fetch(`${URL_}/sandboxes`, {
    method: 'POST',
    headers: { 'X-API-KEY': KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', timeout: 60 }),
  })
  const sb = await res.json()
  const t1 = performance.now()
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(sb)}`)
  const tFirst = await runUntilFirstOutput(sb.sandboxID, sb.envdAccessToken, 'echo x')
  const t2 = performance.now()
  await runUntilFirstOutput(sb.sandboxID, sb.envdAccessToken, 'true')
  const t3 = performance.now()
  create.push(t1 - t0)
  firstOut.push(tFirst - t0)
  runTrue.push(t3 - t2)
  await fetch(`${URL_}/sandboxes/${sb.sandboxID}`, { method: 'DELETE', headers: { 'X-API-KEY': KEY } })
}

const bw = []
const hasBwrap = spawnSync('bwrap', ['--version']).status === 0
if (hasBwrap) {
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    const r = spawnSync('bwrap', ['--unshare-all', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin',
      '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev',
      '--die-with-parent', 'true'])
    if (r.status !== 0) throw new Error(`bwrap failed: ${r.stderr}`)
    bw.push(performance.now() - t0)
  }
}

console.log(`sbx create (POST /sandboxes, cold, no pool):   ${fmt(create)}`)
console.log(`sbx create-to-first-output (echo x):          ${fmt(firstOut)}`)
console.log(`sbx run 'true' on a running sandbox:          ${fmt(runTrue)}`)
if (hasBwrap) console.log(`bwrap --unshare-all ... true (spawn to exit):  ${fmt(bw)}`)
else console.log('bwrap not installed: apt-get install bubblewrap')
