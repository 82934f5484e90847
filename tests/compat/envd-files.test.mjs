// envd filesystem service and /files through the unmodified npm `e2b` SDK (pinned 2.51.0).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { gzipSync, gunzipSync } from 'node:zlib'
import { createHash } from 'node:crypto'
import {
  Sandbox, FileType, FilesystemEventType, NotFoundError, FileNotFoundError,
  InvalidArgumentError, AuthenticationError, SandboxError,
} from 'e2b'
import { sleep, sandboxFetch, useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

test('files.write then read: text round trip, owned by user', async () => {
  const info = await sbx.files.write('/home/user/a.txt', 'hello files')
  assert.equal(info.path, '/home/user/a.txt')
  assert.equal(info.name, 'a.txt')
  assert.equal(await sbx.files.read('/home/user/a.txt'), 'hello files')
  const st = await sbx.files.getInfo('/home/user/a.txt')
  assert.equal(st.owner, 'user')
  assert.equal(st.group, 'user')
})

test('files.getInfo: complete EntryInfo for a file', async () => {
  await sbx.files.write('/home/user/info.txt', '12345')
  await sbx.commands.run('chmod 640 /home/user/info.txt')
  const st = await sbx.files.getInfo('/home/user/info.txt')
  assert.equal(st.name, 'info.txt')
  assert.equal(st.type, FileType.FILE)
  assert.equal(st.path, '/home/user/info.txt')
  assert.equal(st.size, 5)
  assert.equal(st.mode, 0o640)
  assert.equal(st.permissions, '-rw-r-----')
  assert.ok(st.modifiedTime instanceof Date)
  assert.ok(Math.abs(st.modifiedTime.getTime() - Date.now()) < 60_000)
})

test('files.getInfo: directory and symlink (with target)', async () => {
  await sbx.commands.run('mkdir -p /home/user/d1 && ln -sfn /home/user/d1 /home/user/l1')
  const d = await sbx.files.getInfo('/home/user/d1')
  assert.equal(d.type, FileType.DIR)
  assert.equal(d.permissions, 'drwxr-xr-x')
  const l = await sbx.files.getInfo('/home/user/l1')
  assert.equal(l.symlinkTarget, '/home/user/d1')
  assert.equal(l.permissions.slice(0, 1), 'L')
})

test('files.getInfo of a missing path throws FileNotFoundError', async () => {
  await assert.rejects(sbx.files.getInfo('/home/user/nope'), (e) => e instanceof FileNotFoundError)
})

test('files.exists: true for a file, false for a missing path', async () => {
  await sbx.files.write('/home/user/ex.txt', 'x')
  assert.equal(await sbx.files.exists('/home/user/ex.txt'), true)
  assert.equal(await sbx.files.exists('/home/user/missing.txt'), false)
})

test('files.makeDir: true when created (with parents), false when it exists', async () => {
  assert.equal(await sbx.files.makeDir('/home/user/m/n/o'), true)
  assert.equal(await sbx.files.makeDir('/home/user/m/n/o'), false)
  const st = await sbx.files.getInfo('/home/user/m/n')
  assert.equal(st.type, FileType.DIR)
  assert.equal(st.owner, 'user')
})

test('files.makeDir over a file is InvalidArgumentError', async () => {
  await sbx.files.write('/home/user/plain', 'x')
  await assert.rejects(sbx.files.makeDir('/home/user/plain'), (e) => e instanceof InvalidArgumentError)
})

test('files.list: depth 1 and depth 2, sorted, types', async () => {
  await sbx.commands.run('rm -rf /home/user/tree && mkdir -p /home/user/tree/b/c && touch /home/user/tree/a /home/user/tree/b/x /home/user/tree/b/c/y')
  const one = await sbx.files.list('/home/user/tree')
  assert.deepEqual(one.map((e) => e.name), ['a', 'b'])
  assert.equal(one[0].type, FileType.FILE)
  assert.equal(one[1].type, FileType.DIR)
  const two = await sbx.files.list('/home/user/tree', { depth: 2 })
  assert.deepEqual(two.map((e) => e.path), ['/home/user/tree/a', '/home/user/tree/b', '/home/user/tree/b/c', '/home/user/tree/b/x'])
})

test('files.list: missing directory → FileNotFoundError, a file → InvalidArgumentError, depth 0 refused', async () => {
  await assert.rejects(sbx.files.list('/home/user/nodir'), (e) => e instanceof FileNotFoundError)
  await sbx.files.write('/home/user/f.txt', 'x')
  await assert.rejects(sbx.files.list('/home/user/f.txt'), (e) => e instanceof InvalidArgumentError)
  await assert.rejects(sbx.files.list('/home/user', { depth: 0 }), (e) => e instanceof InvalidArgumentError)
})

test('files.list of an empty directory is []', async () => {
  await sbx.files.makeDir('/home/user/empty')
  assert.deepEqual(await sbx.files.list('/home/user/empty'), [])
})

test('files.rename moves a file (creating parents) and returns the new entry', async () => {
  await sbx.files.write('/home/user/mv-src.txt', 'move me')
  const e = await sbx.files.rename('/home/user/mv-src.txt', '/home/user/mv/dst.txt')
  assert.equal(e.path, '/home/user/mv/dst.txt')
  assert.equal(e.name, 'dst.txt')
  assert.equal(await sbx.files.read('/home/user/mv/dst.txt'), 'move me')
  assert.equal(await sbx.files.exists('/home/user/mv-src.txt'), false)
})

test('files.rename of a missing source → FileNotFoundError', async () => {
  await assert.rejects(sbx.files.rename('/home/user/ghost', '/home/user/ghost2'), (e) => e instanceof FileNotFoundError)
})

test('files.remove: file, directory tree, and a missing path is fine', async () => {
  await sbx.commands.run('mkdir -p /home/user/rm/a/b && touch /home/user/rm/a/b/c /home/user/rmf')
  await sbx.files.remove('/home/user/rmf')
  await sbx.files.remove('/home/user/rm')
  assert.equal(await sbx.files.exists('/home/user/rm'), false)
  assert.equal(await sbx.files.exists('/home/user/rmf'), false)
  await sbx.files.remove('/home/user/never-was')
})

test('relative paths resolve against the home directory', async () => {
  await sbx.files.write('rel.txt', 'relative')
  assert.equal(await sbx.files.read('/home/user/rel.txt'), 'relative')
  const st = await sbx.files.getInfo('rel.txt')
  assert.equal(st.path, '/home/user/rel.txt')
})

test('files.write of several files (multipart, each filename is its path)', async () => {
  const res = await sbx.files.write([
    { path: '/home/user/multi/one.txt', data: 'one' },
    { path: 'multi/two.txt', data: 'two' },
    { path: '/home/user/multi/three.bin', data: new Uint8Array([0, 1, 2, 3]).buffer },
  ])
  assert.equal(res.length, 3)
  assert.equal(await sbx.files.read('/home/user/multi/one.txt'), 'one')
  assert.equal(await sbx.files.read('/home/user/multi/two.txt'), 'two')
  assert.deepEqual([...await sbx.files.read('/home/user/multi/three.bin', { format: 'bytes' })], [0, 1, 2, 3])
})

test('read formats: bytes, blob, stream; empty file', async () => {
  const data = new Uint8Array(300_000).map((_, i) => (i * 7) & 255)
  await sbx.files.write('/home/user/bin.dat', data.buffer)
  const bytes = await sbx.files.read('/home/user/bin.dat', { format: 'bytes' })
  assert.equal(Buffer.compare(Buffer.from(bytes), Buffer.from(data)), 0)
  const blob = await sbx.files.read('/home/user/bin.dat', { format: 'blob' })
  assert.equal(blob.size, data.length)
  const stream = await sbx.files.read('/home/user/bin.dat', { format: 'stream' })
  let n = 0
  for await (const c of stream) n += c.length
  assert.equal(n, data.length)
  await sbx.files.write('/home/user/empty.txt', '')
  assert.equal(await sbx.files.read('/home/user/empty.txt'), '')
})

test('gzip both ways: write with gzip, read with gzip', async () => {
  const text = 'compress me '.repeat(10_000)
  await sbx.files.write('/home/user/gz.txt', text, { gzip: true })
  assert.equal(await sbx.files.read('/home/user/gz.txt', { gzip: true }), text)
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/files?path=/home/user/gz.txt', {
    headers: { 'X-Access-Token': sbx.envdAccessToken ?? '', 'Accept-Encoding': 'gzip' },
  })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-encoding'), 'gzip')
})

