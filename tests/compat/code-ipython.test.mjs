// The code interpreter's Python results side by side with a real IPython kernel (Debian's
// python3-ipykernel through python3-jupyter-client, fixtures/ipython-ref.py): the same cells
// in both, and what the unmodified `@e2b/code-interpreter` SDK reads must be what Jupyter
// shows, through E2B's own rule for `text` (its server gives a string's value, not its repr:
// a text/plain that starts and ends with the same quote loses them). html and markdown are
// compared wherever IPython gives them.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox } from '@e2b/code-interpreter'

const HERE = dirname(fileURLToPath(import.meta.url))

const SETUP = `
import numpy as np, pandas as pd, datetime, decimal, fractions, collections, enum
class Html:
    def _repr_html_(self): return '<b>bold</b>'
class Md:
    def _repr_markdown_(self): return '# title'
    def __repr__(self): return 'Md()'
class Pretty:
    def _repr_pretty_(self, p, cycle): p.text('Pretty<%d>' % 3)
class Plain:
    def __repr__(self): return 'Plain(x=1)'
class Color(enum.Enum):
    RED = 1
`

// Each cell's last expression is the result both sides format.
const CELLS = [
  '"abc"', "'it\\'s'", '"a\\nb"', "b'bytes\\x00'", 'bytearray(b"xy")', 'None', '42', '-7', '3.5',
  '1/3', '1e300*10', 'float("nan")', '2**100', '1+2j', 'True',
  '[1, "two", 3.0]', '(1,)', '()', '{"b": 1, "a": [1, 2]}', '{3, 1, 2}', 'frozenset({"x"})',
  'list(range(30))', 'list(range(2000))', '{i: str(i) * 5 for i in range(20)}',
  '[[i] * 12 for i in range(8)]', 'collections.OrderedDict(a=1)', 'collections.Counter("hello")',
  'range(5)', 'datetime.date(2024, 1, 2)', 'decimal.Decimal("1.10")', 'fractions.Fraction(1, 3)',
  'Color.RED', 'len', 'str', 'np.arange(12).reshape(3, 4)', 'np.float64(2.5)', 'np.int64(7)',
  'np.array(["a", "b"])', 'np.zeros(2000)',
  'pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})', 'pd.Series([1.5, 2.5], name="s")',
  'pd.DataFrame({"n": range(100)})',
  'Html()', 'Md()', 'Pretty()', 'Plain()', '[Plain(), Pretty()]',
  '"x" * 500', '"\\u00e9t\\u00e9"',
]

let sbx, ref

before(async () => {
  const input = JSON.stringify([SETUP, ...CELLS])
  ref = JSON.parse(execFileSync('/usr/bin/python3', [join(HERE, 'fixtures/ipython-ref.py')],
    { input, encoding: 'utf8', timeout: 120000, maxBuffer: 64 << 20 })).slice(1)
  sbx = await Sandbox.create()
  const s = await sbx.runCode(SETUP)
  assert.equal(s.error, undefined, JSON.stringify(s.error))
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
})

// E2B's server (and so its SDKs' `text`): a text/plain in single quotes (a string's repr) loses
// them; one in double quotes ("it's") keeps them.
const e2bText = (t) => t && t.length >= 2 && t[0] === "'" && t.at(-1) === "'" ? t.slice(1, -1) : t

test('every cell formats as in Jupyter: text, html, markdown', { timeout: 300000 }, async () => {
  const diffs = []
  for (let i = 0; i < CELLS.length; i++) {
    const want = ref[i]
    const got = await sbx.runCode(CELLS[i])
    assert.equal(got.error, undefined, `${CELLS[i]}: ${JSON.stringify(got.error)}`)
    const main = got.results.find((r) => r.isMainResult)
    if (want === null) {
      if (main) diffs.push(`${CELLS[i]}: Jupyter shows nothing, sbx gave ${JSON.stringify(main.text)}`)
      continue
    }
    assert.ok(!want.error, `the reference failed on ${CELLS[i]}: ${want.error}`)
    if (!main) {
      diffs.push(`${CELLS[i]}: no result`)
      continue
    }
    const pairs = [['text', e2bText(want['text/plain'])], ['html', want['text/html']], ['markdown', want['text/markdown']]]
    // object addresses differ between any two processes
    const addr = (t) => typeof t === 'string' ? t.replace(/ at 0x[0-9a-f]+/g, ' at 0x…') : t
    for (const [field, expected] of pairs) {
      if (expected !== undefined && addr(main[field]) !== addr(expected))
        diffs.push(`${CELLS[i]} ${field}:\n  jupyter ${JSON.stringify(expected).slice(0, 400)}\n  sbx     ${JSON.stringify(main[field]).slice(0, 400)}`)
    }
  }
  assert.deepEqual(diffs, [], diffs.join('\n'))
})

test('the reference is IPython: a string is quoted there, and E2B\'s rule unquotes it', () => {
  assert.equal(ref[CELLS.indexOf('"abc"')]['text/plain'], "'abc'")
  assert.equal(e2bText(ref[CELLS.indexOf("'it\\'s'")]['text/plain']), '"it\'s"')
  assert.equal(ref[CELLS.indexOf('list(range(30))')]['text/plain'].split('\n').length, 30, 'pretty-printed one item a line')
})
