// envd parity details that user code relies on (issue 12), through the unmodified npm `e2b` SDK:
// uploads write the target in place, missing parents are created for the user as envd does,
// and symlinks are reported as envd 0.6.13 (the version sbx reports) reports them.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, FileType, FilesystemEventType } from 'e2b'
import { sleep, sandboxFetch, useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

const waitEvent = async (events, pred) => {
  for (let i = 0; i < 50 && !events.some(pred); i++) await sleep(100)
  return events.some(pred)
}

test('files.write writes in place: a watcher sees CREATE and WRITE of the file itself, no other name', async () => {
  await sbx.files.makeDir('/home/user/wp')
  const events = []
  const h = await sbx.files.watchDir('/home/user/wp', (e) => events.push(e))
  try {
    await sbx.files.write('/home/user/wp/out.csv', 'a,b\n1,2\n')
    const write = (e) => e.type === FilesystemEventType.WRITE && e.name === 'out.csv'
    assert.ok(await waitEvent(events, write), JSON.stringify(events))
    assert.ok(events.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'out.csv'), JSON.stringify(events))
    // overwriting an existing file is a WRITE of that file too
    const n = events.length
    await sbx.files.write('/home/user/wp/out.csv', 'a,b\n3,4\n', { useOctetStream: true })
    assert.ok(await waitEvent(events, (e, i) => i >= n && write(e)), JSON.stringify(events))
  } finally {
    await h.stop()
  }
  assert.deepEqual([...new Set(events.map((e) => e.name))], ['out.csv'], JSON.stringify(events))
  assert.equal(await sbx.files.read('/home/user/wp/out.csv'), 'a,b\n3,4\n')
})

