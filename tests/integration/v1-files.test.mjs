// Native API: filesystem and managed processes.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { v1, assertError, createSandbox, killSandbox } from './v1-lib.mjs'

let id
before(async () => { id = await createSandbox() })
after(async () => { if (id) await killSandbox(id) })
const sb = (p) => `/v1/sandboxes/${id}${p}`
const q = (p) => encodeURIComponent(p)

test('files: write raw bytes, read, stat, list, mkdir, move, remove', async () => {
  const bytes = Buffer.from([0, 1, 2, 250, 255, 10])
  let r = await v1('PUT', sb(`/files?path=${q('/home/user/dir/a.bin')}`), { raw: bytes, headers: { 'Content-Type': 'text/plain' } })
  assert.equal(r.status, 200, r.text)
  r = await v1('GET', sb(`/files?path=${q('/home/user/dir/a.bin')}`))
  assert.equal(r.status, 200)
  assert.deepEqual(r.buf, bytes)
  // relative paths are the user's home
  r = await v1('GET', sb(`/files?path=${q('dir/a.bin')}`))
  assert.deepEqual(r.buf, bytes)
  r = await v1('GET', sb(`/fs/stat?path=${q('/home/user/dir/a.bin')}`))
  assert.equal(r.status, 200, r.text)
  assert.equal(r.json.type, 'file')
  assert.equal(r.json.size, 6)
  assert.equal(r.json.name, 'a.bin')
  r = await v1('POST', sb('/fs/mkdir'), { body: { path: '/home/user/dir/sub/deeper' } })
  assert.equal(r.status, 201, r.text)
  assertError(await v1('POST', sb('/fs/mkdir'), { body: { path: '/home/user/dir/sub' } }), 409, 'conflict')
  r = await v1('GET', sb(`/fs/list?path=${q('/home/user/dir')}`))
  assert.equal(r.status, 200)
  assert.deepEqual(r.json.entries.map((e) => [e.name, e.type]).sort(), [['a.bin', 'file'], ['sub', 'dir']])
  r = await v1('POST', sb('/fs/move'), { body: { from: '/home/user/dir/a.bin', to: '/home/user/dir/sub/b.bin' } })
  assert.equal(r.status, 200, r.text)
  assert.equal(r.json.path, '/home/user/dir/sub/b.bin')
  assertError(await v1('GET', sb(`/files?path=${q('/home/user/dir/a.bin')}`)), 404, 'not_found')
  assertError(await v1('DELETE', sb(`/fs?path=${q('/home/user/dir')}`)), 409)
  r = await v1('DELETE', sb(`/fs?path=${q('/home/user/dir')}&recursive=true`))
  assert.equal(r.status, 204)
  assertError(await v1('GET', sb(`/fs/stat?path=${q('/home/user/dir')}`)), 404)
  // permissions are the user's; root may
  assertError(await v1('PUT', sb(`/files?path=${q('/etc/x')}`), { raw: 'x' }), 403)
  assertError(await v1('GET', sb(`/fs/list?path=${q('/root')}`)), 403, 'forbidden')
  r = await v1('GET', sb(`/fs/list?path=${q('/root')}&user=root`))
  assert.equal(r.status, 200)
  assertError(await v1('GET', sb(`/fs/list?path=${q('/tmp')}&user=mallory`)), 400)
  assertError(await v1('GET', sb('/fs/list')), 400)
  assertError(await v1('GET', sb('/fs/nope')), 404)
})

test('processes: start, list, get, logs (offset, follow), signal, kill', async () => {
  let r = await v1('POST', sb('/processes'), { body: { cmd: 'for i in 1 2 3; do echo line$i; sleep 0.2; done; echo done >&2', env: { A: 'b' } } })
  assert.equal(r.status, 201, r.text)
  const pid = r.json.pid
  assert.equal(r.json.status, 'running')
  r = await v1('GET', sb(`/processes/${pid}/logs?follow=true`))
  assert.equal(r.status, 200)
  assert.equal(r.text, 'line1\nline2\nline3\ndone\n')
  r = await v1('GET', sb(`/processes/${pid}`))
  assert.equal(r.json.status, 'exited')
  assert.equal(r.json.exit_code, 0)
  r = await v1('GET', sb(`/processes/${pid}/logs?offset=6`))
  assert.equal(r.text, 'line2\nline3\ndone\n')
  // a server that outlives the request, then a signal
  r = await v1('POST', sb('/processes'), { body: { cmd: ['sh', '-c', 'trap "echo got-term; exit 3" TERM; echo ready; while :; do sleep 0.1; done'], cwd: '/tmp' } })
  const srv = r.json.pid
  for (let i = 0; i < 50 && !(await v1('GET', sb(`/processes/${srv}/logs`))).text.includes('ready'); i++) await new Promise((res) => setTimeout(res, 50))
  r = await v1('GET', sb('/processes'))
  assert.ok(r.json.processes.some((p) => p.pid === srv && p.status === 'running'))
  r = await v1('POST', sb(`/processes/${srv}/signal`), { body: { signal: 'SIGTERM' } })
  assert.equal(r.status, 204, r.text)
  r = await v1('GET', sb(`/processes/${srv}/logs?follow=1`))
  assert.match(r.text, /got-term/)
  r = await v1('GET', sb(`/processes/${srv}`))
  assert.equal(r.json.exit_code, 3)
  assertError(await v1('POST', sb(`/processes/${srv}/signal`), { body: { signal: 'TERM' } }), 409)
  // kill
  r = await v1('POST', sb('/processes'), { body: { cmd: 'sleep 60' } })
  const sl = r.json.pid
  assert.equal((await v1('DELETE', sb(`/processes/${sl}`))).status, 204)
  for (let i = 0; i < 50 && (await v1('GET', sb(`/processes/${sl}`))).json.status === 'running'; i++) await new Promise((res) => setTimeout(res, 50))
  assert.equal((await v1('GET', sb(`/processes/${sl}`))).json.exit_code, -1)
  assertError(await v1('GET', sb('/processes/999999')), 404)
  assertError(await v1('POST', sb(`/processes/${sl}/signal`), { body: { signal: 'NOPE' } }), 400)
  assertError(await v1('POST', sb('/processes'), { body: { cmd: 'true', cwd: '/no/such/dir' } }), 400)
})

