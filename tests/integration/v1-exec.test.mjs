// Native API: sandboxes, exec and run-code against a real sbxd with real sandboxes.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { v1, assertError, createSandbox, killSandbox } from './v1-lib.mjs'

let id
before(async () => { id = await createSandbox({ env: { GREETING: 'hi there' }, metadata: { suite: 'v1-exec' } }) })
after(async () => { if (id) await killSandbox(id) })

test('sandboxes: create, get, list, errors', async () => {
  const g = await v1('GET', `/v1/sandboxes/${id}`)
  assert.equal(g.status, 200)
  assert.equal(g.json.id, id)
  assert.equal(g.json.template, 'base')
  assert.equal(g.json.state, 'running')
  assert.deepEqual(g.json.metadata, { suite: 'v1-exec' })
  const l = await v1('GET', '/v1/sandboxes')
  assert.ok(l.json.sandboxes.some((s) => s.id === id))
  assertError(await v1('GET', '/v1/sandboxes/nosuchbox'), 404, 'not_found')
  assertError(await v1('GET', '/v1/sandboxes', { key: null }), 401, 'unauthorized')
  assertError(await v1('GET', '/v1/sandboxes', { key: 'e2b_' + '0'.repeat(40) }), 401)
  assertError(await v1('POST', '/v1/sandboxes', { body: { template: 'nope' } }), 404)
  assertError(await v1('POST', '/v1/sandboxes', { body: { template: '../x' } }), 400, 'bad_request')
  assertError(await v1('POST', '/v1/sandboxes', { body: { timeout: -1 } }), 400)
  assertError(await v1('POST', '/v1/sandboxes', { body: '{not json' }), 400)
  assertError(await v1('GET', '/v1/nothing'), 404)
  assertError(await v1('PATCH', `/v1/sandboxes/${id}`), 405)
  assertError(await v1('POST', '/v1/sandboxes/nosuchbox/exec', { body: { cmd: 'true' } }), 404)
})

test('exec: argv, shell string, env from creation, no state between calls', async () => {
  let r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: ['python3', '-c', 'print(2+2)'] } })
  assert.equal(r.status, 200, r.text)
  assert.equal(r.json.result.ok, true)
  assert.equal(r.json.result.stdout, '4\n')
  assert.equal(r.json.result.exit_code, 0)
  assert.equal(r.json.result.timed_out, false)
  assert.equal(typeof r.json.result.duration_ms, 'number')
  r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'echo "$GREETING"; echo err >&2; exit 3' } })
  assert.equal(r.json.result.stdout, 'hi there\n')
  assert.equal(r.json.result.stderr, 'err\n')
  assert.equal(r.json.result.exit_code, 3)
  assert.equal(r.json.result.ok, false)
  // argv is not a shell: no expansion
  r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: ['echo', '$HOME', '*'] } })
  assert.equal(r.json.result.stdout, '$HOME *\n')
  r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'cd /tmp && export X=1 && pwd' } })
  assert.equal(r.json.result.stdout, '/tmp\n')
  r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'pwd; echo "X=$X"; id -un' } })
  assert.equal(r.json.result.stdout, '/home/user\nX=\nuser\n')
  r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: ['id', '-u'], user: 'root' } })
  assert.equal(r.json.result.stdout, '0\n')
  r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: ['no-such-binary-x'] } })
  assert.equal(r.json.result.exit_code, 127)
  // invalid UTF-8 comes back replaced, as valid JSON
  r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: "printf 'a\\377b'" } })
  assert.equal(r.json.result.stdout, 'a\uFFFDb')
})

test('exec: timeout default/maximum and validation', async () => {
  const t0 = Date.now()
  const r = await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'echo before; sleep 10', timeout_ms: 500 } })
  assert.equal(r.status, 200, r.text)
  assert.equal(r.json.result.timed_out, true)
  assert.equal(r.json.result.ok, false)
  assert.equal(r.json.result.stdout, 'before\n')
  assert.ok(Date.now() - t0 < 5000)
  assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'true', timeout_ms: 300001 } }), 400, 'bad_request')
  assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'true', timeout_ms: 0 } }), 400)
  assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: [] } }), 400)
  assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: [1] } }), 400)
  assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: {} }), 400)
  assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: { cmd: 'true', user: 'bob' } }), 400)
  assertError(await v1('POST', `/v1/sandboxes/${id}/exec`, { body: '[1,2]' }), 400)
})

