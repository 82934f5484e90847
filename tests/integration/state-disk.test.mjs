// Sandbox disks and the host's state disk.
//
// With the storage pool (server/storage/disk-pool.h, the default where the kernel has btrfs)
// a sandbox's disk is a btrfs subvolume with a qgroup limit, and the pool is one preallocated
// image on the state disk:
//  - disks cost what they hold: sandboxes whose disk sizes add up to ten times the pool are
//    admitted, and an idle one takes next to nothing of it;
//  - a sandbox writing past its disk gets EDQUOT from write() and keeps what it wrote;
//  - a full pool is ENOSPC from write() for every writer, nothing written before is lost, no
//    file system goes read-only, and freeing space lets writes and creates in again;
//  - creates are refused (507) once the pool's free space is below the reserve;
//  - with the state disk filled up by something else, writes in sandboxes still land (the
//    pool's blocks were reserved when it was made).
// With the fallback, preallocated ext4 images (--disk image), a sandbox disk is promised only
// when the state disk can hold it (storage/disk-image.h, "Admission"):
//  - creates past the free space (less the reserve) get 507 naming the shortage, and the refusal
//    shows in /metrics;
//  - with the state disk filled up by something else, writes inside a running sandbox still
//    land: its disk was preallocated (no "potential data loss" on its loop device);
//  - a sandbox filling its own disk gets ENOSPC;
//  - --disk-overcommit R admits R times as much, as sparse images.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, releaseState, REAL, fillUp } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

const DISK_MB = 64
let d
let mnt
let img
// Kill what is left, stop sbxd, and remove the small state disk (the state dir is below its
// mount point, and the storage pool below the state dir).
async function finish() {
  if (d) {
    const l = await d.api('GET', '/v2/sandboxes').catch(() => ({ json: [] }))
    for (const s of l.json || []) await d.api('DELETE', `/sandboxes/${s.sandboxID}`).catch(() => {})
    await d.stop({ keep: true }).catch(() => {})
    releaseState(d.state)
    d = undefined
  }
  if (mnt) {
    try { execFileSync('umount', ['-l', mnt]) } catch {}
    rmSync(mnt, { recursive: true, force: true })
  }
  if (img) rmSync(img, { force: true })
  mnt = img = undefined
}
after(finish)

// A 768 MiB ext4 file system of its own for the state dir.
function smallStateDisk() {
  const base = mkdtempSync(join(tmpdir(), 'sbxd-disk-'))
  img = `${base}.img`
  execFileSync('truncate', ['-s', '768M', img])
  execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', img])
  execFileSync('mount', ['-o', 'loop', img, base])
  mnt = base
  const state = join(mnt, 'state')
  mkdirSync(state)
  realTemplates(state, { host: true }) // a small state file system
  return state
}