test('write with metadata: stored as xattrs, returned by getInfo and list', async () => {
  await sbx.files.write('/home/user/meta.txt', 'm', { metadata: { owner: 'me', Purpose: 'test' } })
  const st = await sbx.files.getInfo('/home/user/meta.txt')
  assert.deepEqual(st.metadata, { owner: 'me', purpose: 'test' })
  const l = await sbx.files.list('/home/user')
  assert.deepEqual(l.find((e) => e.name === 'meta.txt').metadata, { owner: 'me', purpose: 'test' })
  const r = await sbx.commands.run('getfattr -d /home/user/meta.txt 2>/dev/null || true')
  if (r.stdout) assert.match(r.stdout, /user\.e2b\.owner="me"/)
})

test('read of a missing file → FileNotFoundError; of a directory → InvalidArgumentError', async () => {
  await assert.rejects(sbx.files.read('/home/user/missing'), (e) => e instanceof FileNotFoundError)
  await assert.rejects(sbx.files.read('/home/user'), (e) => e instanceof InvalidArgumentError)
})

test('root-only files stay root-only; user root can read them', async () => {
  await sbx.commands.run('echo secret > /root-only && chmod 600 /root-only', { user: 'root' })
  await assert.rejects(sbx.files.read('/root-only'), (e) => e instanceof SandboxError)
  assert.equal(await sbx.files.read('/root-only', { user: 'root' }), 'secret\n')
  await assert.rejects(sbx.files.write('/etc/owned-by-root', 'x'), (e) => e instanceof SandboxError)
  const w = await sbx.files.write('/etc/owned-by-root', 'x', { user: 'root' })
  assert.equal(w.path, '/etc/owned-by-root')
  assert.equal((await sbx.files.getInfo('/etc/owned-by-root')).owner, 'root')
})

