// More envd surface through the unmodified npm `e2b` SDK: handle methods, writeFiles, WatchDir
// framing (start first, keepalives), Python-style user handling over raw Connect.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, FilesystemEventType } from 'e2b'
import { sleep, sandboxFetch, envelope, parseEnvelopes, useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

test('CommandHandle: sendStdin, closeStdin, stdout/stderr getters, exitCode', async () => {
  const h = await sbx.commands.run('cat; echo done >&2', { background: true, stdin: true })
  await h.sendStdin('via handle\n')
  await h.closeStdin()
  const r = await h.wait()
  assert.equal(r.stdout, 'via handle\n')
  assert.equal(h.stdout, 'via handle\n')
  assert.equal(h.stderr, 'done\n')
  assert.equal(h.exitCode, 0)
})

test('commands.run with stdin: true: a background process reads what sendStdin sends', async () => {
  const h = await sbx.commands.run('read -t 5 x && echo got-$x || echo timeout', { background: true, stdin: true })
  await sleep(200)
  await sbx.commands.sendStdin(h.pid, 'line\n')
  assert.equal((await h.wait()).stdout, 'got-line\n')
})

test('files.writeFiles writes several files in one request', async () => {
  const res = await sbx.files.writeFiles([
    { path: '/home/user/wf/a.txt', data: 'A' },
    { path: '/home/user/wf/b.txt', data: new Blob(['B']) },
  ])
  assert.deepEqual(res.map((r) => r.path).sort(), ['/home/user/wf/a.txt', '/home/user/wf/b.txt'])
  assert.equal(await sbx.files.read('/home/user/wf/b.txt'), 'B')
})

test('files.write: a ReadableStream body and overwrite keeps the mode', async () => {
  await sbx.files.write('/home/user/mode.sh', '#!/bin/sh\necho one\n')
  await sbx.commands.run('chmod 755 /home/user/mode.sh')
  const stream = new ReadableStream({
    start(c) { c.enqueue(new TextEncoder().encode('#!/bin/sh\necho two\n')); c.close() },
  })
  await sbx.files.write('/home/user/mode.sh', stream)
  assert.equal((await sbx.commands.run('/home/user/mode.sh')).stdout, 'two\n')
  assert.equal((await sbx.files.getInfo('/home/user/mode.sh')).mode, 0o755)
})

test('WatchDir over the wire: start first, keepalives at the interval, events after', async () => {
  await sbx.files.makeDir('/home/user/wk')
  const ac = new AbortController()
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/filesystem.Filesystem/WatchDir', {
    method: 'POST',
    signal: ac.signal,
    headers: {
      'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/connect+json',
      'Keepalive-Ping-Interval': '1', 'Connect-Timeout-Ms': '3500',
    },
    body: envelope({ path: '/home/user/wk' }),
  })
  assert.equal(res.status, 200)
  setTimeout(() => sbx.files.write('/home/user/wk/n.txt', 'n').catch(() => {}), 1500)
  const frames = parseEnvelopes(Buffer.from(await res.arrayBuffer()))
  assert.deepEqual(frames[0].msg, { start: {} })
  assert.ok(frames.filter((f) => f.msg.keepalive).length >= 2, JSON.stringify(frames))
  assert.ok(frames.some((f) => f.msg.filesystem?.name === 'n.txt' && f.msg.filesystem.type === 'EVENT_TYPE_CREATE'))
  assert.equal(frames.at(-1).flags, 2)
  assert.equal(frames.at(-1).msg.error.code, 'deadline_exceeded')
})

test('watchDir: rename and chmod events; handle.stop ends the stream', async () => {
  await sbx.commands.run('rm -rf /home/user/wm && mkdir /home/user/wm && touch /home/user/wm/f')
  const events = []
  const h = await sbx.files.watchDir('/home/user/wm', (e) => events.push(e))
  await sbx.commands.run('chmod 600 /home/user/wm/f && mv /home/user/wm/f /home/user/wm/g')
  // the rename's two halves (RENAME of f, CREATE of g) may arrive in separate messages: wait
  // for both, not only the first
  const both = () => events.some((e) => e.type === FilesystemEventType.RENAME) &&
    events.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'g')
  for (let i = 0; i < 50 && !both(); i++) await sleep(100)
  await h.stop()
  assert.ok(events.some((e) => e.type === FilesystemEventType.CHMOD && e.name === 'f'), JSON.stringify(events))
  assert.ok(events.some((e) => e.type === FilesystemEventType.RENAME && e.name === 'f'))
  assert.ok(events.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'g'))
})

test('filesystem RPCs honour the Basic user: root sees root-only dirs, user does not', async () => {
  await sbx.commands.run('mkdir -p /rootdir && chmod 700 /rootdir && touch /rootdir/x', { user: 'root' })
  assert.equal((await sbx.files.list('/rootdir', { user: 'root' })).length, 1)
  await assert.rejects(sbx.files.list('/rootdir'))
  await assert.rejects(sbx.files.read('/rootdir/x'))
  // MakeDir creates directories with envd's rights (envd runs as root), owned by the user
  assert.equal(await sbx.files.makeDir('/rootdir/sub'), true)
  assert.equal((await sbx.files.getInfo('/rootdir/sub', { user: 'root' })).owner, 'user')
  assert.equal(await sbx.files.makeDir('/rootdir/sub2', { user: 'root' }), true)
  assert.equal((await sbx.files.getInfo('/rootdir/sub2', { user: 'root' })).owner, 'root')
})

test('sendStdin to a process that never reads: the call gives up with its client, no stuck agent thread', async () => {
  const threads = async () => Number((await sbx.commands.run("awk '/^Threads/ {print $2}' /proc/1/status", { user: 'root' })).stdout.trim())
  const h = await sbx.commands.run('sleep 60', { background: true, stdin: true })
  const before = await threads()
  await assert.rejects(sbx.commands.sendStdin(h.pid, 'x'.repeat(1 << 20), { requestTimeoutMs: 1500 }))
  await sleep(2500)
  const afterT = await threads()
  assert.ok(afterT <= before, `agent threads ${before} → ${afterT}`)
  assert.equal(await h.kill(), true)
})

test('SendSignal SIGTERM over the wire ends the process group with signal: terminated', async () => {
  const h = await sbx.commands.run('sleep 100 & sleep 100; wait', { background: true })
  await sleep(300)
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/SendSignal', {
    method: 'POST',
    headers: { 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' },
    body: JSON.stringify({ process: { pid: h.pid }, signal: 'SIGNAL_SIGTERM' }),
  })
  assert.equal(res.status, 200)
  await assert.rejects(h.wait(), (e) => e.exitCode === -1 && /signal: terminated/.test(e.error ?? ''))
  assert.equal((await sbx.commands.run('pgrep -c -x sleep || true')).stdout.trim(), '0')
})