test('run-code: languages, missing interpreter, output limit', async () => {
  let r = await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'print(2+2)' } })
  assert.equal(r.status, 200, r.text)
  assert.deepEqual({ ...r.json, duration_ms: 0 }, { stdout: '4\n', stderr: '', exit_code: 0, duration_ms: 0, lang: 'python', timed_out: false })
  r = await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'echo $((6*7))', lang: 'bash' } })
  assert.equal(r.json.stdout, '42\n')
  r = await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'echo sh', lang: 'sh' } })
  assert.equal(r.json.stdout, 'sh\n')
  r = await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'raise ValueError("boom")' } })
  assert.equal(r.json.exit_code, 1)
  assert.match(r.json.stderr, /ValueError: boom/)
  // node: either it runs, or (not installed in this template) exit 127 with no output at all
  r = await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'console.log(1+1)', lang: 'node' } })
  if (r.json.exit_code === 127) assert.deepEqual([r.json.stdout, r.json.stderr], ['', ''])
  else assert.equal(r.json.stdout, '2\n')
  // a missing interpreter: 127, empty output, no error
  const bare = await createSandbox({ env: { PATH: '/nonexistent' } })
  try {
    r = await v1('POST', `/v1/sandboxes/${bare}/run-code`, { body: { code: 'print(1)' } })
    assert.equal(r.status, 200, r.text)
    assert.deepEqual([r.json.exit_code, r.json.stdout, r.json.stderr], [127, '', ''])
  } finally { await killSandbox(bare) }
  assertError(await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'x', lang: 'ruby' } }), 400)
  assertError(await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { lang: 'python' } }), 400)
  // more than 16 MiB of combined output fails, telling the caller to use a file
  r = await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'import sys\nfor i in range(20): sys.stdout.write("x" * (1 << 20))' } })
  assertError(r, 422, 'output_too_large')
  assert.match(r.json.error.message, /redirect/)
  assert.match(r.json.error.message, /file/)
  // just under the limit is fine
  r = await v1('POST', `/v1/sandboxes/${id}/run-code`, { body: { code: 'import sys\nsys.stdout.write("y" * (15 << 20))' } })
  assert.equal(r.status, 200)
  assert.equal(r.json.stdout.length, 15 << 20)
})

// Code is handed to the interpreter on stdin, not as one argv string: Linux caps one at 128 KiB
// (MAX_ARG_STRLEN), so these all failed (413) while run-code used `python3 -c CODE`.
const CODE_MAX = 4 << 20
const MiB = 1 << 20
// "0,1,2,..." of at least n bytes, and how many numbers and their sum
function numbers(n, sep = ',') {
  const parts = []
  let len = 0
  for (let i = 0; len < n; i++) { const s = String(i); parts.push(s); len += s.length + 1 }
  return { list: parts.join(sep), count: parts.length, sum: (parts.length * (parts.length - 1)) / 2 }
}
const runCode = (body, sid = id) => v1('POST', `/v1/sandboxes/${sid}/run-code`, { body })

test('run-code: 1 MiB programs in every language', async () => {
  const n = numbers(MiB)
  let r = await runCode({ code: `xs = [${n.list}]\nprint(len(xs), sum(xs))\n` })
  assert.equal(r.status, 200, r.text.slice(0, 500))
  assert.deepEqual([r.json.stdout, r.json.stderr, r.json.exit_code], [`${n.count} ${n.sum}\n`, '', 0])
  r = await runCode({ lang: 'node', code: `const xs = [${n.list}]\nconsole.log(xs.length, xs.reduce((a, b) => a + b, 0))\n` })
  assert.equal(r.status, 200, r.text.slice(0, 500))
  assert.deepEqual([r.json.stdout, r.json.stderr, r.json.exit_code], [`${n.count} ${n.sum}\n`, '', 0])
  const w = numbers(MiB, ' ')
  r = await runCode({ lang: 'bash', code: `a=(${w.list})\necho "\${#a[@]} \${a[-1]}"\n` })
  assert.equal(r.status, 200, r.text.slice(0, 500))
  assert.deepEqual([r.json.stdout, r.json.stderr, r.json.exit_code], [`${w.count} ${w.count - 1}\n`, '', 0])
  r = await runCode({ lang: 'sh', code: `set -- ${w.list}\necho "$#"\n` })
  assert.equal(r.status, 200, r.text.slice(0, 500))
  assert.deepEqual([r.json.stdout, r.json.stderr, r.json.exit_code], [`${w.count}\n`, '', 0])
  // errors still point at the right line of the code
  r = await runCode({ code: `xs = [${n.list}]\nx = 1\nraise ValueError("late")\n` })
  assert.equal(r.json.exit_code, 1)
  assert.match(r.json.stderr, /File "<stdin>", line 3, in <module>\n.*ValueError: late/s)
  r = await runCode({ lang: 'node', code: `const xs = [${n.list}]\n\nthrow new Error('late')\n` })
  assert.equal(r.json.exit_code, 1)
  assert.match(r.json.stderr, /\[stdin\]:3\n/)
  assert.match(r.json.stderr, /Error: late/)
  r = await runCode({ lang: 'bash', code: 'true\nno-such-command-x\n' })
  assert.equal(r.json.exit_code, 127)
  assert.match(r.json.stderr, /line 2: no-such-command-x: command not found/)
})