test('search: by name glob and by content, bounded', async () => {
  await v1('POST', sb('/exec'), { body: { cmd: 'mkdir -p /home/user/s/a/b && printf "alpha\\nneedle here\\n" > /home/user/s/a/one.txt && printf "needle again\\n" > /home/user/s/a/b/two.md && printf "x\\0needle" > /home/user/s/bin.dat && ln -s / /home/user/s/loop' } })
  let r = await v1('GET', sb(`/fs/search?path=${q('/home/user/s')}&name=${q('*.txt')}`))
  assert.equal(r.status, 200, r.text)
  assert.deepEqual(r.json.matches.map((m) => m.path), ['/home/user/s/a/one.txt'])
  assert.equal(r.json.truncated, false)
  r = await v1('GET', sb(`/fs/search?path=${q('/home/user/s')}&content=needle`))
  assert.deepEqual(r.json.matches.map((m) => [m.path, m.line, m.text]).sort(), [
    ['/home/user/s/a/b/two.md', 1, 'needle again'], ['/home/user/s/a/one.txt', 2, 'needle here']])
  r = await v1('GET', sb(`/fs/search?path=${q('/home/user/s')}&name=${q('*.md')}&content=needle`))
  assert.equal(r.json.matches.length, 1)
  r = await v1('GET', sb(`/fs/search?path=${q('/home/user/s')}&content=needle&max_results=1`))
  assert.equal(r.json.matches.length, 1)
  assert.equal(r.json.truncated, true)
  assertError(await v1('GET', sb(`/fs/search?path=${q('/home/user/s')}`)), 400)
  assertError(await v1('GET', sb(`/fs/search?path=${q('/home/user/s')}&name=x&max_results=5000`)), 400)
  assertError(await v1('GET', sb(`/fs/search?path=${q('/nope')}&name=x`)), 404)
})

test('watch: server-sent events for changes, ends when the client leaves', async () => {
  await v1('POST', sb('/fs/mkdir'), { body: { path: '/home/user/w/sub' } })
  const ac = new AbortController()
  const res = await fetch(`${process.env.E2B_API_URL}${sb(`/fs/watch?path=${q('/home/user/w')}&recursive=true`)}`, { headers: { Authorization: `Bearer ${process.env.E2B_API_KEY}` }, signal: ac.signal })
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type'), /text\/event-stream/)
  const reader = res.body.getReader()
  let text = ''
  const readUntil = async (re) => {
    while (!re.test(text)) {
      const { value, done } = await reader.read()
      if (done) break
      text += Buffer.from(value).toString()
    }
  }
  await readUntil(/watching/)
  await v1('PUT', sb(`/files?path=${q('/home/user/w/new.txt')}`), { raw: 'hi' })
  await v1('PUT', sb(`/files?path=${q('/home/user/w/sub/deep.txt')}`), { raw: 'hi' })
  await v1('DELETE', sb(`/fs?path=${q('/home/user/w/new.txt')}`))
  await readUntil(/"type":"delete","path":"\/home\/user\/w\/new.txt"/)
  const events = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
  assert.ok(events.some((e) => e.path.startsWith('/home/user/w/sub/') && e.path.includes('deep.txt') || e.path.startsWith('/home/user/w/.')), JSON.stringify(events))
  assert.ok(events.some((e) => e.type === 'move_to' || e.type === 'create'))
  ac.abort()
  assertError(await v1('GET', sb(`/fs/watch?path=${q('/home/user/nope')}`)), 404)
})
