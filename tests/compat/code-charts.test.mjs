// matplotlib figures through `@e2b/code-interpreter` 2.8.0: a png plus the structured chart of
// E2B's e2b_charts extractor for every chart type.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

async function chartOf(code) {
  const e = await sbx.runCode('import matplotlib.pyplot as plt\n' + code)
  assert.equal(e.error, undefined, e.error?.traceback)
  const r = e.results.find((x) => x.chart)
  assert.ok(r, `no chart in ${JSON.stringify(e.results.map((x) => x.formats()))}`)
  assert.equal(Buffer.from(r.png, 'base64').subarray(1, 4).toString(), 'PNG')
  assert.match(r.text, /^<Figure size \d+x\d+ with \d+ Axes>$/)
  return r.chart
}

test('line chart on plt.show(): title, labels, units, ticks, scale, points', async () => {
  const c = await chartOf(
    'plt.plot([0, 1, 2], [0, 1, 4], label="squares")\nplt.plot([0, 1, 2], [0, 2, 4])\n' +
      'plt.title("Growth")\nplt.xlabel("time (s)")\nplt.ylabel("size [m]")\nplt.show()'
  )
  assert.equal(c.type, 'line')
  assert.equal(c.title, 'Growth')
  assert.equal(c.x_label, 'time (s)')
  assert.equal(c.x_unit, 's')
  assert.equal(c.y_unit, 'm')
  assert.equal(c.x_scale, 'linear')
  assert.ok(Array.isArray(c.x_ticks) && c.x_ticks.length > 0)
  assert.ok(Array.isArray(c.y_tick_labels))
  assert.equal(c.elements.length, 2)
  assert.equal(c.elements[0].label, 'squares')
  assert.deepEqual(c.elements[0].points, [[0, 0], [1, 1], [2, 4]])
  assert.equal(c.elements[1].label, 'Line 1')
})

test('scatter chart (figure left open at the end of the cell)', async () => {
  const c = await chartOf('plt.scatter([1, 2, 3], [3, 2, 1], label="pts")\nplt.title("S")')
  assert.equal(c.type, 'scatter')
  assert.equal(c.title, 'S')
  assert.equal(c.elements[0].label, 'pts')
  assert.deepEqual(c.elements[0].points, [[1, 3], [2, 2], [3, 1]])
})

test('bar chart: label, value, group', async () => {
  const c = await chartOf('plt.bar(["a", "b", "c"], [3, 5, 2], label="g1")\nplt.xlabel("k")\nplt.show()')
  assert.equal(c.type, 'bar')
  assert.deepEqual(c.elements, [
    { label: 'a', group: 'g1', value: 3 },
    { label: 'b', group: 'g1', value: 5 },
    { label: 'c', group: 'g1', value: 2 },
  ])
  assert.equal(c.x_label, 'k')
})

test('pie chart: label, angle, radius', async () => {
  const c = await chartOf('plt.pie([1, 1, 2], labels=["x", "y", "z"])\nplt.title("P")\nplt.show()')
  assert.equal(c.type, 'pie')
  assert.equal(c.title, 'P')
  assert.deepEqual(c.elements.map((e) => e.label), ['x', 'y', 'z'])
  assert.deepEqual(c.elements.map((e) => Math.round(e.angle)), [90, 90, 180])
  assert.equal(c.elements[0].radius, 1)
})

test('box and whisker chart: quartiles, whiskers, outliers', async () => {
  const c = await chartOf(
    'plt.boxplot([[1, 2, 3, 4, 5, 20], [2, 3, 4, 5, 6]], labels=["A", "B"], patch_artist=True)\nplt.ylabel("v")\nplt.show()'
  )
  assert.equal(c.type, 'box_and_whisker')
  assert.equal(c.elements.length, 2)
  const [a, b] = c.elements
  assert.equal(a.label, 'A')
  assert.equal(a.median, 3.5)
  assert.equal(a.min, 1)
  assert.equal(a.max, 5)
  assert.deepEqual(a.outliers, [20])
  assert.equal(b.label, 'B')
  assert.equal(b.first_quartile, 3)
  assert.equal(b.third_quartile, 5)
})

test('superchart: one element per axes, suptitle as title', async () => {
  const c = await chartOf(
    'fig, (ax1, ax2) = plt.subplots(1, 2)\nax1.plot([1, 2], [3, 4])\nax2.bar(["p", "q"], [1, 2])\n' +
      'fig.suptitle("Both")\nplt.show()'
  )
  assert.equal(c.type, 'superchart')
  assert.equal(c.title, 'Both')
  assert.deepEqual(c.elements.map((e) => e.type), ['line', 'bar'])
})

test('a figure as the last expression is the main result; it is not shown twice', async () => {
  const e = await sbx.runCode('import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.plot([1, 2])\nfig')
  assert.equal(e.error, undefined, e.error?.traceback)
  const charts = e.results.filter((r) => r.png)
  assert.equal(charts.length, 1)
  assert.equal(charts[0].isMainResult, true)
  assert.equal(charts[0].chart.type, 'line')
})

test('first runCode importing pandas and matplotlib in a new sandbox is fast (prewarmed kernel)', async () => {
  const fresh = await Sandbox.create()
  try {
    const t0 = Date.now()
    const e = await fresh.runCode('import pandas as pd\nimport matplotlib.pyplot as plt\npd.__name__, plt.__name__')
    const ms = Date.now() - t0
    assert.equal(e.text, "('pandas', 'matplotlib.pyplot')")
    // Not a benchmark (bench/code-bench.mjs is): only "the imports were already done".
    assert.ok(ms < 3000, `${ms} ms`)
  } finally {
    await fresh.kill()
  }
})
