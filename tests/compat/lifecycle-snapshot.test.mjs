// Snapshots, fork and the layer store through the npm `e2b` SDK (2.51.0), plus the escape
// battery's clone hygiene (G1-G3): fresh tokens, nothing secret in a snapshot, fresh kernel
// randomness in every clone.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { Sandbox, NotFoundError } from 'e2b'
import { api, STATE, waitFor, sleep } from '../lib/env.mjs'

const made = []
const snaps = []
after(async () => {
  for (const s of made) await s.kill().catch(() => {})
  for (const id of snaps) await Sandbox.deleteSnapshot(id).catch(() => {})
})

async function create(t, opts) {
  const s = t ? await Sandbox.create(t, opts) : await Sandbox.create(opts)
  made.push(s)
  return s
}

const SECRET = 'hunter2-' + Math.random().toString(16).slice(2)

test('snapshot → create(snapshotId): identical files, deletions, links, modes, owners', async () => {
  const src = await create(undefined, { envs: { MY_SECRET: SECRET } })
  await src.files.write('/home/user/a.txt', 'hello snapshot')
  await src.files.write('/home/user/meta.txt', 'm', { metadata: { owner: 'me' } })
  await src.commands.run([
    'mkdir -p /home/user/d/e && printf "x\\0y" > /home/user/d/e/bin && chmod 640 /home/user/d/e/bin',
    'ln -s ../a.txt /home/user/d/link && dd if=/dev/urandom of=/home/user/big bs=1k count=300 2>/dev/null',
    'mkfifo /home/user/fifo && md5sum /home/user/big > /home/user/big.md5 && ln /home/user/big /home/user/d/big-again',
  ].join(' && '))
  await src.commands.run('rm -rf /etc/skel /etc/hostname && mkdir -p /opt/x && touch /opt/x/root-owned', { user: 'root' })

  const snap = await src.createSnapshot()
  snaps.push(snap.snapshotId)
  assert.match(snap.snapshotId, /^snap-[0-9a-f]+$/)
  assert.deepEqual(snap.names, [])
  assert.equal((await src.getInfo()).state, 'running', 'the source runs on after its snapshot')

  const s = await create(snap.snapshotId)
  const r = await s.commands.run([
    'cat /home/user/a.txt; echo', 'stat -c "%a %U %G" /home/user/d/e/bin', 'od -c /home/user/d/e/bin | head -1',
    'readlink /home/user/d/link', 'md5sum -c /home/user/big.md5 >/dev/null && echo md5ok', 'test -p /home/user/fifo && echo fifo',
    'test -e /etc/skel || echo skel-gone', 'test -e /etc/hostname || echo hostname-gone', 'stat -c %U /opt/x/root-owned',
    'test -e /etc/passwd && echo passwd-there', 'test /home/user/big -ef /home/user/d/big-again && stat -c %h /home/user/big',
  ].join('; '))
  assert.equal(r.stdout, ['hello snapshot', '640 user user', '0000000   x  \\0   y', '../a.txt', 'md5ok', 'fifo',
    'skel-gone', 'hostname-gone', 'root', 'passwd-there', '2', ''].join('\n'))
  // file metadata (user.* xattrs) survives the snapshot
  assert.deepEqual((await s.files.getInfo('/home/user/meta.txt')).metadata, { owner: 'me' })
  const info = await s.getInfo()
  assert.equal(info.templateId, snap.snapshotId)
  assert.notEqual(s.sandboxId, src.sandboxId)
})

test('G3 + G2: a clone gets its own token; no env secret or token is in the snapshot', async () => {
  const src = await create(undefined, { envs: { MY_SECRET: SECRET } })
  await src.commands.run('echo data > /home/user/data')
  const srcInfo = await api('GET', `/sandboxes/${src.sandboxId}`)
  const snap = await src.createSnapshot()
  snaps.push(snap.snapshotId)
  const s = await create(snap.snapshotId)
  const cInfo = await api('GET', `/sandboxes/${s.sandboxId}`)
  assert.notEqual(cInfo.json.envdAccessToken, srcInfo.json.envdAccessToken)
  // the clone's env does not carry the source's env vars
  assert.equal((await s.commands.run('echo "[$MY_SECRET]"')).stdout, '[]\n')
  // nothing in the clone's filesystem holds the secret or the source's token
  const grep = await s.commands.run(
    `grep -rl --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr --exclude-dir=dev -e '${SECRET}' -e '${srcInfo.json.envdAccessToken}' / 2>/dev/null; true`,
    { user: 'root' })
  assert.equal(grep.stdout, '')
  // and the layer store on the host holds neither
  const store = `${STATE}/layers`
  for (const l of existsSync(store) ? readdirSync(store) : []) {
    if (!/^[0-9a-f]{64}$/.test(l)) continue
    const { execFileSync } = await import('node:child_process')
    let out = ''
    try { out = execFileSync('grep', ['-rl', '-e', SECRET, '-e', srcInfo.json.envdAccessToken, `${store}/${l}`]).toString() } catch {}
    assert.equal(out, '', `layer ${l} holds a secret`)
  }
})

