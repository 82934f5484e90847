// Native API: sizes at create, pause and resume, a managed process's stdin and waiting for its
// exit, against a real sbxd.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { v1, assertError, createSandbox, killSandbox, URL_, KEY } from './v1-lib.mjs'

const exec = async (id, cmd) => (await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd } })).json.result

test('create: cpu_count, memory_mb and disk_mb reach the sandbox; out of range is 400', async () => {
  const id = await createSandbox({ cpu_count: 1, memory_mb: 384, disk_mb: 256 })
  try {
    const g = await v1('GET', `/v1/sandboxes/${id}`)
    assert.equal(g.json.cpu_count, 1)
    assert.equal(g.json.memory_mb, 384)
    // the memory limit the sandbox's cgroup enforces, read on the host (v1 or v2 hierarchy)
    const files = [`/sys/fs/cgroup/memory/sbx/${id}/memory.limit_in_bytes`, `/sys/fs/cgroup/unified/sbx/${id}/memory.max`, `/sys/fs/cgroup/sbx/${id}/memory.max`]
    const f = files.find((x) => existsSync(x))
    assert.ok(f, 'the sandbox has a memory cgroup')
    assert.equal(readFileSync(f, 'utf8').trim(), String(384 * 1024 * 1024))
  } finally { await killSandbox(id) }
  for (const body of [{ cpu_count: 0 }, { cpu_count: 65 }, { memory_mb: 1 }, { disk_mb: 'big' }, { memory_mb: 1e300 }]) {
    const r = await v1('POST', '/v1/sandboxes', { body })
    assertError(r, 400, 'bad_request')
    assert.match(r.json.error.message, new RegExp(Object.keys(body)[0]))
  }
})

test('pause and resume: processes and memory survive, inside operations say sandbox_paused', async () => {
  const id = await createSandbox()
  try {
    const p = await v1('POST', `/v1/sandboxes/${id}/processes`, { body: { cmd: 'x=0; while :; do x=$((x+1)); echo $x > /tmp/n; sleep 0.05; done' } })
    assert.equal(p.status, 201, p.text)
    let r = await v1('POST', `/v1/sandboxes/${id}/pause`)
    assert.equal(r.status, 200, r.text)
    assert.equal(r.json.state, 'paused')
    assert.equal((await v1('GET', `/v1/sandboxes/${id}`)).json.state, 'paused')
    assert.ok((await v1('GET', '/v1/sandboxes')).json.sandboxes.some((s) => s.id === id && s.state === 'paused'))
    assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'true' } }), 409, 'sandbox_paused')
    assertError(await v1('POST', `/v1/sandboxes/${id}/pause`), 409, 'conflict')
    assertError(await v1('POST', `/v1/sandboxes/${id}/resume`, { body: { timeout: 0 } }), 400, 'bad_request')
    r = await v1('POST', `/v1/sandboxes/${id}/resume`, { body: { timeout: 120 } })
    assert.equal(r.status, 200, r.text)
    assert.equal(r.json.state, 'running')
    const left = (Date.parse(r.json.end_at) - Date.now()) / 1000
    assert.ok(left > 100 && left <= 121, String(left))
    assertError(await v1('POST', `/v1/sandboxes/${id}/resume`), 409, 'conflict')
    // the same process goes on counting
    const a = Number((await exec(id, 'cat /tmp/n')).stdout)
    await new Promise((res) => setTimeout(res, 300))
    assert.ok(Number((await exec(id, 'cat /tmp/n')).stdout) > a)
    assert.equal((await v1('GET', `/v1/sandboxes/${id}/processes/${p.json.pid}`)).json.status, 'running')
    assertError(await v1('POST', `/v1/sandboxes/${id}/pause`, { body: { keep_memory: 'no' } }), 400)
  } finally { await killSandbox(id) }
  assertError(await v1('POST', '/v1/sandboxes/nosuchbox/pause'), 404, 'not_found')
  assertError(await v1('POST', '/v1/sandboxes/nosuchbox/resume'), 404, 'not_found')
})

