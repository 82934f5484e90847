// The host's state disk holds every sandbox's disk image. A sandbox disk is promised only when
// the state disk can hold it (storage/disk-image.h, "Admission"):
//  - creates past the free space (less the reserve) get 507 naming the shortage, and the refusal
//    shows in /metrics;
//  - with the state disk filled up by something else, writes inside a running sandbox still
//    land: its disk was preallocated (no "potential data loss" on its loop device);
//  - a sandbox filling its own disk gets ENOSPC;
//  - --disk-overcommit R admits R times as much, as sparse images.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, openSync, writeSync, closeSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, REAL } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

const DISK_MB = 64
let d
let mnt
let img
after(async () => {
  if (d) {
    // kill what is left, then stop; the state dir is a mount point, removed below
    const l = await d.api('GET', '/v2/sandboxes').catch(() => ({ json: [] }))
    for (const s of l.json || []) await d.api('DELETE', `/sandboxes/${s.sandboxID}`).catch(() => {})
    await d.stop({ keep: true }).catch(() => {})
  }
  if (mnt) {
    try { execFileSync('umount', ['-l', mnt]) } catch {}
    rmSync(mnt, { recursive: true, force: true })
  }
  if (img) rmSync(img, { force: true })
})

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

function fill(dir) {
  const p = join(dir, 'filler')
  const fd = openSync(p, 'w')
  const chunk = Buffer.alloc(1 << 20, 1)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (e) {
    assert.equal(e.code, 'ENOSPC')
  } finally {
    closeSync(fd)
  }
  return p
}

const metric = (text, name) => {
  const m = text.match(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm'))
  return m ? Number(m[1]) : undefined
}

test('state disk: creates past its space get 507; writes in running sandboxes never get lost', { skip, timeout: 300_000 }, async () => {
  const state = smallStateDisk()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: { dir: mnt }, args: ['--disk-reserve', '32'] })
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
  const filler = fill(mnt)
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
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: { dir: mnt }, args: ['--disk-reserve', '32', '--disk-overcommit', '4'] })
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
})
