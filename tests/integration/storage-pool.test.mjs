// The storage pool (server/storage/README.md, "Thin storage") through the real SDK and CLI:
//  - snapshots copy nothing: a snapshot is a read-only subvolume, a restore and each fork start
//    their disk as a writable snapshot of it, holding the data without owning it, and deleting
//    the snapshot leaves them whole;
//  - a state dir made before the pool keeps its sandboxes on their images after the restart,
//    new sandboxes go to the pool, and an image sandbox's snapshot restores onto the pool;
//  - `sbx storage` shows the pool and each disk, `sbx storage grow` grows it while sandboxes
//    run, and `sbx sandbox list` shows what each disk holds.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, REAL } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false
const SBX = join(process.env.SBX_TEST_BUILD || 'build', 'cli/sbx')

let d
after(async () => { await d?.stop() })

const sdk = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key })
const run = async (sbx, cmd) => (await sbx.commands.run(cmd, { timeoutMs: 120_000 })).stdout
const storage = async () => (await d.api('GET', '/v1/storage', { headers: { Authorization: `Bearer ${d.key}` }, key: null })).json
const diskOf = (st, id) => st.sandboxes.find((s) => s.id === id)
const cli = (...args) => spawnSync(SBX, args, { env: { ...process.env, SBX_URL: d.url, SBX_API_KEY: d.key }, encoding: 'utf8' })

test('pool snapshots copy nothing: restores and forks start from them and outlive them', { skip, timeout: 300_000 }, async (t) => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, args: ['--storage-pool', '2G'] })
  const src = await Sandbox.create('base', { ...sdk(), timeoutMs: 600_000 })
  await src.commands.run('rm /etc/debian_version', { user: 'root' }) // a whiteout in the upper
  const sum = await run(src, 'head -c 64M /dev/urandom > /home/user/data && sync && sha256sum < /home/user/data')
  const t0 = Date.now()
  const snap = await src.createSnapshot()
  t.diagnostic(`first snapshot of this template (its layers are hashed into the store once), 64 MiB held: ${Date.now() - t0} ms`)
  const tpl = JSON.parse(readFileSync(join(d.state, 'templates', snap.snapshotId, 'template.json'), 'utf8'))
  assert.equal(tpl.upper, snap.snapshotId, 'the snapshot is a pool subvolume, not a copied layer')
  assert.ok(existsSync(join(d.state, 'pool/snapshots', snap.snapshotId, 'upper/home/user/data')))
  assert.ok(tpl.layers.every((l) => /^sha256:[0-9a-f]{64}$/.test(l)), 'the lower layers as before')

  // a restore holds the data, shares it, and writes its own without touching the source
  const c = await Sandbox.create(snap.snapshotId, { ...sdk(), timeoutMs: 600_000 })
  assert.equal(await run(c, 'sha256sum < /home/user/data'), sum)
  assert.equal(await run(c, 'test -e /etc/debian_version && echo there || echo gone'), 'gone\n', 'whiteouts carried')
  await run(c, 'echo mine > /home/user/mine && sync')
  assert.equal(await run(src, 'test -e /home/user/mine && echo leaked || echo own'), 'own\n')
  const f = await d.api('POST', `/sandboxes/${src.sandboxId}/fork`, { body: { count: 3, timeout: 600 } })
  assert.equal(f.status, 201, f.text)
  const ids = f.json.map((x) => x.sandbox?.sandboxID)
  assert.equal(ids.filter(Boolean).length, 3, f.text)
  for (const id of ids) {
    const fk = await Sandbox.connect(id, sdk())
    assert.equal(await run(fk, 'sha256sum < /home/user/data'), sum)
  }
  await run(c, 'sync')
  // what each disk references includes the 64 MiB; what it holds alone does not (qgroups are
  // as of the pool's last commit: sync above, and again until they show)
  let st
  for (let i = 0; i < 40; i++) {
    st = await storage()
    if (diskOf(st, ids[2])?.referenced >= 64 << 20 && diskOf(st, c.sandboxId)?.referenced >= 64 << 20) break
    await run(c, 'sync')
  }
  assert.equal(st.backend, 'pool')
  for (const id of [c.sandboxId, ...ids]) {
    const u = diskOf(st, id)
    assert.ok(u.referenced >= 64 << 20, `${id} references its data: ${JSON.stringify(u)}`)
    assert.ok(u.exclusive < 8 << 20, `${id} shares it, owns almost nothing: ${JSON.stringify(u)}`)
    assert.equal(u.limit, u.diskMB * 1024 * 1024)
  }

  // deleting the snapshot deletes its subvolume; the restore keeps its files
  await Sandbox.deleteSnapshot(snap.snapshotId, sdk())
  assert.ok(!existsSync(join(d.state, 'pool/snapshots', snap.snapshotId)), 'subvolume deleted')
  assert.equal(await run(c, 'sha256sum < /home/user/data; cat /home/user/mine'), `${sum}mine\n`)
  for (const id of [src.sandboxId, c.sandboxId, ...ids]) await d.api('DELETE', `/sandboxes/${id}`)
  const left = execFileSync('ls', [join(d.state, 'pool/sandboxes')]).toString().trim()
  assert.equal(left, '', 'every sandbox subvolume went with its sandbox')
  await d.stop()
  d = undefined
})