test('unknown user → AuthenticationError (REST and RPC)', async () => {
  await assert.rejects(sbx.files.read('/home/user/a.txt', { user: 'nobody-here' }), (e) => e instanceof AuthenticationError)
  await assert.rejects(sbx.files.list('/home/user', { user: 'nobody-here' }), (e) => e instanceof AuthenticationError && /invalid username: 'nobody-here'/.test(e.message))
  await assert.rejects(sbx.files.exists('/home/user', { user: 'nobody-here' }), (e) => e instanceof AuthenticationError)
})

test('watchDir: start, create/write/remove events, includeEntry', async () => {
  await sbx.files.makeDir('/home/user/w')
  const events = []
  const h = await sbx.files.watchDir('/home/user/w', (e) => events.push(e), { includeEntry: true })
  await sbx.files.write('/home/user/w/f.txt', 'hi')
  await sbx.commands.run('echo more >> /home/user/w/f.txt; rm /home/user/w/f.txt')
  for (let i = 0; i < 50 && !events.some((e) => e.type === FilesystemEventType.REMOVE); i++) await sleep(100)
  await h.stop()
  assert.ok(events.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'f.txt'), JSON.stringify(events))
  assert.ok(events.some((e) => e.type === FilesystemEventType.WRITE && e.name === 'f.txt'))
  assert.ok(events.some((e) => e.type === FilesystemEventType.REMOVE && e.name === 'f.txt'))
  const created = events.find((e) => e.type === FilesystemEventType.CREATE && e.entry)
  assert.ok(created, 'an event carries its entry')
})

test('watchDir recursive: events in a new subdirectory', async () => {
  await sbx.commands.run('rm -rf /home/user/wr && mkdir -p /home/user/wr')
  const events = []
  const h = await sbx.files.watchDir('/home/user/wr', (e) => events.push(e), { recursive: true })
  await sbx.commands.run('mkdir /home/user/wr/sub && sleep 0.2 && touch /home/user/wr/sub/deep.txt')
  for (let i = 0; i < 50 && !events.some((e) => e.name === 'sub/deep.txt'); i++) await sleep(100)
  await h.stop()
  assert.ok(events.some((e) => e.name === 'sub' && e.type === FilesystemEventType.CREATE), JSON.stringify(events))
  assert.ok(events.some((e) => e.name === 'sub/deep.txt'), JSON.stringify(events))
})

test('watchDir on a missing directory or a file fails', async () => {
  await assert.rejects(sbx.files.watchDir('/home/user/no-such-dir', () => {}), (e) => e instanceof NotFoundError)
  await sbx.files.write('/home/user/notdir', 'x')
  await assert.rejects(sbx.files.watchDir('/home/user/notdir', () => {}), (e) => e instanceof InvalidArgumentError)
})

test('signed URLs: uploadUrl/downloadUrl work without the access token header', async () => {
  assert.ok(sbx.envdAccessToken, 'sandbox has an access token')
  const up = await sbx.uploadUrl('/home/user/signed.txt')
  assert.match(up, /signature=v1_/)
  const form = new FormData()
  form.append('file', new Blob(['signed upload']), 'signed.txt')
  const hdr = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' }
  let res = await fetch(up, { method: 'POST', body: form, headers: hdr })
  assert.equal(res.status, 200, await res.clone().text())
  const down = await sbx.downloadUrl('/home/user/signed.txt', { useSignatureExpiration: 60 })
  assert.match(down, /signature_expiration=\d+/)
  res = await fetch(down, { headers: hdr })
  assert.equal(res.status, 200)
  assert.equal(await res.text(), 'signed upload')
  // a read signature does not authorize a write, nor another path
  res = await fetch(down, { method: 'POST', body: form, headers: hdr })
  assert.equal(res.status, 401)
  res = await fetch(down.replace('signed.txt', 'other.txt'), { headers: hdr })
  assert.equal(res.status, 401)
})

