// The R kernel through `@e2b/code-interpreter` 2.8.0 (`language: 'r'`): state, env vars and cwd
// per context, streamed output, the last expression as the main result, data frames as text and
// HTML, plots as PNG, errors, and an interrupt on timeout that keeps the session.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { TimeoutError } from 'e2b'
import { useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create({ envs: { GLOBAL_R: 'from-create' } }), (s) => (sbx = s))
const r = (code, opts = {}) => sbx.runCode(code, { language: 'r', ...opts })

test('1+1, state between executions, the last visible value is the main result', async () => {
  const e = await r('1+1')
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, '[1] 2')
  assert.equal(e.results.length, 1)
  assert.equal(e.results[0].isMainResult, true)
  assert.equal((await r('kept <- 41')).results.length, 0)
  const two = await r('kept\nkept + 1')
  assert.deepEqual(two.results.map((x) => [x.text, x.isMainResult]), [['[1] 41', false], ['[1] 42', true]])
  assert.equal((await r('invisible(kept)')).results.length, 0)
})

test('the default r context appears on first use and runs as root in /home/user', async () => {
  const e = await r('c(getwd(), Sys.info()[["user"]], Sys.getenv("HOME"))')
  assert.equal(e.text, '[1] "/home/user" "root"       "/root"     ')
  const list = await sbx.listCodeContexts()
  assert.equal(list.filter((c) => c.language === 'r').length, 1)
})

test('stdout and stderr are separate and streamed while the cell runs', async () => {
  const go = '/tmp/go-r'
  const seen = []
  const e = await r(
    `cat("ready\\n"); message("to stderr"); warning("careful"); log(-1)
    while (!file.exists("${go}")) Sys.sleep(0.05)
    cat("done\\n")`,
    {
      timeoutMs: 30_000,
      // The cell waits for a file that is only written once "ready" has arrived here.
      onStdout: (m) => {
        seen.push(m.line)
        if (m.line === 'ready\n') sbx.files.write(go, 'x').catch(() => {})
      },
    }
  )
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.deepEqual(seen, ['ready\n', 'done\n'])
  assert.match(e.logs.stderr.join(''), /to stderr\n/)
  assert.match(e.logs.stderr.join(''), /Warning: careful\nWarning in log\(-1\) : NaNs produced\n/)
})

test('data frames as text and an HTML table; matrices too', async () => {
  const e = await r('df <- data.frame(a = c(1.5, 2), b = c("x", "<y>"))\ndf')
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.match(e.text, /a\s+b\n1 1\.5\s+x\n2 2\.0 <y>/)
  const html = e.results[0].html
  assert.ok(html.startsWith('<table class="dataframe">'), html)
  assert.match(html, /<caption>A data.frame: 2 &times; 2<\/caption>/)
  assert.match(html, /<th scope=col>a<\/th><th scope=col>b<\/th>/)
  assert.match(html, /<td>1.5<\/td><td>x<\/td>/)
  assert.match(html, /<td>&lt;y&gt;<\/td>/)
  const m = await r('matrix(1:4, 2)')
  assert.match(m.results[0].html, /A matrix: 2 &times; 2 of type int/)
})

test('plots come back as PNG display data after the main result', async () => {
  const e = await r('plot(1:10, main = "line")\nhist(rnorm(50))\n"after"')
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, '[1] "after"')
  const plots = e.results.filter((x) => x.png)
  assert.equal(plots.length, 2)
  for (const p of plots) {
    assert.equal(Buffer.from(p.png, 'base64').subarray(1, 4).toString(), 'PNG')
    assert.equal(p.isMainResult, false)
    assert.equal(p.text, 'plot without title')
  }
  assert.equal((await r('1')).results.filter((x) => x.png).length, 0)
})

test('errors: name ERROR, the message as R prints it, the calls', async () => {
  const e = await r('f <- function() g()\ng <- function() stop("deep trouble")\nf()')
  assert.equal(e.error.name, 'ERROR')
  assert.equal(e.error.value, 'Error in g(): deep trouble\n')
  assert.match(e.error.traceback, /1\. f\(\)\n2\. g\(\)/)
  const u = await r('no_such_object')
  assert.equal(u.error.value, "Error: object 'no_such_object' not found\n")
  const p = await r('1 +')
  assert.match(p.error.value, /unexpected end of input/)
  assert.equal((await r('kept')).text, '[1] 41')
})

test('env vars: the sandbox envs, per execution values that do not leak', async () => {
  assert.equal((await r('Sys.getenv("GLOBAL_R")')).text, '[1] "from-create"')
  const a = await r('c(Sys.getenv("PER_R"), Sys.getenv("GLOBAL_R"))', {
    envs: { PER_R: 'yes', GLOBAL_R: 'overridden' },
  })
  assert.equal(a.text, '[1] "yes"        "overridden"')
  const b = await r('c(Sys.getenv("PER_R", unset = "default"), Sys.getenv("GLOBAL_R"))')
  assert.equal(b.text, '[1] "default"     "from-create"')
  const s = await r('system("echo $SUB_R")', { envs: { SUB_R: 'inherited' } })
  assert.equal(s.logs.stdout.join(''), 'inherited\n')
})

test('createCodeContext r: its own cwd and session; restart clears it', async () => {
  const ctx = await sbx.createCodeContext({ language: 'r', cwd: '/tmp' })
  assert.equal(ctx.language, 'r')
  assert.equal((await sbx.runCode('getwd()', { context: ctx })).text, '[1] "/tmp"')
  await sbx.runCode('only_here <- 1; writeLines("w", "written.txt")', { context: ctx })
  assert.equal(await sbx.files.read('/tmp/written.txt'), 'w\n')
  assert.equal((await r('exists("only_here")')).text, '[1] FALSE')
  const res = await fetch(`${process.env.E2B_SANDBOX_URL}/contexts/${ctx.id}/restart`, {
    method: 'POST',
    headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' },
  })
  assert.equal(res.status, 200)
  assert.equal((await sbx.runCode('exists("only_here")', { context: ctx })).text, '[1] FALSE')
  await sbx.removeCodeContext(ctx)
})

test('a timeout interrupts a busy loop and a sleep; the session keeps its state', async () => {
  const ctx = await sbx.createCodeContext({ language: 'r' })
  await sbx.runCode('survivor <- 7', { context: ctx })
  await assert.rejects(sbx.runCode('repeat {}', { context: ctx, timeoutMs: 1000 }), TimeoutError)
  assert.equal((await sbx.runCode('survivor', { context: ctx })).text, '[1] 7')
  await assert.rejects(sbx.runCode('Sys.sleep(60)', { context: ctx, timeoutMs: 1000 }), TimeoutError)
  assert.equal((await sbx.runCode('survivor + 1', { context: ctx })).text, '[1] 8')
  await sbx.removeCodeContext(ctx)
})

test('a cell larger than a FIFO holds (1 MB) arrives whole', async () => {
  const e = await r(`s <- "${'ab'.repeat(500_000)}"\nnchar(s)`)
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, '[1] 1000000')
  const big = await r('paste(rep("z", 300000), collapse = "")')
  assert.equal(big.text.length, '[1] ""'.length + 300_000)
})

test('unicode and odd bytes survive the round trip', async () => {
  const e = await r('x <- "h\\u00e9llo \\u2713"; cat(x, "\\n"); x')
  assert.equal(e.logs.stdout.join(''), 'héllo ✓ \n')
  assert.equal(e.text, '[1] "héllo ✓"')
  const c = await r('"tab\\there"')
  assert.equal(c.text, '[1] "tab\\there"')
})
