// Indented cells through `@e2b/code-interpreter` 2.8.0: code written inside an indented
// template literal runs as IPython runs it (leading blank lines dropped, the first line's
// indentation removed from every line), with its results, charts and display data. The other
// kernels (JavaScript, TypeScript, bash, R, Java) do not care about indentation; E2B's own
// tests send them indented cells too.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

test('python: an indented cell runs; its last expression is the main result', async () => {
  const e = await sbx.runCode(`
    base = 40
    def add(v):
        return v + base

    print("printed")
    add(2)
  `)
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, '42')
  assert.equal(e.logs.stdout.join(''), 'printed\n')
  assert.equal((await sbx.runCode('add(0)')).text, '40')
})

test('python: an indented cell keeps its charts and display data', async () => {
  const e = await sbx.runCode(`
        import matplotlib.pyplot as plt
        from IPython.display import display, HTML
        display(HTML("<b>shown</b>"))
        plt.plot([0, 1, 2], [0, 1, 4], label="sq")
        plt.title("Indented")
        plt.show()
        "done"
  `)
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.ok(e.results.some((r) => r.html === '<b>shown</b>'), JSON.stringify(e.results))
  const chart = e.results.find((r) => r.chart)
  assert.ok(chart, JSON.stringify(e.results.map((r) => r.formats())))
  assert.equal(chart.chart.title, 'Indented')
  assert.deepEqual(chart.chart.elements[0].points, [[0, 0], [1, 1], [2, 4]])
  assert.equal(e.text, 'done')
})

test('python: tabs, magics and a DataFrame in an indented cell', async () => {
  const t = await sbx.runCode('\tdef f():\n\t\treturn 3\n\tf()')
  assert.equal(t.error, undefined, t.error?.traceback)
  assert.equal(t.text, '3')
  const m = await sbx.runCode(`
    !echo from-shell
    import pandas as pd
    pd.DataFrame({"a": [1, 2]})
  `)
  assert.equal(m.error, undefined, m.error?.traceback)
  assert.equal(m.logs.stdout.join(''), 'from-shell\n')
  assert.deepEqual(m.results[0].data, { a: [1, 2] })
})

test('python: a line indented less than the first is still an IndentationError', async () => {
  const e = await sbx.runCode('    x = 1\n  y = 2')
  assert.equal(e.error?.name, 'IndentationError')
})

test('javascript and typescript: indented cells with imports and a last expression', async () => {
  const js = await sbx.runCode(
    `
    import { readFileSync } from 'fs'
    const n = 21
    console.log(typeof readFileSync)
    n * 2
  `,
    { language: 'js' }
  )
  assert.equal(js.error, undefined, js.error?.traceback)
  assert.equal(js.logs.stdout.join(''), 'function\n')
  assert.equal(js.text, '42')
  const ts = await sbx.runCode(
    `
      const m: string = "typed"
      await Promise.resolve(m)
    `,
    { language: 'ts' }
  )
  assert.equal(ts.error, undefined, ts.error?.traceback)
  assert.equal(ts.text, 'typed')
})

test('bash: an indented cell', async () => {
  const e = await sbx.runCode(
    `
      V=indented
      echo "$V"
  `,
    { language: 'bash' }
  )
  assert.equal(e.error, undefined)
  assert.equal(e.logs.stdout.join(''), 'indented\n')
})

test('r and java: indented cells', async () => {
  const r = await sbx.runCode(
    `
      half <- 21
      cat("r ran\\n")
      half * 2
  `,
    { language: 'r' }
  )
  assert.equal(r.error, undefined, r.error?.traceback)
  assert.equal(r.logs.stdout.join(''), 'r ran\n')
  assert.equal(r.text, '[1] 42')
  const j = await sbx.runCode(
    `
      int half = 21;
      System.out.println("java ran");
      half * 2
  `,
    { language: 'java' }
  )
  assert.equal(j.error, undefined, j.error?.traceback)
  assert.equal(j.logs.stdout.join(''), 'java ran\n')
  assert.equal(j.text, '42')
})
