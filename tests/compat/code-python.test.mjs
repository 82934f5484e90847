// The code interpreter's Python kernel through the unmodified npm `@e2b/code-interpreter`
// (pinned 2.8.0) against a real sbxd, template code-interpreter-v1.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { TimeoutError } from 'e2b'
import { useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create({ envs: { GLOBAL_VAR: 'from-create' } }), (s) => (sbx = s))

test('sandbox uses template code-interpreter-v1 and runCode("1+1") gives text "2"', async () => {
  const info = await sbx.getInfo()
  assert.equal(info.templateId, 'code-interpreter-v1')
  const e = await sbx.runCode('1+1')
  assert.equal(e.text, '2')
  assert.equal(e.error, undefined)
  assert.equal(e.results.length, 1)
  assert.equal(e.results[0].isMainResult, true)
})

test('state persists between executions; execution count grows', async () => {
  const a = await sbx.runCode('x = 41')
  assert.equal(a.results.length, 0)
  const b = await sbx.runCode('x + 1')
  assert.equal(b.text, '42')
  assert.ok(b.executionCount > a.executionCount, `${b.executionCount} > ${a.executionCount}`)
})

test('strings lose their quotes in text; a trailing semicolon suppresses the result', async () => {
  assert.equal((await sbx.runCode("'hello'")).text, 'hello')
  const e = await sbx.runCode('41 + 1;')
  assert.equal(e.results.length, 0)
})

test('pandas DataFrame: html and data (to_dict orient=list), text table', async () => {
  const e = await sbx.runCode('import pandas as pd; pd.DataFrame({"a":[1,2],"b":["x","y"]})')
  assert.equal(e.error, undefined)
  const r = e.results[0]
  assert.ok(r.html.includes('<table'), r.html)
  assert.deepEqual(r.data, { a: [1, 2], b: ['x', 'y'] })
  assert.match(r.text, /a\s+b/)
})

test('DataFrame data: timestamps as ISO strings, NaN as null', async () => {
  const e = await sbx.runCode(
    'import pandas as pd, numpy as np\n' +
      'pd.DataFrame({"t": pd.to_datetime(["2024-01-02", "2024-01-03"]), "v": [1.5, np.nan]})'
  )
  assert.deepEqual(e.results[0].data, { t: ['2024-01-02T00:00:00', '2024-01-03T00:00:00'], v: [1.5, null] })
})

test('1/0: error with name, value and a traceback naming the cell', async () => {
  const e = await sbx.runCode('1/0')
  assert.equal(e.error.name, 'ZeroDivisionError')
  assert.equal(e.error.value, 'division by zero')
  assert.match(e.error.traceback, /ZeroDivisionError: division by zero/)
  assert.match(e.error.traceback, /<cell-\d+>/)
  assert.equal(e.results.length, 0)
})

test('NameError and SyntaxError are errors; the kernel survives them', async () => {
  const n = await sbx.runCode('undefined_name_here')
  assert.equal(n.error.name, 'NameError')
  assert.match(n.error.value, /undefined_name_here/)
  const s = await sbx.runCode('def broken(:\n  pass')
  assert.equal(s.error.name, 'SyntaxError')
  assert.equal((await sbx.runCode('x')).text, '41')
})

test('stdout and stderr are separate logs, each line with its text', async () => {
  const e = await sbx.runCode('import sys\nprint("out1")\nprint("err1", file=sys.stderr)\nprint("out2")')
  assert.equal(e.logs.stdout.join(''), 'out1\nout2\n')
  assert.equal(e.logs.stderr.join(''), 'err1\n')
})

test('output streams live: onStdout lines arrive in order, spread over time, before the end', async () => {
  const seen = []
  const t0 = Date.now()
  const e = await sbx.runCode('import time\nfor i in range(3):\n    print(i)\n    time.sleep(0.4)', {
    onStdout: (m) => seen.push({ line: m.line, at: Date.now() - t0, ts: m.timestamp }),
  })
  assert.equal(e.error, undefined)
  assert.deepEqual(seen.map((s) => s.line), ['0\n', '1\n', '2\n'])
  assert.ok(seen[1].at - seen[0].at >= 250, `second line came ${seen[1].at - seen[0].at} ms after the first`)
  assert.ok(seen[2].at - seen[1].at >= 250, `third line came ${seen[2].at - seen[1].at} ms after the second`)
  assert.ok(seen[0].ts <= seen[1].ts && seen[1].ts <= seen[2].ts)
})

test('NDJSON wire: stdout lines carry ISO timestamps; results follow the output printed before them', async () => {
  const res = await fetch(`${process.env.E2B_SANDBOX_URL}/execute`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'E2b-Sandbox-Id': sbx.sandboxId,
      'E2b-Sandbox-Port': '49999',
      'X-Access-Token': sbx.envdAccessToken,
    },
    body: JSON.stringify({ code: 'print("before")\ndisplay("shown")\nprint("after")\n7' }),
  })
  assert.equal(res.status, 200)
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l))
  const kinds = lines.map((l) => (l.type === 'result' ? `result:${l.text}` : l.type === 'stdout' ? `stdout:${l.text}` : l.type))
  assert.deepEqual(kinds, ['number_of_executions', 'stdout:before\n', 'result:shown', 'stdout:after\n', 'result:7', 'end_of_execution'])
  for (const l of lines.filter((x) => x.type === 'stdout')) {
    assert.match(l.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
  }
})