test('signed URLs: tampered, expired, wrong user and wrong header are 401', async () => {
  const hdr = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' }
  await sbx.files.write('/home/user/s2.txt', 'x')
  const good = await sbx.downloadUrl('/home/user/s2.txt')
  const bad = good.replace(/signature=v1_./, (m) => m.slice(0, -1) + (m.endsWith('A') ? 'B' : 'A'))
  assert.equal((await fetch(bad, { headers: hdr })).status, 401)
  const expired = await sbx.downloadUrl('/home/user/s2.txt', { useSignatureExpiration: -10 })
  assert.equal((await fetch(expired, { headers: hdr })).status, 401)
  const u = new URL(good)
  u.searchParams.set('username', 'root')
  assert.equal((await fetch(u, { headers: hdr })).status, 401)
  assert.equal((await fetch(good, { headers: { ...hdr, 'X-Access-Token': 'wrong' } })).status, 401)
  assert.equal((await fetch(good, { headers: hdr })).status, 200)
  const rootUrl = await sbx.downloadUrl('/home/user/s2.txt', { user: 'root' })
  assert.equal((await fetch(rootUrl, { headers: hdr })).status, 200)
})

test('/files errors: 400 without path on octet-stream, 401 unknown user, 404 missing, 406 encoding', async () => {
  const h = { 'X-Access-Token': sbx.envdAccessToken }
  let res = await sandboxFetch(sbx.sandboxId, 49983, '/files', { method: 'POST', headers: { ...h, 'Content-Type': 'application/octet-stream' }, body: 'x' })
  assert.equal(res.status, 400)
  res = await sandboxFetch(sbx.sandboxId, 49983, '/files?path=/home/user/a.txt&username=ghost', { headers: h })
  assert.equal(res.status, 401)
  res = await sandboxFetch(sbx.sandboxId, 49983, '/files?path=/home/user/none', { headers: h })
  assert.equal(res.status, 404)
  assert.equal((await res.json()).code, 404)
  res = await sandboxFetch(sbx.sandboxId, 49983, '/files?path=/home/user/a.txt', { headers: { ...h, 'Accept-Encoding': 'br, identity;q=0' } })
  assert.equal(res.status, 406)
  res = await sandboxFetch(sbx.sandboxId, 49983, '/files?path=/home/user/a.txt', { method: 'POST', headers: { ...h, 'Content-Type': 'application/octet-stream', 'X-Metadata-Bad': 'é' }, body: 'x' })
  assert.equal(res.status, 400)
  res = await sandboxFetch(sbx.sandboxId, 49983, '/files?path=/home/user/a.txt', { headers: {} })
  assert.equal(res.status, 401)
})

test('polling watchers (Python SDK): CreateWatcher, GetWatcherEvents, RemoveWatcher', async () => {
  const h = { 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' }
  const rpc = async (m, body) => {
    const res = await sandboxFetch(sbx.sandboxId, 49983, `/filesystem.Filesystem/${m}`, { method: 'POST', headers: h, body: JSON.stringify(body) })
    return { status: res.status, json: await res.json() }
  }
  await sbx.files.makeDir('/home/user/pw')
  const c = await rpc('CreateWatcher', { path: '/home/user/pw', recursive: false })
  assert.equal(c.status, 200)
  const id = c.json.watcherId
  assert.ok(id)
  await sbx.files.write('/home/user/pw/x.txt', '1')
  const ev = await rpc('GetWatcherEvents', { watcherId: id })
  assert.ok(ev.json.events.some((e) => e.name === 'x.txt' && e.type === 'EVENT_TYPE_CREATE'), JSON.stringify(ev.json))
  assert.deepEqual((await rpc('GetWatcherEvents', { watcherId: id })).json, {})
  assert.equal((await rpc('RemoveWatcher', { watcherId: id })).status, 200)
  const gone = await rpc('GetWatcherEvents', { watcherId: id })
  assert.equal(gone.status, 404)
  assert.equal(gone.json.code, 'not_found')
})

test('signed URLs work as the SDK returns them: a plain fetch with no sandbox headers', async () => {
  const up = await sbx.uploadUrl('/home/user/plain-signed.txt')
  const form = new FormData()
  form.append('file', new Blob(['no headers']), 'plain-signed.txt')
  let res = await fetch(up, { method: 'POST', body: form })
  assert.equal(res.status, 200, await res.clone().text())
  const down = await sbx.downloadUrl('/home/user/plain-signed.txt')
  res = await fetch(down)
  assert.equal(res.status, 200)
  assert.equal(await res.text(), 'no headers')
  // without a valid signature a header-less /files reaches no sandbox: envd's refusal
  res = await fetch(down.replace(/signature=[^&]+/, 'signature=v1_bogus'))
  assert.equal(res.status, 401)
  assert.deepEqual(await res.json(), { code: 401, message: 'invalid signature' })
})
