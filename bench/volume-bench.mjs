// Volumes: what a volume costs at create and in use. Starts its own sbxd (SBX_BUILD, default
// build/; warm pool off, so every create is cold), then, N times each:
//   - POST /volumes (the SDK's Volume.create: 1 GiB, formatted and preallocated) and DELETE;
//   - a cold create of `base` without a volume, with one volume mount whose volume nobody
//     else uses (sbxd attaches a loop device and mounts it first), and with one that another
//     sandbox holds mounted (only the jailer's idmapped bind), client-side and server-side
//     (sbxd's log);
//   - the SDK's Volume file operations on a 1 KiB file with no sandbox using the volume (the
//     first request mounts it, the mount then lingers 10 s) and with a sandbox holding it;
//   - 64 MiB through writeFile / readFile, beside `cp` of 64 MiB on the host.
// Prints figures; asserts nothing. Usage: node bench/volume-bench.mjs [N=20]
import { spawnSync } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { randomBytes } from 'node:crypto'
import { writeFileSync, rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TOP, startSbxd, fmt } from './lifecycle-lib.mjs'

const N = Number(process.argv[2] || 20)
const MB = 1024 * 1024
const srv = await startSbxd(['--pool-size', '0'])
process.env.E2B_VOLUME_API_URL = srv.url
const e2b = await import(join(TOP, 'tests/node_modules/e2b/dist/index.mjs'))
const { Sandbox, Volume } = e2b
const opts = { apiUrl: srv.url, sandboxUrl: srv.url, apiKey: srv.key }

async function timed(f) {
  const t0 = performance.now()
  const r = await f()
  return [performance.now() - t0, r]
}

try {
  // 1. volume create / delete
  const vc = [], vd = []
  for (let i = 0; i < N; i++) {
    const [t, v] = await timed(() => Volume.create(`bench-${i}`, opts))
    vc.push(t)
    vd.push((await timed(() => Volume.destroy(v.volumeId, opts)))[0])
  }
  console.log(`volume create (1 GiB, SDK)        ${fmt(vc)}`)
  console.log(`volume delete                     ${fmt(vd)}`)

  // 2. sandbox create without / with a volume mount
  const shared = await Volume.create('bench-shared', opts)
  const lone = await Volume.create('bench-lone', opts)
  const rows = { none: [[], []], idle: [[], []], held: [[], []] }
  const holder = await Sandbox.create('base', { ...opts, volumeMounts: { '/v': shared } })
  for (let i = 0; i < N; i++) {
    for (const [k, mounts] of [['none', undefined], ['idle', { '/v': lone }], ['held', { '/v': shared }]]) {
      const [t, s] = await timed(() => Sandbox.create('base', { ...opts, volumeMounts: mounts }))
      rows[k][0].push(t)
      rows[k][1].push(srv.serverUs(s.sandboxId) / 1000)
      await s.kill()
    }
  }
  console.log(`create, no volume                 ${fmt(rows.none[0])}  server ${fmt(rows.none[1])}`)
  console.log(`create, volume not yet mounted    ${fmt(rows.idle[0])}  server ${fmt(rows.idle[1])}`)
  console.log(`create, volume held by another    ${fmt(rows.held[0])}  server ${fmt(rows.held[1])}`)

  // 3. file operations, 1 KiB, idle volume (mount per request) and held volume
  const small = randomBytes(1024)
  for (const [label, v] of [['no sandbox', lone], ['sandbox holds', shared]]) {
    const w = [], r = [], st = []
    for (let i = 0; i < N; i++) {
      w.push((await timed(() => v.writeFile(`/f${i}`, small, { force: true })))[0])
      r.push((await timed(() => v.readFile(`/f${i}`, { format: 'bytes' })))[0])
      st.push((await timed(() => v.getInfo(`/f${i}`)))[0])
    }
    console.log(`writeFile 1 KiB, ${label.padEnd(14)}   ${fmt(w)}`)
    console.log(`readFile 1 KiB, ${label.padEnd(14)}    ${fmt(r)}`)
    console.log(`getInfo, ${label.padEnd(14)}           ${fmt(st)}`)
  }

  // 4. 64 MiB through the content API, beside cp on the host
  const big = randomBytes(64 * MB)
  const [tw] = await timed(() => shared.writeFile('/big', big, { force: true }))
  const [tr, back] = await timed(() => shared.readFile('/big', { format: 'bytes' }))
  if (back.length !== big.length) throw new Error('readFile returned a different size')
  const tmp = mkdtempSync(join(tmpdir(), 'sbx-vbench-'))
  writeFileSync(join(tmp, 'a'), big)
  const t0 = performance.now()
  spawnSync('cp', [join(tmp, 'a'), join(tmp, 'b')])
  spawnSync('sync', [join(tmp, 'b')])
  const tcp = performance.now() - t0
  rmSync(tmp, { recursive: true, force: true })
  const rate = (ms) => `${(64 / (ms / 1000)).toFixed(0)} MB/s (${ms.toFixed(0)} ms)`
  console.log(`writeFile 64 MiB (fsync'ed)       ${rate(tw)}`)
  console.log(`readFile 64 MiB                   ${rate(tr)}`)
  console.log(`cp 64 MiB + sync on the host      ${rate(tcp)}`)

  await holder.kill()
  await Volume.destroy(shared.volumeId, opts)
  await Volume.destroy(lone.volumeId, opts)
} finally {
  await srv.stop()
}