// The Python SDK's synchronous watch_dir polls: CreateWatcher, then GetWatcherEvents, over
// Connect's JSON codec (docs/e2b-wire.md §3.6), as here.
async function pollingWatcher(path, recursive) {
  const h = { 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' }
  const rpc = async (m, body) => {
    const res = await sandboxFetch(sbx.sandboxId, 49983, `/filesystem.Filesystem/${m}`, { method: 'POST', headers: h, body: JSON.stringify(body) })
    return res.json()
  }
  const { watcherId } = await rpc('CreateWatcher', { path, recursive })
  return {
    events: async () => ((await rpc('GetWatcherEvents', { watcherId })).events || []).map((e) => `${e.type.replace('EVENT_TYPE_', '')} ${e.name}`),
    remove: () => rpc('RemoveWatcher', { watcherId }),
  }
}

test('a write is CREATE, CHMOD, WRITE as envd reports it; an overwrite CHMOD, WRITE', async () => {
  await sbx.files.makeDir('/home/user/seq')
  const w = await pollingWatcher('/home/user/seq', false)
  const streamed = []
  const h = await sbx.files.watchDir('/home/user/seq', (e) => streamed.push(`${e.type} ${e.name}`))
  try {
    await sbx.files.write('/home/user/seq/new.txt', 'first')
    assert.deepEqual(await w.events(), ['CREATE new.txt', 'CHMOD new.txt', 'WRITE new.txt'], 'E2B\'s tests count 3 events')
    await sbx.files.write('/home/user/seq/new.txt', 'second, longer')
    // the truncation and the data are two writes: read apart (as a watcher that reads all the
    // time, envd's included, may read them), they are two WRITE events
    const merged = (await w.events()).filter((e, i, a) => e !== a[i - 1])
    assert.deepEqual(merged, ['CHMOD new.txt', 'WRITE new.txt'])
    await sbx.files.writeFiles([{ path: '/home/user/seq/a.txt', data: 'a' }, { path: '/home/user/seq/b.txt', data: 'b' }])
    assert.deepEqual(await w.events(), ['CREATE a.txt', 'CHMOD a.txt', 'WRITE a.txt', 'CREATE b.txt', 'CHMOD b.txt', 'WRITE b.txt'])
    const want = [FilesystemEventType.CREATE, FilesystemEventType.CHMOD, FilesystemEventType.WRITE].map((t) => `${t} new.txt`)
    assert.ok(await waitEvent(streamed, (e) => e === `${FilesystemEventType.WRITE} b.txt`), JSON.stringify(streamed))
    assert.deepEqual(streamed.filter((e) => e.endsWith(' new.txt')).slice(0, 3), want, 'the stream says the same')
  } finally {
    await h.stop()
    await w.remove()
  }
  assert.equal(await sbx.files.read('/home/user/seq/new.txt'), 'second, longer')
})

test('a recursive polling watcher follows new folders: mkdir d/n, then a write in it', async () => {
  await sbx.files.makeDir('/home/user/rw')
  const w = await pollingWatcher('/home/user/rw', true)
  try {
    await sbx.files.makeDir('/home/user/rw/n')
    await sbx.files.write('/home/user/rw/n/f.txt', 'nested')
    const got = await w.events()
    assert.ok(got.includes('CREATE n'), JSON.stringify(got))
    assert.ok(got.includes('CREATE n/f.txt'), JSON.stringify(got))
    assert.ok(got.includes('WRITE n/f.txt'), JSON.stringify(got))
    // deeper, made at once by a command, and written later
    await sbx.commands.run('mkdir -p /home/user/rw/a/b/c && echo deep > /home/user/rw/a/b/c/g.txt')
    await sleep(300)
    await sbx.files.write('/home/user/rw/a/b/c/g.txt', 'deeper')
    const more = await w.events()
    for (const e of ['CREATE a', 'CREATE a/b', 'CREATE a/b/c', 'CREATE a/b/c/g.txt'])
      assert.ok(more.includes(e), `${e}: ${JSON.stringify(more)}`)
    assert.ok(more.filter((e) => e === 'WRITE a/b/c/g.txt').length >= 1, JSON.stringify(more))
  } finally {
    await w.remove()
  }
})

test('files.write over an existing file keeps its inode: hard links see it, a symlink is written through', async () => {
  await sbx.files.write('/home/user/inode.txt', 'old')
  await sbx.commands.run('ln -f /home/user/inode.txt /home/user/inode-link; ln -sfn inode.txt /home/user/sym.txt')
  await sbx.files.write('/home/user/inode.txt', 'new content')
  assert.equal(await sbx.files.read('/home/user/inode-link'), 'new content')
  await sbx.files.write('/home/user/sym.txt', 'through the link')
  assert.equal(await sbx.files.read('/home/user/inode.txt'), 'through the link')
  const r = await sbx.commands.run('test -L /home/user/sym.txt && echo still-a-link')
  assert.equal(r.stdout, 'still-a-link\n')
})

test('missing parents are created as envd does, owned by the user: /0/a.txt as the default user', async () => {
  const info = await sbx.files.write('/0/a.txt', 'top')
  assert.equal(info.path, '/0/a.txt')
  assert.equal(await sbx.files.read('/0/a.txt'), 'top')
  for (const p of ['/0', '/0/a.txt']) {
    const st = await sbx.files.getInfo(p)
    assert.equal(st.owner, 'user', p)
    assert.equal(st.group, 'user', p)
  }
  assert.equal((await sbx.files.getInfo('/0')).mode, 0o755)
  // several levels, several files in one multipart request
  await sbx.files.writeFiles([
    { path: '/p1/p2/b.txt', data: 'b' },
    { path: '/p1/p3/c.txt', data: 'c' },
  ])
  assert.equal(await sbx.files.read('/p1/p3/c.txt'), 'c')
  assert.equal((await sbx.files.getInfo('/p1/p2')).owner, 'user')
  // MakeDir and Move create their parents the same way
  assert.equal(await sbx.files.makeDir('/m1/m2'), true)
  assert.equal((await sbx.files.getInfo('/m1')).owner, 'user')
  await sbx.files.rename('/0/a.txt', '/r1/r2/a.txt')
  assert.equal(await sbx.files.read('/r1/r2/a.txt'), 'top')
  // a file in an existing root-owned directory stays refused for the user
  await assert.rejects(sbx.files.write('/etc/not-mine', 'x'))
  // and what the user creates there, user code can use
  const r = await sbx.commands.run('echo more > /0/b.txt && cat /0/b.txt')
  assert.equal(r.stdout, 'more\n')
})

test('symlinks in Stat and List answer as envd 0.6.13: the target\'s type, never FILE_TYPE_SYMLINK', async () => {
  await sbx.commands.run([
    'mkdir -p /home/user/ls/dir && echo hi > /home/user/ls/file',
    'ln -sfn file /home/user/ls/to-file && ln -sfn dir /home/user/ls/to-dir',
    'ln -sfn nowhere /home/user/ls/dangling',
  ].join(' && '))
  const f = await sbx.files.getInfo('/home/user/ls/to-file')
  assert.equal(f.type, FileType.FILE)
  assert.equal(f.symlinkTarget, '/home/user/ls/file')
  assert.equal(f.permissions, 'Lrwxrwxrwx')
  assert.equal(f.mode, 0o644) // the target's permission bits
  const d = await sbx.files.getInfo('/home/user/ls/to-dir')
  assert.equal(d.type, FileType.DIR)
  assert.equal(d.symlinkTarget, '/home/user/ls/dir')
  const list = await sbx.files.list('/home/user/ls')
  const byName = Object.fromEntries(list.map((e) => [e.name, e]))
  assert.equal(byName['to-file'].type, FileType.FILE)
  assert.equal(byName['to-dir'].type, FileType.DIR)
  assert.equal(byName.dangling, undefined) // no type: the SDK drops it, as against envd
  // on the wire: no FILE_TYPE_SYMLINK, which SDKs that predate it cannot parse
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/filesystem.Filesystem/ListDir', {
    method: 'POST',
    headers: { 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' },
    body: JSON.stringify({ path: '/home/user/ls', depth: 1 }),
  })
  const text = await res.text()
  assert.equal(res.status, 200, text)
  assert.doesNotMatch(text, /FILE_TYPE_SYMLINK/)
  const dangling = JSON.parse(text).entries.find((e) => e.name === 'dangling')
  assert.equal(dangling.type, undefined)
  assert.equal(dangling.symlinkTarget, '/home/user/ls/dangling') // envd: the path itself
  assert.equal(dangling.permissions, 'Lrwxrwxrwx')
})