const metric = (text, name) => {
  const m = text.match(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm'))
  return m ? Number(m[1]) : undefined
}

test('image disks: creates past the state disk get 507; writes in running sandboxes never get lost', { skip, timeout: 300_000 }, async () => {
  smallStateDisk()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: { dir: mnt }, args: ['--disk', 'image', '--disk-reserve', '32'] })
  const opts = { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key }
  const made = []
  let refused
  for (let i = 0; i < 40 && !refused; i++) {
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: DISK_MB, timeout: 600 } })
    if (r.status === 201) made.push(r.json)
    else refused = r
  }
  assert.ok(refused, 'the small state disk filled up')
  assert.equal(refused.status, 507, refused.text)
  assert.match(refused.json.message, /not enough space on the host's state disk for a 64 MiB sandbox disk: \d+ MiB free, 32 MiB kept in reserve/)
  // 768 MiB less the file system's own overhead, the templates and the pristine images, less
  // the reserve: several 64 MiB disks, not more than fit.
  assert.ok(made.length >= 4 && made.length <= 11, `${made.length} sandboxes admitted`)
  const m = (await d.api('GET', '/metrics')).text
  assert.ok(metric(m, 'sbx_disk_refused_total') >= 1, m)
  assert.equal(metric(m, 'sbx_state_disk_bytes{kind="promised"}'), made.length * DISK_MB * 1024 * 1024)
  assert.ok(metric(m, 'sbx_state_disk_bytes{kind="free"}') < 32 * 1024 * 1024 + DISK_MB * 1024 * 1024)

  // Fill what is left of the state disk from the host, then write inside a sandbox: the data
  // must be on its disk (read back with O_DIRECT, past the page cache), not silently lost.
  const filler = fillUp(mnt)
  const sbx = await Sandbox.connect(made[0].sandboxID, opts)
  const w = await sbx.commands.run(
    'head -c 40M /dev/urandom > /home/user/data && sync && sha256sum < /home/user/data && ' +
    'dd if=/home/user/data iflag=direct bs=1M 2>/dev/null | sha256sum; ' +
    'awk \'$2 == "/" { split($4, o, ","); print o[1] }\' /proc/mounts', { timeoutMs: 120_000 })
  const [written, direct, ro] = w.stdout.trim().split('\n')
  assert.equal(direct, written, 'what was written reads back from the disk')
  assert.equal(ro, 'rw', 'the root file system did not go read-only')
  // ... and filling its own disk is ENOSPC for the writer, nothing else
  const full = await sbx.commands.run('dd if=/dev/zero of=/home/user/big bs=1M count=200 2>&1; echo rc=$?', { timeoutMs: 120_000 }).catch((e) => e.result)
  assert.match(full.stdout, /No space left on device/)
  assert.match(full.stdout, /rc=1/)
  const again = await sbx.commands.run('rm -f /home/user/big && echo ok > /home/user/after && cat /home/user/after')
  assert.equal(again.stdout, 'ok\n')
  // another sandbox is untouched too
  const other = await Sandbox.connect(made[made.length - 1].sandboxID, opts)
  assert.equal((await other.commands.run('echo alive > /home/user/x && cat /home/user/x')).stdout, 'alive\n')

  // the disk full shows in the log, and freeing space lets creates in again
  const c = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: DISK_MB } })
  assert.equal(c.status, 507, c.text)
  unlinkSync(filler)
  for (const s of made.splice(0, 2)) await d.api('DELETE', `/sandboxes/${s.sandboxID}`)
  const ok = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: DISK_MB } })
  assert.equal(ok.status, 201, ok.text)
  made.push(ok.json)
  const admitted = made.length

  // --disk-overcommit 4: sparse images, four times the promise
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: { dir: mnt }, args: ['--disk', 'image', '--disk-reserve', '32', '--disk-overcommit', '4'] })
  let more = 0
  for (let i = 0; i < 60; i++) {
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: DISK_MB } })
    if (r.status !== 201) {
      assert.equal(r.status, 507, r.text)
      assert.match(r.json.message, /overcommit 4/)
      break
    }
    more++
  }
  assert.ok(admitted + more >= 3 * admitted, `overcommit 4 admitted ${admitted + more} in all, ${admitted} without`)
  assert.ok(more < 60, 'overcommit still has a bound')
  await finish()
})

// Runs cmd in the sandbox through envd; its stdout whatever the exit code.
async function sh(sbx, cmd, timeoutMs = 120_000) {
  const r = await sbx.commands.run(cmd, { timeoutMs }).catch((e) => e.result ?? { stdout: '', stderr: String(e) })
  return r.stdout
}