test('a state dir made before the pool: its sandboxes stay on their images, new ones go to the pool', { skip, timeout: 300_000 }, async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, args: ['--disk', 'image'] })
  const old = await Sandbox.create('base', { ...sdk(), timeoutMs: 600_000 })
  await run(old, 'echo before > /home/user/old')
  const image = join(d.state, 'sandboxes', old.sandboxId, 'disk.img')
  assert.ok(existsSync(image))
  const prev = d
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: prev, args: ['--storage-pool', '1G'] })
  const again = await Sandbox.connect(old.sandboxId, sdk())
  assert.equal(await run(again, 'cat /home/user/old; echo after >> /home/user/old; cat /home/user/old'), 'before\nbefore\nafter\n')
  const fresh = await Sandbox.create('base', { ...sdk(), timeoutMs: 600_000 })
  const st = await storage()
  assert.equal(st.backend, 'pool')
  assert.equal(diskOf(st, old.sandboxId).referenced, undefined, 'the old one is still on its image')
  assert.ok(diskOf(st, fresh.sandboxId).limit > 0, 'the new one is on the pool')
  assert.ok(existsSync(join(d.state, 'pool/sandboxes', fresh.sandboxId)))
  // the image sandbox's snapshot is a store layer, and restores onto the pool
  const snap = await again.createSnapshot()
  const tpl = JSON.parse(readFileSync(join(d.state, 'templates', snap.snapshotId, 'template.json'), 'utf8'))
  assert.equal(tpl.upper, undefined)
  const r = await Sandbox.create(snap.snapshotId, { ...sdk(), timeoutMs: 600_000 })
  assert.equal(await run(r, 'cat /home/user/old'), 'before\nafter\n')
  assert.ok(existsSync(join(d.state, 'pool/sandboxes', r.sandboxId)))
  await Sandbox.deleteSnapshot(snap.snapshotId, sdk())
  assert.equal((await d.api('DELETE', `/sandboxes/${old.sandboxId}`)).status, 204)
  assert.ok(!existsSync(image), 'its image went with it')
  const loops = execFileSync('losetup', ['-l', '-n', '-O', 'BACK-FILE']).toString()
  assert.ok(!loops.includes(image), 'and its loop device')
})

test('sbx storage shows the pool and each disk; sbx storage grow grows it while sandboxes run', { skip, timeout: 120_000 }, async () => {
  const s = await Sandbox.create('base', { ...sdk(), timeoutMs: 600_000 })
  await run(s, 'head -c 8M /dev/urandom > /home/user/x && sync')
  let out = cli('--json', 'storage')
  assert.equal(out.status, 0, out.stderr)
  const before = JSON.parse(out.stdout)
  assert.equal(before.backend, 'pool')
  assert.equal(before.pool.kind, 'image')
  assert.equal(before.pool.imageBytes, 2 ** 30)
  out = cli('storage')
  assert.match(out.stdout, /storage pool .*\/pool \(image\)\n {2}size \d+ MiB, used \d+ MiB, free \d+ MiB, reserve \d+ MiB\n/)
  assert.ok(out.stdout.includes(s.sandboxId), out.stdout)
  out = cli('sandbox', 'list')
  assert.match(out.stdout, new RegExp(`${s.sandboxId} +base +running .* \\d+\\.\\d/1024 MiB`), out.stdout)

  out = cli('storage', 'grow', '512M')
  assert.equal(out.status, 1)
  assert.match(out.stderr, /that large already/)
  out = cli('storage', 'grow', 'lots')
  assert.equal(out.status, 2)
  out = cli('--json', 'storage', 'grow', '2G')
  assert.equal(out.status, 0, out.stderr)
  const after = JSON.parse(out.stdout)
  assert.equal(after.pool.imageBytes, 2 * 2 ** 30)
  assert.ok(after.pool.size >= before.pool.size + (900 << 20), `${before.pool.size} → ${after.pool.size}`)
  assert.equal(await run(s, 'head -c 4M /dev/urandom > /home/user/y && echo still'), 'still\n')
  const bad = await d.api('POST', '/v1/storage/grow', { headers: { Authorization: `Bearer ${d.key}` }, key: null, body: { size: -1 } })
  assert.equal(bad.status, 400)
  assert.equal(bad.json.error.code, 'bad_request')
})

test('100 concurrent SDK creates all succeed, each runs a command, and an idle one holds at most 1 MiB of the pool', { skip, timeout: 300_000 }, async (t) => {
  const N = 100 // bench/storage-bench.mjs concurrent runs the full 300
  const metric = async (kind) => Number((await d.api('GET', '/metrics')).text.match(new RegExp(`^sbx_storage_pool_bytes\\{kind="${kind}"\\} (\\d+)`, 'm'))[1])
  const used0 = await metric('used')
  const t0 = Date.now()
  const res = await Promise.allSettled(Array.from({ length: N }, async () => {
    const s = await Sandbox.create('base', { ...sdk(), timeoutMs: 600_000 })
    return [s, (await s.commands.run('echo ok')).stdout]
  }))
  const failed = res.filter((r) => r.status === 'rejected').map((r) => String(r.reason?.message || r.reason))
  t.diagnostic(`${N} concurrent creates + echo in ${Date.now() - t0} ms`)
  assert.deepEqual(failed, [], 'every create succeeded')
  for (const r of res) assert.equal(r.value[1], 'ok\n')
  await res[0].value[0].commands.run('sync')
  const per = (await metric('used') - used0) / N
  t.diagnostic(`pool used per idle sandbox: ${(per / 1024).toFixed(1)} KiB`)
  assert.ok(per <= 1024 * 1024, `an idle sandbox holds ${per} bytes of the pool`)
  await Promise.all(res.map((r) => r.value[0].kill()))
})
