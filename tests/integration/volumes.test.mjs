// Volumes through the unmodified e2b SDK (Volume, volumeMounts) against a private sbxd with the
// real jailer and agent: named persistent file systems shared by sandboxes, kept after them
// and across an sbxd restart, their quota, and the content API's path rules.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, statfsSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSbxd, realTemplates, fakeTemplate, REAL, TOP } from './sbxd.mjs'

const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')
let d
let e2b
const opts = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key })
const mountedAt = (id) => readFileSync('/proc/self/mountinfo', 'utf8')
  .split('\n').some((l) => l.includes(`${d.state}/volumes/${id}/mnt `))

before(async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates })
  process.env.E2B_VOLUME_API_URL = d.url // what sbxd prints for the SDK's Volume file operations
  e2b = await import(SDK)
})
after(async () => {
  await d?.stop()
})

// A small volume through the raw API (sizeMB is sbx's extension; the SDK sends a name only).
async function smallVolume(name, sizeMB = 32) {
  const r = await d.api('POST', '/volumes', { body: { name, sizeMB } })
  assert.equal(r.status, 201, r.text)
  return new e2b.Volume(r.json.volumeID, r.json.name, r.json.token)
}

test('create, list, get and destroy; E2B errors for bad names, ids and sizes', async () => {
  const { Volume } = e2b
  const v = await Volume.create('data-1', opts())
  assert.match(v.volumeId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  assert.equal(v.name, 'data-1')
  assert.match(v.token, /^[0-9a-f]{48}$/)
  assert.deepEqual((await Volume.list(opts())).map((x) => x.name), ['data-1'])
  const info = await Volume.getInfo(v.volumeId, opts())
  assert.equal(info.token, v.token)
  const got = await d.api('GET', `/volumes/${v.volumeId}`)
  assert.equal(got.json.sizeMB, 1024)
  assert.equal(got.json.domain, undefined)

  await assert.rejects(Volume.create('data-1', opts()), /400: Volume with name 'data-1' already exists/)
  await assert.rejects(Volume.create('a b', opts()), /400: Invalid volume name/)
  let r = await d.api('GET', '/volumes/not-a-uuid')
  assert.deepEqual(r.json, { code: 400, message: 'Invalid volume ID' })
  r = await d.api('GET', '/volumes/00000000-0000-4000-8000-000000000000')
  assert.deepEqual(r.json, { code: 404, message: 'Volume not found' })
  await assert.rejects(Volume.getInfo('00000000-0000-4000-8000-000000000000', opts()),
    (e) => e instanceof e2b.VolumeNotFoundError)
  r = await d.api('POST', '/volumes', { body: { name: 'tiny', sizeMB: 8 } })
  assert.equal(r.status, 400)
  assert.match(r.json.message, /sizeMB must be an integer from 16/)
  r = await d.api('GET', '/volumes', { key: null })
  assert.equal(r.status, 401)

  assert.equal(await Volume.destroy(v.volumeId, opts()), true)
  assert.equal(await Volume.destroy(v.volumeId, opts()), false)
  assert.equal(existsSync(`${d.state}/volumes/${v.volumeId}`), false)
  assert.deepEqual(await Volume.list(opts()), [])

  // two creates of one name at once: one volume
  const both = await Promise.all([1, 2].map(() =>
    d.api('POST', '/volumes', { body: { name: 'race', sizeMB: 16 } })))
  assert.deepEqual(both.map((x) => x.status).sort(), [201, 400])
  const won = both.find((x) => x.status === 201).json
  assert.deepEqual((await Volume.list(opts())).map((x) => x.volumeId), [won.volumeID])
  assert.equal(await Volume.destroy(won.volumeID, opts()), true)
})

test('one volume shared by two sandboxes, kept after both are gone', async () => {
  const { Sandbox, Volume } = e2b
  const v = await Volume.create('shared', opts())
  const a = await Sandbox.create('base', { ...opts(), volumeMounts: { '/mnt/data': v } })
  const b = await Sandbox.create('base', { ...opts(), volumeMounts: { '/data': 'shared' } })
  try {
    // the sandbox user owns what it writes, as uid 1000 in both sandboxes whatever their slot
    let out = await a.commands.run('echo hello > /mnt/data/a.txt && stat -c %u:%g /mnt/data/a.txt')
    assert.equal(out.stdout.trim(), '1000:1000')
    out = await b.commands.run('cat /data/a.txt && stat -c %u /data/a.txt && echo from-b > /data/b.txt')
    assert.equal(out.stdout, 'hello\n1000\n')
    out = await a.commands.run('cat /mnt/data/b.txt')
    assert.equal(out.stdout, 'from-b\n')
    // mounted nosuid,nodev inside
    out = await a.commands.run("awk '$5 == \"/mnt/data\" {print $6}' /proc/self/mountinfo")
    assert.match(out.stdout, /nosuid/)
    assert.match(out.stdout, /nodev/)
    assert.deepEqual((await a.getInfo()).volumeMounts, [{ name: 'shared', path: '/mnt/data' }])
    const listed = await Sandbox.list({ ...opts() }).nextItems()
    assert.deepEqual(listed.find((s) => s.sandboxId === b.sandboxId).volumeMounts,
      [{ name: 'shared', path: '/data' }])
    assert.equal(mountedAt(v.volumeId), true)

    await assert.rejects(Volume.destroy(v.volumeId, opts()), /409: volume 'shared' is in use/)
    await a.kill()
    await assert.rejects(Volume.destroy(v.volumeId, opts()), /409/)
  } finally {
    await a.kill().catch(() => {})
    await b.kill().catch(() => {})
  }
  assert.equal(mountedAt(v.volumeId), false, 'unmounted with its last user')
  // no sandbox runs: the file operations read it on the host
  assert.equal(await v.readFile('/a.txt'), 'hello\n')
  const c = await Sandbox.create('base', { ...opts(), volumeMounts: { '/home/user/v': 'shared' } })
  try {
    assert.equal((await c.commands.run('cat /home/user/v/a.txt /home/user/v/b.txt')).stdout,
      'hello\nfrom-b\n')
  } finally {
    await c.kill()
  }
  assert.equal(await Volume.destroy(v.volumeId, opts()), true)
})

test('volumeMounts refused in E2B\'s shape: unknown volume, bad or reused paths', async () => {
  const v = await smallVolume('m1')
  try {
    const bad = [
      [[{ name: 'nope', path: '/x' }], /volume mount #0: volume 'nope' not found/],
      [[{ name: 'm1', path: 'rel' }], /volume mount #0: path must be absolute/],
      [[{ name: 'm1', path: '/a/../b' }], /volume mount #0: path must not contain any '.' or '..'/],
      [[{ name: 'm1', path: '/proc/x' }], /volume mount #0: path '\/proc\/x' is reserved/],
      [[{ name: 'm1', path: '/a' }, { name: 'm1', path: '/a' }], /volume mount #1: path '\/a' is already used/],
      ['x', /volumeMounts must be an array/],
    ]
    for (const [volumeMounts, re] of bad) {
      const r = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'base', volumeMounts } })
      assert.equal(r.status, 400, r.text)
      assert.match(r.json.message, re)
    }
    const l = await d.api('GET', '/v2/sandboxes')
    assert.deepEqual(l.json, [])
  } finally {
    await e2b.Volume.destroy(v.volumeId, opts())
  }
})

test('the size is a quota: a full volume is ENOSPC inside the sandbox', async () => {
  const v = await smallVolume('small', 32)
  const s = await e2b.Sandbox.create('base', { ...opts(), volumeMounts: { '/v': v } })
  try {
    const out = await s.commands.run('dd if=/dev/zero of=/v/big bs=1M count=64 2>&1; du -m /v/big',
      { onStderr: () => {} }).catch((e) => e)
    assert.match(out.stdout, /No space left on device/)
    const mb = Number(out.stdout.trim().split('\n').pop().split('\t')[0])
    assert.ok(mb <= 32, `${mb} MiB written into a 32 MiB volume`)
  } finally {
    await s.kill()
  }
  // the content API sees the full volume too
  await assert.rejects(v.writeFile('/more', new Uint8Array(8 << 20)), /507/)
  await e2b.Volume.destroy(v.volumeId, opts())
})

test('Volume file operations without a sandbox, kept inside the volume', async () => {
  const { Volume, VolumePathNotFoundError, VolumeFileType } = e2b
  const v = await smallVolume('files')
  try {
    let st = await v.writeFile('/notes/a.txt', 'alpha', { force: true })
    assert.equal(st.type, VolumeFileType.FILE)
    assert.equal(st.path, '/notes/a.txt')
    assert.equal(st.size, 5)
    assert.equal(st.uid, 9090)
    assert.equal(st.mode, 0o666)
    assert.ok(st.mtime instanceof Date && !isNaN(st.mtime))
    assert.equal(await v.readFile('notes/a.txt'), 'alpha')
    assert.deepEqual(await v.readFile('/notes/a.txt', { format: 'bytes' }), new TextEncoder().encode('alpha'))
    await assert.rejects(v.writeFile('/notes/a.txt', 'beta'), /409/) // exists, no force
    st = await v.writeFile('/notes/a.txt', 'beta', { force: true, uid: 1000, gid: 1000, mode: 0o640 })
    assert.deepEqual([st.size, st.uid, st.gid, st.mode], [4, 1000, 1000, 0o640])

    st = await v.makeDir('/d1/d2', { force: true })
    assert.equal(st.type, VolumeFileType.DIRECTORY)
    await assert.rejects(v.makeDir('/d1'), /409/)
    await assert.rejects(v.makeDir('/x/y'), (e) => e instanceof VolumePathNotFoundError)
    const names = (await v.list('/', { depth: 2 })).map((e) => e.path)
    assert.deepEqual(names, ['/d1', '/d1/d2', '/notes', '/notes/a.txt'])
    await assert.rejects(v.list('/', { depth: 11 }), /400/)
    assert.equal(await v.exists('/d1/d2'), true)
    assert.equal(await v.exists('/d1/zz'), false)
    st = await v.updateMetadata('/d1', { mode: 0o700, uid: 1000 })
    assert.deepEqual([st.mode, st.uid], [0o700, 1000])
    await v.remove('/d1')
    assert.equal(await v.exists('/d1'), false)
    await assert.rejects(v.remove('/'), /400: cannot delete root/)
    await assert.rejects(v.readFile('/nope'), (e) => e instanceof VolumePathNotFoundError)

    // a wrong token is refused; an API key is accepted
    const wrong = new Volume(v.volumeId, v.name, 'f'.repeat(48))
    await assert.rejects(wrong.readFile('/notes/a.txt'), /Unauthorized/)
    const byKey = new Volume(v.volumeId, v.name, d.key)
    assert.equal(await byKey.readFile('/notes/a.txt'), 'beta')

    // what a sandbox leaves there cannot lead the host out of the volume
    const s = await e2b.Sandbox.create('base', { ...opts(), volumeMounts: { '/v': v } })
    try {
      await s.commands.run('ln -s / /v/root && ln -s /etc/passwd /v/pw && ln -s ../../../.. /v/up && mkfifo /v/fifo')
      for (const p of ['/root/etc/passwd', '/pw', '/up/etc/passwd', '../../../../etc/passwd']) {
        await assert.rejects(v.readFile(p), (e) => e instanceof VolumePathNotFoundError, p)
      }
      await assert.rejects(v.readFile('/fifo'), /400: path '\/fifo' is not a regular file/)
      await assert.rejects(v.writeFile('/fifo', 'x', { force: true }), /400: path '\/fifo' is not a regular file/)
      // a write through an absolute symlink lands inside the volume, as the sandbox sees it
      await v.writeFile('/root/etc/planted', 'x', { force: true })
      assert.equal(existsSync('/etc/planted'), false)
      assert.equal((await s.commands.run('cat /v/etc/planted')).stdout, 'x')
      assert.equal((await v.getInfo('/pw')).type, VolumeFileType.SYMLINK)
      assert.equal((await v.getInfo('/pw')).target, '/etc/passwd')
      await v.remove('/root') // the link, not what it points to
      assert.equal((await s.commands.run('test -d /v/etc && echo kept')).stdout, 'kept\n')
    } finally {
      await s.kill()
    }
  } finally {
    await Volume.destroy(v.volumeId, opts())
  }
})

test('volumes and their mounts survive an sbxd restart', async () => {
  const { Sandbox, Volume } = e2b
  const v = await smallVolume('durable')
  const idle = await smallVolume('idle')
  await idle.writeFile('/kept', 'still here', { force: true })
  const s = await Sandbox.create('base', { ...opts(), volumeMounts: { '/v': v } })
  await s.commands.run('echo before > /v/f')
  const id = s.sandboxId

  // what a crash mid-create leaves: a volume dir without its record
  const orphan = `${d.state}/volumes/11111111-1111-4111-8111-111111111111`
  mkdirSync(`${orphan}/mnt`, { recursive: true })
  writeFileSync(`${orphan}/disk.img`, 'x')

  const old = d
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old })
  assert.equal(existsSync(orphan), false)
  process.env.E2B_VOLUME_API_URL = d.url
  const again = await Sandbox.connect(id, opts())
  assert.equal((await again.commands.run('cat /v/f && echo after >> /v/f')).stdout, 'before\n')
  assert.deepEqual((await Volume.list(opts())).map((x) => x.name).sort(), ['durable', 'idle'])
  // still counted as in use by the adopted sandbox; the idle one is not mounted
  await assert.rejects(Volume.destroy(v.volumeId, opts()), /409/)
  assert.equal(mountedAt(idle.volumeId), false)
  const idle2 = await Volume.connect(idle.volumeId, opts())
  assert.equal(await idle2.readFile('/kept'), 'still here')
  await again.kill()
  const v2 = await Volume.connect(v.volumeId, opts())
  assert.equal(await v2.readFile('/f'), 'before\nafter\n')
  assert.equal(await Volume.destroy(v.volumeId, opts()), true)
  assert.equal(await Volume.destroy(idle.volumeId, opts()), true)
  assert.equal(mountedAt(v.volumeId), false)
})

test('with image disks, volumes and sandbox disks share one admission of the state disk (507)', async () => {
  // Room for about 300 MiB above the reserve, promised twice over (sparse images): 600 MiB.
  // (With the storage pool, sandbox disks are admitted by the pool's free space instead.)
  const fs = statfsSync(tmpdir())
  const freeMB = Math.floor(fs.bavail * fs.bsize / 2 ** 20)
  const a = await startSbxd({ prepare: (st) => fakeTemplate(st),
    args: ['--disk', 'image', '--disk-reserve', String(freeMB - 300), '--disk-overcommit', '2'] })
  try {
    let r = await a.api('POST', '/volumes', { body: { name: 'first', sizeMB: 350 } })
    assert.equal(r.status, 201, r.text)
    r = await a.api('POST', '/volumes', { body: { name: 'second', sizeMB: 800 } })
    assert.equal(r.status, 507, r.text)
    assert.match(r.json.message, /not enough space on the host's state disk for a 800 MiB volume/)
    assert.match(r.json.message, /promised to 1 other sandbox disks and volumes/)
    // the volume's 350 MiB count against a sandbox disk as well (350 alone would fit)
    r = await a.api('POST', '/v2/sandboxes', { body: { templateID: 'base', diskSizeMB: 350 } })
    assert.equal(r.status, 507, r.text)
    assert.match(r.json.message, /350 MiB sandbox disk: .* promised to 1 other sandbox disks and volumes/)
    const l = await a.api('GET', '/volumes')
    assert.deepEqual(l.json.map((v) => v.name), ['first'])
    r = await a.api('DELETE', `/volumes/${l.json[0].volumeID}`)
    assert.equal(r.status, 204)
  } finally {
    await a.stop()
  }
})

// Last: the fork leaves snapshot layers that sbxd's garbage collection removes at its next start,
// which would slow the restart above past the harness's patience.
test('a sandbox paused to disk keeps its volume and gets it back when it resumes', async () => {
  const { Sandbox, Volume } = e2b
  const v = await smallVolume('paused')
  const s = await Sandbox.create('base', { ...opts(), volumeMounts: { '/v': v } })
  try {
    await s.commands.run('echo one > /v/f')
    let r = await d.api('POST', `/sandboxes/${s.sandboxId}/pause`, { body: { memory: false } })
    assert.equal(r.status, 204, r.text)
    // persisted: no processes, but the volume stays held
    await assert.rejects(Volume.destroy(v.volumeId, opts()), /409/)
    assert.equal(await v.readFile('/f'), 'one\n')
    const again = await Sandbox.connect(s.sandboxId, opts())
    assert.equal((await again.commands.run('cat /v/f; echo two >> /v/f; cat /v/f')).stdout,
      'one\none\ntwo\n')
    // a fork mounts the same volume, not a copy of it
    r = await d.api('POST', `/sandboxes/${s.sandboxId}/fork`, { body: { count: 1 } })
    assert.equal(r.status, 201, r.text)
    const fork = await Sandbox.connect(r.json[0].sandbox.sandboxID, opts())
    try {
      assert.deepEqual((await fork.getInfo()).volumeMounts, [{ name: 'paused', path: '/v' }])
      await fork.commands.run('echo from-fork >> /v/f')
      assert.equal((await again.commands.run('tail -n 1 /v/f')).stdout, 'from-fork\n')
    } finally {
      await fork.kill()
    }
  } finally {
    await s.kill()
  }
  assert.equal(await Volume.destroy(v.volumeId, opts()), true)
})