test('storage pool: disks cost what they hold; past a disk EDQUOT, a full pool ENOSPC, nothing lost', { skip, timeout: 600_000 }, async () => {
  smallStateDisk()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: { dir: mnt }, args: ['--storage-pool', '384M', '--disk-reserve', '32'] })
  const opts = { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key }
  let m = (await d.api('GET', '/metrics')).text
  assert.equal(metric(m, 'sbx_storage_backend{kind="pool"}'), 1, m)
  const size = metric(m, 'sbx_storage_pool_bytes{kind="size"}')
  assert.ok(size >= 300 * 1024 * 1024 && size <= 384 * 1024 * 1024, `pool size ${size}`)
  const used0 = metric(m, 'sbx_storage_pool_bytes{kind="used"}')

  // Twelve 256 MiB disks and four larger than the pool itself: eight times the pool promised,
  // all admitted, and the idle ones take next to nothing.
  const made = []
  for (let i = 0; i < 16; i++) {
    const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: i < 12 ? 256 : 1024, timeout: 600 } })
    assert.equal(r.status, 201, r.text)
    made.push(r.json)
  }
  const [a, b, c] = await Promise.all([made[0], made[12], made[1]].map((s) => Sandbox.connect(s.sandboxID, opts)))
  assert.equal(await sh(c, 'sync; echo idle'), 'idle\n')
  m = (await d.api('GET', '/metrics')).text
  const perSandbox = (metric(m, 'sbx_storage_pool_bytes{kind="used"}') - used0) / made.length
  assert.ok(perSandbox <= 1024 * 1024, `an idle sandbox holds ${perSandbox} bytes of the pool`)

  // Past its own disk: EDQUOT from write(), what was written before stays, room again once freed.
  const small = (await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: 32, timeout: 600 } })).json
  made.push(small)
  const s32 = await Sandbox.connect(small.sandboxID, opts)
  const keep = await sh(s32, 'head -c 4M /dev/urandom > /home/user/keep && sha256sum < /home/user/keep')
  let out = await sh(s32, 'dd if=/dev/zero of=/home/user/big bs=1M count=64 2>&1; echo rc=$?')
  assert.match(out, /Disk quota exceeded/)
  assert.match(out, /rc=1/)
  assert.equal(await sh(s32, 'sha256sum < /home/user/keep'), keep, 'what it wrote before is intact')
  assert.equal(await sh(s32, 'rm /home/user/big && echo ok > /home/user/after && cat /home/user/after'), 'ok\n')

  // A full pool: the writer that fills it gets ENOSPC, and so does every other sandbox; data
  // written before reads back from the disk itself (O_DIRECT), the root stays read-write.
  const before = await sh(a, 'head -c 8M /dev/urandom > /home/user/data && sync && sha256sum < /home/user/data')
  out = await sh(b, 'dd if=/dev/zero of=/home/user/fill bs=1M count=1000 2>&1; echo rc=$?; sync')
  assert.match(out, /No space left on device/)
  assert.match(out, /rc=1/)
  out = await sh(c, 'head -c 4M /dev/zero 2>&1 >/home/user/more; echo rc=$?')
  assert.match(out, /No space left on device/)
  assert.match(out, /rc=1/)
  assert.equal(await sh(a, 'dd if=/home/user/data iflag=direct bs=1M 2>/dev/null | sha256sum'), before)
  assert.equal(await sh(a, 'awk \'$2 == "/" { split($4, o, ","); print o[1] }\' /proc/mounts'), 'rw\n')

  // Below the reserve, creates are refused with the reason, and counted.
  const refused = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 60 } })
  assert.equal(refused.status, 507, refused.text)
  assert.match(refused.json.message, /not enough space in the storage pool for a sandbox: \d+ MiB free, 32 MiB kept in reserve/)
  m = (await d.api('GET', '/metrics')).text
  assert.ok(metric(m, 'sbx_disk_refused_total') >= 1, m)

  // Freed: writes and creates go in again, everywhere.
  assert.equal(await sh(b, 'rm /home/user/fill && sync && echo freed'), 'freed\n')
  assert.equal(await sh(c, 'head -c 4M /dev/zero > /home/user/more && echo ok'), 'ok\n')
  const again = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 600 } })
  assert.equal(again.status, 201, again.text)
  made.push(again.json)

  // The state disk filled up by something else: the pool's blocks were reserved when it was
  // made, so writes in sandboxes still land, on disk.
  const filler = fillUp(mnt)
  const w = await sh(a, 'head -c 40M /dev/urandom > /home/user/data2 && sync && sha256sum < /home/user/data2 && ' +
    'dd if=/home/user/data2 iflag=direct bs=1M 2>/dev/null | sha256sum')
  const [written, direct] = w.trim().split('\n')
  assert.ok(written && direct === written, `what was written reads back from the disk: ${w}`)
  unlinkSync(filler)
  await finish()
})