test('processes: stdin pipe, EOF, wait for the exit', async () => {
  const id = await createSandbox()
  const sb = (p) => `/v1/sandboxes/${id}${p}`
  try {
    let r = await v1('POST', sb('/processes'), { body: { cmd: ['sh', '-c', 'while read l; do echo "got:$l"; done; echo eof; exit 7'], stdin: true } })
    assert.equal(r.status, 201, r.text)
    assert.equal(r.json.stdin, true)
    const pid = r.json.pid
    r = await v1('POST', sb(`/processes/${pid}/stdin`), { raw: 'one\ntwo\n' })
    assert.equal(r.status, 204, r.text)
    // a wait that ends first: the process still runs
    const t0 = Date.now()
    r = await v1('GET', sb(`/processes/${pid}?wait_ms=300`))
    assert.equal(r.json.status, 'running')
    assert.ok(Date.now() - t0 >= 250)
    const waiting = v1('GET', sb(`/processes/${pid}?wait_ms=20000`))
    r = await v1('POST', sb(`/processes/${pid}/stdin?close=true`), { raw: 'three\n' })
    assert.equal(r.status, 204, r.text)
    r = await waiting
    assert.equal(r.json.status, 'exited')
    assert.equal(r.json.exit_code, 7)
    assert.ok(Date.now() - t0 < 15000)
    r = await v1('GET', sb(`/processes/${pid}/logs`))
    assert.equal(r.text, 'got:one\ngot:two\ngot:three\neof\n')
    assertError(await v1('POST', sb(`/processes/${pid}/stdin`), { raw: 'late\n' }), 409, 'conflict')
    // 1 MiB through stdin arrives whole
    r = await v1('POST', sb('/processes'), { body: { cmd: 'wc -c', stdin: true } })
    const big = r.json.pid
    r = await v1('POST', sb(`/processes/${big}/stdin?close=true`), { raw: Buffer.alloc(1 << 20, 97) })
    assert.equal(r.status, 204, r.text)
    r = await v1('GET', sb(`/processes/${big}?wait_ms=10000`))
    assert.equal(r.json.exit_code, 0)
    assert.equal((await v1('GET', sb(`/processes/${big}/logs`))).text.trim(), String(1 << 20))
    // a process that exits as soon as it has read what it was sent, before the request's body
    // has ended (a client that sends its body in parts): the write with close=true succeeded,
    // the EOF it no longer needs is not an error
    for (let i = 0; i < 3; i++) {
      r = await v1('POST', sb('/processes'), { body: { cmd: 'head -c 2', stdin: true } })
      const h = r.json.pid
      const parts = new ReadableStream({
        async start(c) {
          c.enqueue(new TextEncoder().encode('ab'))
          await new Promise((res) => setTimeout(res, 300)) // head reads, writes and exits meanwhile
          c.close()
        },
      })
      const res = await fetch(`${URL_}${sb(`/processes/${h}/stdin?close=true`)}`, {
        method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: parts, duplex: 'half' })
      assert.equal(res.status, 204, `round ${i}: ${await res.text()}`)
      r = await v1('GET', sb(`/processes/${h}?wait_ms=10000`))
      assert.equal(r.json.exit_code, 0)
      assert.equal((await v1('GET', sb(`/processes/${h}/logs`))).text, 'ab')
    }
    // without stdin: true there is no pipe to write
    r = await v1('POST', sb('/processes'), { body: { cmd: 'sleep 30' } })
    assert.equal(r.json.stdin, false)
    assertError(await v1('POST', sb(`/processes/${r.json.pid}/stdin`), { raw: 'x' }), 409, 'conflict')
    assertError(await v1('GET', sb(`/processes/${r.json.pid}?wait_ms=50001`)), 400, 'bad_request')
    assertError(await v1('GET', sb(`/processes/${r.json.pid}?wait_ms=soon`)), 400, 'bad_request')
    assertError(await v1('POST', sb('/processes'), { body: { cmd: 'true', stdin: 'yes' } }), 400, 'bad_request')
    assertError(await v1('POST', sb('/processes/99999/stdin'), { raw: 'x' }), 404, 'not_found')
    await v1('DELETE', sb(`/processes/${r.json.pid}`))
  } finally { await killSandbox(id) }
})

test('files: ?user=root reads and writes as root, the default user cannot', async () => {
  const id = await createSandbox()
  const sb = (p) => `/v1/sandboxes/${id}${p}`
  try {
    assertError(await v1('PUT', sb('/files?path=/etc/by-root'), { raw: 'x' }), 403, 'forbidden')
    let r = await v1('PUT', sb('/files?path=/etc/by-root&user=root'), { raw: 'root wrote' })
    assert.equal(r.status, 200, r.text)
    r = await v1('GET', sb('/files?path=/etc/by-root&user=root'))
    assert.equal(r.text, 'root wrote')
    assert.equal((await exec(id, 'stat -c %U /etc/by-root')).stdout, 'root\n')
    // relative paths are the user's home: root's is /root
    r = await v1('PUT', sb('/files?path=r.txt&user=root'), { raw: 'r' })
    assert.equal(r.json[0].path, '/root/r.txt')
    assertError(await v1('GET', sb('/files?path=/etc/by-root&user=mallory')), 400, 'bad_request')
  } finally { await killSandbox(id) }
})
