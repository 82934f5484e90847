// The code interpreter as code inside the sandbox sees it (guest-agent/interp/code-inside.h):
// E2B's template serves its API on port 49999 inside the sandbox, so a program there can run
// code or check /health; and a kernel killed from inside (as root) is started again on the
// next execution, which says what was lost. Through the unmodified @e2b/code-interpreter SDK.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

const sh = async (cmd, opts) => (await sbx.commands.run(cmd, { timeoutMs: 60000, ...opts })).stdout

test('port 49999 answers inside the sandbox: /health, /execute, /contexts', async () => {
  assert.equal(await sh('curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1:49999/health'), '200')
  assert.equal(await sh('curl -s -o /dev/null -w "%{http_code}" "http://[::1]:49999/health"'), '200')
  // the NDJSON of an execution, as the SDK reads it from outside
  const out = await sh(`curl -s -X POST -H 'Content-Type: application/json' -d '{"code":"21*2"}' http://127.0.0.1:49999/execute`)
  const lines = out.trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(lines.map((l) => l.type), ['number_of_executions', 'result', 'end_of_execution'])
  assert.equal(lines[1].text, '42')
  // the same kernel as the SDK's: state is shared with runCode
  await sbx.runCode('shared_from_outside = "yes"')
  const py = await sh(`python3 -c "
import json, urllib.request
req = urllib.request.Request('http://127.0.0.1:49999/execute', data=json.dumps({'code': 'shared_from_outside'}).encode(),
                             headers={'Content-Type': 'application/json'})
for line in urllib.request.urlopen(req):
    m = json.loads(line)
    if m['type'] == 'result': print(m['text'])
"`)
  assert.equal(py, 'yes\n')
  const ctx = JSON.parse(await sh(`curl -s -X POST -H 'Content-Type: application/json' -d '{"language":"python","cwd":"/tmp"}' http://127.0.0.1:49999/contexts`))
  assert.match(ctx.id, /^[0-9a-f-]{36}$/)
  assert.equal(ctx.cwd, '/tmp')
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'one table of contexts, inside and out')
  // bad input gets an answer, not a hang
  assert.equal(await sh(`curl -s -o /dev/null -w "%{http_code}" -X POST -d 'not json' http://127.0.0.1:49999/execute`), '422')
  assert.equal(await sh('curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1:49999/nope'), '404')
})

test('a kernel killed from inside comes back on the next runCode, which says what was lost', async () => {
  const first = await sbx.runCode('kept = 41\nkept + 1')
  assert.equal(first.text, '42')
  const pid = (await sh("pgrep -f 'kernels/python/kernel.py' | head -n 1", { user: 'root' })).trim()
  assert.match(pid, /^\d+$/, 'the python kernel is a process of the sandbox')
  // kill returns once the signal is sent; the kernel is gone once PID 1 has reaped it
  await sh(`kill -9 ${pid}; for i in $(seq 200); do [ -e /proc/${pid} ] || break; sleep 0.05; done`, { user: 'root' })
  const after = await sbx.runCode('kept')
  assert.equal(after.error?.name, 'NameError', 'the state went with the kernel')
  assert.match(after.logs.stderr.join(''), /python kernel of this context had stopped .* started again: variables, imports and definitions of earlier executions are lost/)
  const again = await sbx.runCode('kept = 1\nkept + 1')
  assert.equal(again.text, '2')
  assert.deepEqual(again.logs.stderr, [], 'said once')
  // inside, the restarted kernel serves as well
  assert.equal(await sh('curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1:49999/health'), '200')
})
