// envd round trips and file throughput through the unmodified npm `e2b` SDK, with floors beside
// them. Starts its own sbxd (SBX_BUILD=build-envd by default: the build dir to use), one `base`
// sandbox, then:
//   - commands.run('true') on the running sandbox, N times one after another (p50/p99),
//     beside `bwrap --unshare-all ... true` spawned N times on the host (the floor for "run an
//     isolated process");
//   - a 100 MB upload (files.write, multipart; and raw octet-stream) and download (files.read as
//     bytes: undici asks for gzip, as envd would serve it; and identity through a raw fetch),
//     beside a plain `cp` of a 100 MB file on the host (the floor for moving the bytes).
// Prints figures; asserts nothing. Usage: SBX_BUILD=build-envd node bench/envd-bench.mjs [N=1000]
import { spawnSync } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { randomBytes } from 'node:crypto'
import { writeFileSync, rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TOP, startSbxd, fmt, e2bFor } from './lifecycle-lib.mjs'

process.env.SBX_BUILD ||= join(TOP, 'build-envd')
const N = Number(process.argv[2] || 1000)
const MB = 1024 * 1024
const SIZE = 100 * MB

const srv = await startSbxd()
const { Sandbox } = await e2bFor(srv)

const rate = (ms) => `${(SIZE / MB / (ms / 1000)).toFixed(0)} MB/s (${ms.toFixed(0)} ms)`
let sbx
try {
  sbx = await Sandbox.create()
  for (let i = 0; i < 20; i++) await sbx.commands.run('true') // warm-up

  const run = []
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    await sbx.commands.run('true')
    run.push(performance.now() - t0)
  }

  const bw = []
  const bwArgs = ['--unshare-all', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin',
    '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc',
    '--dev', '/dev', '--die-with-parent', 'true']
  const hasBwrap = spawnSync('bwrap', ['--version']).status === 0
  for (let i = 0; hasBwrap && i < N; i++) {
    const t0 = performance.now()
    const r = spawnSync('bwrap', bwArgs)
    if (r.status !== 0) throw new Error(`bwrap failed: ${r.stderr}`)
    bw.push(performance.now() - t0)
  }

  // 100 MB of incompressible bytes.
  const data = randomBytes(SIZE)
  const hdr = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': sbx.envdAccessToken }
  const up = []
  const upRaw = []
  const down = []
  const downRaw = []
  for (let round = 0; round < 3; round++) {
    let t0 = performance.now()
    await sbx.files.write('/home/user/big.bin', data)
    up.push(performance.now() - t0)

    t0 = performance.now()
    const res = await fetch(`${srv.url}/files?path=/home/user/big2.bin`, {
      method: 'POST', headers: { ...hdr, 'Content-Type': 'application/octet-stream' }, body: data,
    })
    if (res.status !== 200) throw new Error(`raw upload: ${res.status} ${await res.text()}`)
    upRaw.push(performance.now() - t0)

    t0 = performance.now()
    const got = await sbx.files.read('/home/user/big.bin', { format: 'bytes' })
    down.push(performance.now() - t0)
    if (got.length !== SIZE) throw new Error(`download: ${got.length} bytes`)

    t0 = performance.now()
    const r2 = await fetch(`${srv.url}/files?path=/home/user/big2.bin`, { headers: { ...hdr, 'Accept-Encoding': 'identity' } })
    const buf = Buffer.from(await r2.arrayBuffer())
    downRaw.push(performance.now() - t0)
    if (buf.length !== SIZE) throw new Error(`raw download: ${buf.length} bytes`)
  }

  const dir = mkdtempSync(join(tmpdir(), 'sbx-bench-cp-'))
  writeFileSync(join(dir, 'a'), data)
  const cp = []
  for (let round = 0; round < 3; round++) {
    const t0 = performance.now()
    const r = spawnSync('cp', [join(dir, 'a'), join(dir, `b${round}`)])
    if (r.status !== 0) throw new Error('cp failed')
    cp.push(performance.now() - t0)
  }
  rmSync(dir, { recursive: true, force: true })

  const best = (xs) => Math.min(...xs)
  console.log(`commands.run('true') round trip, running sandbox: ${fmt(run)}`)
  if (hasBwrap) console.log(`bwrap --unshare-all ... true (spawn to exit):     ${fmt(bw)}`)
  else console.log('bwrap not installed: apt-get install bubblewrap')
  console.log(`100 MB upload, files.write (multipart, chunked):  best ${rate(best(up))}`)
  console.log(`100 MB upload, raw octet-stream POST /files:       best ${rate(best(upRaw))}`)
  console.log(`100 MB download, files.read bytes (gzip by undici): best ${rate(best(down))}`)
  console.log(`100 MB download, raw GET /files (identity):        best ${rate(best(downRaw))}`)
  console.log(`100 MB plain cp on the host (${tmpdir()}):           best ${rate(best(cp))}`)
} finally {
  if (sbx) await sbx.kill().catch(() => {})
  await srv.stop()
}