test('env vars per execution apply to that execution only; global env from create is kept', async () => {
  const a = await sbx.runCode('import os; os.environ.get("PER_RUN"), os.environ.get("GLOBAL_VAR")', {
    envs: { PER_RUN: 'yes', GLOBAL_VAR: 'overridden' },
  })
  assert.equal(a.text, "('yes', 'overridden')")
  const b = await sbx.runCode('import os; os.environ.get("PER_RUN"), os.environ.get("GLOBAL_VAR")')
  assert.equal(b.text, "(None, 'from-create')")
})

test('the default context runs in /home/user as root (as on E2B); subprocesses see the env', async () => {
  const e = await sbx.runCode('import os; os.getcwd(), os.getuid(), os.environ["HOME"]')
  assert.equal(e.text, "('/home/user', 0, '/root')")
  const s = await sbx.runCode('import subprocess; subprocess.run("echo $SUB_ENV", shell=True)', {
    envs: { SUB_ENV: 'inherited' },
  })
  assert.equal(s.logs.stdout.join(''), 'inherited\n')
})

test('!cmd shell lines and x = !cmd, %cd', async () => {
  const e = await sbx.runCode('!echo from-shell\nfiles = !ls /\n"usr" in files')
  assert.equal(e.logs.stdout.join(''), 'from-shell\n')
  assert.equal(e.text, 'True')
  const c = await sbx.runCode('%cd /tmp\nimport os; os.getcwd()')
  assert.equal(c.text, '/tmp')
  await sbx.runCode('%cd /home/user')
})

test('rich reprs: _repr_html_, _repr_markdown_, _repr_svg_, _repr_latex_, _repr_json_, display()', async () => {
  const e = await sbx.runCode(
    'class R:\n' +
      '    def _repr_html_(self): return "<b>h</b>"\n' +
      '    def _repr_markdown_(self): return "**m**"\n' +
      '    def _repr_svg_(self): return "<svg></svg>"\n' +
      '    def _repr_latex_(self): return "$x$"\n' +
      '    def _repr_json_(self): return {"k": [1, 2]}\n' +
      'display(R())\nR()'
  )
  assert.equal(e.results.length, 2)
  const [d, m] = e.results
  assert.equal(d.isMainResult, false)
  assert.equal(m.isMainResult, true)
  for (const r of [d, m]) {
    assert.equal(r.html, '<b>h</b>')
    assert.equal(r.markdown, '**m**')
    assert.equal(r.svg, '<svg></svg>')
    assert.equal(r.latex, '$x$')
    assert.deepEqual(r.json, { k: [1, 2] })
  }
})

test('IPython.display objects work (HTML)', async () => {
  const e = await sbx.runCode('from IPython.display import HTML, display\ndisplay(HTML("<i>i</i>"))')
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.results[0].html, '<i>i</i>')
})

test('PIL image: png result as the main result and on Image.show()', async () => {
  const e = await sbx.runCode('from PIL import Image\nimg = Image.new("RGB", (4, 3), "red")\nimg.show()\nimg')
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.results.length, 2)
  for (const r of e.results) {
    const png = Buffer.from(r.png, 'base64')
    assert.equal(png.subarray(1, 4).toString(), 'PNG')
  }
})

test('top-level await', async () => {
  const e = await sbx.runCode('import asyncio\nawait asyncio.sleep(0.01)\nawait asyncio.sleep(0, result=5)')
  assert.equal(e.text, '5')
})

test('timeoutMs interrupts a busy loop (TimeoutError); the state is kept', async () => {
  await sbx.runCode('kept = "still here"')
  const t0 = Date.now()
  await assert.rejects(sbx.runCode('while True: pass', { timeoutMs: 1000 }), (e) => {
    assert.ok(e instanceof TimeoutError, `got ${e?.constructor?.name}: ${e}`)
    return true
  })
  assert.ok(Date.now() - t0 < 5000)
  const e = await sbx.runCode('kept')
  assert.equal(e.text, 'still here')
})

test('a killed kernel is reported as an error; the next run gets a fresh kernel', async () => {
  await sbx.runCode('before_kill = 1')
  const e = await sbx.runCode('import os, signal; os.kill(os.getpid(), signal.SIGKILL)')
  assert.ok(e.error, 'no error reported')
  assert.equal(e.error.name, 'ContextRestarting')
  const n = await sbx.runCode('1+1')
  assert.equal(n.text, '2')
  const gone = await sbx.runCode('before_kill')
  assert.equal(gone.error?.name, 'NameError')
})

test('unicode output and results survive', async () => {
  const e = await sbx.runCode('print("héllo ✓ 日本")\n"ünï"')
  assert.equal(e.logs.stdout.join(''), 'héllo ✓ 日本\n')
  assert.equal(e.text, 'ünï')
})