test('run-code: the code limit is 4 MiB, beyond it 413', async () => {
  // exactly the maximum runs
  const head = 'print("at max")\n#'
  let r = await runCode({ code: head + 'x'.repeat(CODE_MAX - head.length) })
  assert.equal(r.status, 200, r.text.slice(0, 500))
  assert.equal(r.json.stdout, 'at max\n')
  r = await runCode({ code: head + 'x'.repeat(CODE_MAX - head.length + 1) })
  assertError(r, 413, 'payload_too_large')
  assert.match(r.json.error.message, /4194304 bytes/)
  // the JSON body bound (8 MiB) answers with the same shape
  assertError(await runCode({ code: '\n'.repeat(CODE_MAX) }), 413, 'payload_too_large')
})

test('run-code: stdin is empty and the code fd does not leak', async () => {
  const pad = '#' + 'p'.repeat(MiB) + '\n'
  // a script whose first command reads stdin does not eat the rest of the script
  let r = await runCode({ lang: 'bash', code: 'cat\n' + pad + 'echo after\n' })
  assert.deepEqual([r.json.stdout, r.json.stderr, r.json.exit_code], ['after\n', '', 0])
  r = await runCode({ lang: 'sh', code: 'cat; echo after\n' + pad + 'echo end\n' })
  assert.deepEqual([r.json.stdout, r.json.stderr, r.json.exit_code], ['after\nend\n', '', 0])
  r = await runCode({ lang: 'bash', code: 'read -r x || echo "eof"; echo "${x:-nothing}"' })
  assert.equal(r.json.stdout, 'eof\nnothing\n')
  r = await runCode({ code: 'import sys\nprint(repr(sys.stdin.read()))\ntry:\n  input()\nexcept EOFError:\n  print("EOFError")\n' + pad })
  assert.equal(r.json.stdout, "''\nEOFError\n")
  // node: process.stdin ends (readline closes), as with /dev/null
  r = await runCode({ lang: 'node', code: 'console.log(JSON.stringify(require("fs").readFileSync(0, "utf8")))\nrequire("readline").createInterface({ input: process.stdin }).on("close", () => console.log("closed"))\n' + '//' + pad })
  assert.deepEqual([r.json.stdout, r.json.stderr], ['""\nclosed\n', ''])
  // only 0, 1, 2 are open in the user's code
  r = await runCode({ code: 'import os\nprint([fd for fd in range(256) if os.path.exists(f"/proc/self/fd/{fd}")])' })
  assert.equal(r.json.stdout, '[0, 1, 2]\n')
  // (not `ls | tr`: bash holds the pipe's ends until it has forked both sides, and ls may
  // look before that)
  r = await runCode({ lang: 'bash', code: 'ls /proc/$$/fd > /tmp/fds; tr "\\n" " " < /tmp/fds' })
  assert.equal(r.json.stdout, '0 1 2 ')
  // node has fds of its own (epoll, eventfd): none of them is the code's pipe (stdin)
  r = await runCode({ lang: 'node', code: 'const fs = require("fs"), l = (fd) => { try { return fs.readlinkSync(`/proc/self/fd/${fd}`) } catch { return "" } }\nconsole.log(fs.readdirSync("/proc/self/fd").filter((fd) => fd !== "0" && l(fd) === l(0)).length)' })
  assert.deepEqual([r.json.stdout, r.json.stderr], ['0\n', ''])
  // dynamic import() works as it did with node -e, without a warning
  r = await runCode({ lang: 'node', code: 'import("node:os").then((m) => console.log(typeof m.cpus))' })
  assert.deepEqual([r.json.stdout, r.json.stderr], ['function\n', ''])
  // a big program for a missing interpreter: still 127 and nothing else
  const bare = await createSandbox({ env: { PATH: '/nonexistent' } })
  try {
    r = await runCode({ code: pad + 'print(1)' }, bare)
    assert.deepEqual([r.status, r.json.exit_code, r.json.stdout, r.json.stderr], [200, 127, '', ''])
  } finally { await killSandbox(bare) }
})

test('a paused sandbox says so instead of hanging, and works again once resumed', async () => {
  const e2b = (method, path, body) => fetch(process.env.E2B_API_URL + path, { method, headers: { 'X-API-KEY': process.env.E2B_API_KEY, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) })
  const p = await createSandbox()
  try {
    assert.equal((await e2b('POST', `/sandboxes/${p}/pause`)).status, 204)
    assert.equal((await v1('GET', `/v1/sandboxes/${p}`)).json.state, 'paused')
    assertError(await v1('POST', `/v1/sandboxes/${p}/exec`, { body: { cmd: 'true' } }), 409, 'sandbox_paused')
    const r = await e2b('POST', `/sandboxes/${p}/resume`, { timeout: 60 })
    assert.ok(r.status < 300, String(r.status))
    const x = await v1('POST', `/v1/sandboxes/${p}/exec`, { body: { cmd: 'echo back' } })
    assert.equal(x.json.result.stdout, 'back\n')
  } finally { await killSandbox(p) }
})