test('fork: N sandboxes from one snapshot, same files, fresh ids, tokens and randomness (G1)', async () => {
  const src = await create(undefined, { metadata: { who: 'forked' } })
  await src.files.write('/home/user/state.txt', 'before fork')
  const forks = await src.fork({ count: 2 })
  assert.equal(forks.length, 2)
  for (const f of forks) { assert.ok(!(f instanceof Error), String(f)); made.push(f) }
  const ids = new Set([src.sandboxId, ...forks.map((f) => f.sandboxId)])
  assert.equal(ids.size, 3)
  const rnd = []
  for (const f of forks) {
    assert.equal(await f.files.read('/home/user/state.txt'), 'before fork')
    rnd.push((await f.commands.run('head -c 16 /dev/urandom | od -An -tx1; hostname')).stdout)
  }
  assert.notEqual(rnd[0], rnd[1], 'kernel randomness and hostnames differ between clones')
  // boot_id: each sandbox has its own, fresh at every start (the jailer binds one over the
  // kernel's), so clones of one snapshot never share it; uuid is the kernel's, fresh per read
  const { readFileSync } = await import('node:fs')
  const hostBoot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  const boots = []
  for (const f of [src, ...forks]) {
    const [boot, u1, u2] = (await f.commands.run('cat /proc/sys/kernel/random/boot_id /proc/sys/kernel/random/uuid /proc/sys/kernel/random/uuid')).stdout.trim().split('\n')
    assert.match(boot, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.notEqual(u1, u2)
    boots.push(boot)
  }
  assert.equal(new Set([hostBoot, ...boots]).size, 4, 'host, source and both clones: four boot_ids')
  const w = await forks[0].commands.run('echo x > /proc/sys/kernel/random/boot_id 2>&1; cat /proc/sys/kernel/random/boot_id', { user: 'root' }).catch((e) => e.result)
  assert.ok(w.stdout.includes(boots[1]), 'read-only')
  const tokens = await Promise.all(forks.map(async (f) => (await api('GET', `/sandboxes/${f.sandboxId}`)).json.envdAccessToken))
  assert.notEqual(tokens[0], tokens[1])
  // fork's own snapshot is not listed
  const listed = await Sandbox.listSnapshots({ sandboxId: src.sandboxId }).nextItems()
  assert.deepEqual(listed, [])
  // the forks keep running after the source goes
  await src.kill()
  assert.equal(await forks[0].files.read('/home/user/state.txt'), 'before fork')
})

test('fork count: E2B\'s bounds, 1 to 100, and a clear 400 outside them', async () => {
  const src = await create()
  for (const count of [0, 101, 2.5, 'x']) {
    const r = await api('POST', `/sandboxes/${src.sandboxId}/fork`, { body: { count } })
    assert.equal(r.status, 400, `count ${count}`)
    assert.equal(r.json.message, 'count must be between 1 and 100')
  }
})

test('named snapshot, listSnapshots with filters and pagination, delete (then 404 / false)', async () => {
  const src = await create()
  const name = 'snapname-' + Math.random().toString(16).slice(2, 10)
  const a = await src.createSnapshot({ name })
  snaps.push(a.snapshotId)
  assert.deepEqual(a.names, [name])
  const b = await src.createSnapshot()
  snaps.push(b.snapshotId)
  const mine = await Sandbox.listSnapshots({ sandboxId: src.sandboxId }).nextItems()
  assert.deepEqual(mine.map((x) => x.snapshotId).sort(), [a.snapshotId, b.snapshotId].sort())
  const byName = await Sandbox.listSnapshots({ name }).nextItems()
  assert.deepEqual(byName.map((x) => x.snapshotId), [a.snapshotId])
  const p = Sandbox.listSnapshots({ sandboxId: src.sandboxId, limit: 1 })
  const p1 = await p.nextItems()
  assert.equal(p1.length, 1)
  assert.ok(p.hasNext)
  const p2 = await p.nextItems()
  assert.equal(p2.length, 1)
  assert.notEqual(p1[0].snapshotId, p2[0].snapshotId)
  // the name works as a template too
  const byAlias = await create(name)
  assert.equal(await byAlias.commands.run('echo ok').then((r) => r.stdout), 'ok\n')
  // a name that exists is refused
  const dup = await api('POST', `/sandboxes/${src.sandboxId}/snapshots`, { body: { name } })
  assert.equal(dup.status, 409)
  assert.equal(await Sandbox.deleteSnapshot(a.snapshotId), true)
  assert.equal(await Sandbox.deleteSnapshot(a.snapshotId), false)
  await assert.rejects(Sandbox.create(name), /not found/i)
  // built templates cannot be deleted through this route
  const base = await api('DELETE', '/templates/base')
  assert.equal(base.status, 400)
})

test('listSnapshots pages by cursor: deleting a listed snapshot does not skip the next one', async () => {
  const src = await create()
  const ids = []
  for (let i = 0; i < 3; i++) {
    const x = await src.createSnapshot()
    snaps.push(x.snapshotId)
    ids.push(x.snapshotId)
  }
  const q = `/snapshots?sandboxID=${src.sandboxId}&limit=1`
  const p1 = await api('GET', q)
  assert.equal(p1.json.length, 1)
  const token = p1.headers.get('x-next-token')
  assert.match(token, /^\d+\.snap-[0-9a-f]+$/)
  assert.equal(await Sandbox.deleteSnapshot(p1.json[0].snapshotID), true)
  const rest = []
  for (let tok = token; tok;) {
    const page = await api('GET', `${q}&nextToken=${tok}`)
    rest.push(...page.json.map((x) => x.snapshotID))
    tok = page.headers.get('x-next-token')
  }
  assert.deepEqual(rest.sort(), ids.filter((id) => id !== p1.json[0].snapshotID).sort())
  assert.equal((await api('GET', '/snapshots?nextToken=1')).status, 400)
})

test('layers are content-addressed: two identical snapshots share one layer; gc drops unused', async () => {
  const src = await create()
  await src.files.write('/home/user/same.txt', 'same')
  const before = new Set(readdirSync(`${STATE}/layers`).filter((l) => /^[0-9a-f]{64}$/.test(l)))
  const a = await src.createSnapshot()
  await src.pause()
  const b = await src.createSnapshot() // paused: taken as is, state kept paused
  assert.equal((await src.getInfo()).state, 'paused')
  const after = readdirSync(`${STATE}/layers`).filter((l) => /^[0-9a-f]{64}$/.test(l) && !before.has(l))
  assert.equal(after.length <= 1, true, `one new upper layer at most, got ${after}`)
  await Sandbox.deleteSnapshot(a.snapshotId)
  await Sandbox.deleteSnapshot(b.snapshotId)
  await src.kill()
  made.splice(made.indexOf(src), 1)
  // no template nor sandbox references it any more: gone at the next gc (snapshot delete runs one)
  const c = await create()
  const x = await c.createSnapshot()
  await Sandbox.deleteSnapshot(x.snapshotId)
  for (const l of after) assert.ok(!existsSync(`${STATE}/layers/${l}`), `layer ${l} collected`)
})

test('a sparse file is snapshotted by its data: holes stay holes, the bytes round-trip', async (t) => {
  const src = await create() // a 1 GiB disk: the 5 GiB file is almost all hole
  const G5 = 5 * 1024 * 1024 * 1024
  await src.commands.run([
    'truncate -s 5G /home/user/sparse',
    'printf head | dd of=/home/user/sparse conv=notrunc 2>/dev/null',
    `printf tail | dd of=/home/user/sparse bs=1 seek=${G5 - 4} conv=notrunc 2>/dev/null`,
    'dd if=/dev/zero of=/home/user/zeros bs=1M count=2 2>/dev/null', // written zeros: data, no holes
  ].join(' && '))
  const t0 = Date.now()
  const snap = await src.createSnapshot()
  const ms = Date.now() - t0
  snaps.push(snap.snapshotId)
  const tpl = JSON.parse(readFileSync(`${STATE}/templates/${snap.snapshotId}/template.json`, 'utf8'))
  // on the storage pool a snapshot is a read-only subvolume sharing the sandbox's extents
  // (nothing copied); with the image fallback, a store layer the upper was copied into
  const upper = tpl.upper
    ? `${STATE}/pool/snapshots/${tpl.upper}/upper`
    : `${STATE}/layers/${tpl.layers.at(-1).replace('sha256:', '')}`
  const st = statSync(`${upper}/home/user/sparse`)
  const z = statSync(`${upper}/home/user/zeros`)
  t.diagnostic(`5 GiB sparse file: snapshot in ${ms} ms, ${st.blocks * 512} bytes on the host`)
  assert.equal(st.size, G5)
  assert.ok(st.blocks * 512 <= 1024 * 1024, `stored sparse: ${st.blocks * 512} bytes allocated`)
  assert.equal(z.size, 2 * 1024 * 1024)
  if (!tpl.upper) // a copy drops written zeros; a pool snapshot shares them with the sandbox
    assert.ok(z.blocks * 512 <= 64 * 1024, `zeros written out are stored as a hole: ${z.blocks * 512} bytes`)
  const c = await create(snap.snapshotId)
  const r = await c.commands.run(`stat -c %s /home/user/sparse; head -c 4 /home/user/sparse; echo; tail -c 4 /home/user/sparse; echo; cmp -n ${64 * 1024} /home/user/sparse /dev/zero -i 4:0 && echo zeros-between`)
  assert.equal(r.stdout, `${G5}\nhead\ntail\nzeros-between\n`)
})

test('snapshot of an unknown sandbox: 404', async () => {
  const r = await api('POST', '/sandboxes/nosuchsandbox0/snapshots', { body: {} })
  assert.equal(r.status, 404)
  await assert.rejects(Sandbox.createSnapshot('nosuchsandbox0'), /not found/i)
})
