// Code contexts per language (python, javascript, typescript, bash) through
// `@e2b/code-interpreter` 2.8.0: create/list/remove/restart, state, cwd, errors, interrupts.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { InvalidArgumentError, NotFoundError, TimeoutError } from 'e2b'
import { useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

test('default contexts: python and javascript in /home/user', async () => {
  const list = await sbx.listCodeContexts()
  const langs = list.map((c) => c.language).sort()
  assert.ok(langs.includes('python') && langs.includes('javascript'), JSON.stringify(list))
  for (const c of list) {
    assert.match(c.id, /^[0-9a-f-]{36}$/)
    assert.equal(c.cwd, '/home/user')
  }
})

test('listCodeContexts answers in creation order: the defaults first, a new context last', async () => {
  const a = await sbx.createCodeContext()
  const b = await sbx.createCodeContext({ language: 'javascript' })
  const list = await sbx.listCodeContexts()
  assert.deepEqual(list.slice(0, 2).map((c) => c.language), ['python', 'javascript'])
  assert.deepEqual(list.slice(-2).map((c) => c.id), [a.id, b.id])
  await sbx.removeCodeContext(a)
  await sbx.removeCodeContext(b)
})

test('a python context with its own cwd and its own namespace', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/tmp' })
  assert.equal(ctx.language, 'python')
  assert.equal(ctx.cwd, '/tmp')
  await sbx.runCode('only_here = 1', { context: ctx })
  assert.equal((await sbx.runCode('import os; os.getcwd()', { context: ctx })).text, '/tmp')
  assert.equal((await sbx.runCode('only_here', { context: ctx })).text, '1')
  const other = await sbx.runCode('only_here')
  assert.equal(other.error?.name, 'NameError')
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await sbx.removeCodeContext(ctx)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
})

test('kernels run as root: a context in /root works, as on E2B', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/root' })
  assert.equal(ctx.cwd, '/root')
  const e = await sbx.runCode('import os, getpass; os.getcwd(), getpass.getuser()', { context: ctx })
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, "('/root', 'root')")
  await sbx.removeCodeContext(ctx)
  for (const language of ['javascript', 'bash']) {
    const c = await sbx.createCodeContext({ language, cwd: '/root' })
    const code = language === 'bash' ? 'echo "$(pwd) $(id -u)"' : 'process.cwd() + " " + process.getuid()'
    const r = await sbx.runCode(code, { context: c })
    assert.equal(language === 'bash' ? r.logs.stdout.join('') : r.text, language === 'bash' ? '/root 0\n' : '/root 0')
    await sbx.removeCodeContext(c)
  }
})

test('what a kernel writes into /home/user the default user reads, changes and removes', async () => {
  const w = await sbx.runCode('import os\nos.makedirs("out/sub", exist_ok=True)\nopen("out/sub/k.txt", "w").write("from kernel")')
  assert.equal(w.error, undefined, w.error?.traceback)
  const st = await sbx.commands.run('stat -c "%U:%G %a" out/sub/k.txt out/sub', { cwd: '/home/user' })
  assert.equal(st.stdout, 'root:user 664\nroot:user 775\n')
  assert.equal(await sbx.files.read('/home/user/out/sub/k.txt'), 'from kernel')
  await sbx.files.write('/home/user/out/sub/k.txt', 'changed by user')
  await sbx.files.write('/home/user/out/sub/new.txt', 'made by user')
  assert.equal((await sbx.runCode('open("out/sub/k.txt").read()')).text, 'changed by user')
  await sbx.commands.run('echo more >> out/sub/k.txt && rm -r out', { cwd: '/home/user' })
  assert.equal(await sbx.files.exists('/home/user/out'), false)
  for (const language of ['javascript', 'bash']) {
    const code = language === 'bash' ? 'echo b > from-bash' : 'require("fs").writeFileSync("from-js", "j")'
    assert.equal((await sbx.runCode(code, { language })).error, undefined)
  }
  assert.equal((await sbx.commands.run('stat -c "%U:%G %a" from-js from-bash && rm from-js from-bash', { cwd: '/home/user' })).stdout,
    'root:user 664\nroot:user 664\n')
})

test('a removed or unknown context is NotFoundError', async () => {
  const ctx = await sbx.createCodeContext()
  await sbx.removeCodeContext(ctx.id)
  await assert.rejects(sbx.runCode('1', { context: ctx }), NotFoundError)
  await assert.rejects(sbx.removeCodeContext('no-such-context'), NotFoundError)
})

test('context and language together are refused by the SDK', async () => {
  const ctx = { id: 'x', language: 'python', cwd: '/' }
  await assert.rejects(sbx.runCode('1', { context: ctx, language: 'python' }), InvalidArgumentError)
})

test('a context with a missing cwd fails to be created', async () => {
  await assert.rejects(sbx.createCodeContext({ cwd: '/does/not/exist' }), /500/)
})

test('restartCodeContext (raw POST /contexts/{id}/restart) clears the state', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python' })
  await sbx.runCode('v = 5', { context: ctx })
  const res = await fetch(`${process.env.E2B_SANDBOX_URL}/contexts/${ctx.id}/restart`, {
    method: 'POST',
    headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' },
  })
  assert.equal(res.status, 200)
  assert.equal((await sbx.runCode('v', { context: ctx })).error?.name, 'NameError')
  await sbx.removeCodeContext(ctx)
})

test('javascript: top-level await, const, last expression, console output', async () => {
  const ctx = await sbx.createCodeContext({ language: 'javascript', cwd: '/tmp' })
  assert.equal(ctx.language, 'javascript')
  const e = await sbx.runCode('const a = await Promise.resolve(5); console.log("log", a); a * 2', { context: ctx })
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, '10')
  assert.equal(e.logs.stdout.join(''), 'log 5\n')
  assert.equal((await sbx.runCode('a + 1', { context: ctx })).text, '6')
  assert.equal((await sbx.runCode('process.cwd()', { context: ctx })).text, '/tmp')
  await sbx.removeCodeContext(ctx)
})

test('javascript: import and require, functions and classes persist, objects inspected', async () => {
  const opts = { language: 'javascript' }
  const e = await sbx.runCode("import { join } from 'node:path'\nimport os from 'os'\nfunction twice(x) { return 2 * x }\nclass K { v() { return 3 } }\njoin('a', 'b')", opts)
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, 'a/b')
  assert.equal((await sbx.runCode('twice(new K().v()) + (typeof os.platform)', opts)).text, '6function')
  assert.equal((await sbx.runCode("require('fs').existsSync('/tmp')", opts)).text, 'true')
  assert.equal((await sbx.runCode('({ a: 1, b: [1, 2] })', opts)).text, '{ a: 1, b: [ 1, 2 ] }')
  assert.equal((await sbx.runCode('const again = 1; const again2 = again; again2', opts)).text, '1')
  assert.equal((await sbx.runCode('const again = 2; again', opts)).text, '2')
  // a dynamic import inside a declaration, destructuring and uninitialised declarators
  const d = await sbx.runCode("const { sep } = await import('node:path'), path2 = await import('path')\nlet u, w\nsep + path2.sep + typeof u + typeof w", opts)
  assert.equal(d.error, undefined, d.error?.traceback)
  assert.equal(d.text, '//undefinedundefined')
  assert.equal((await sbx.runCode('const [first, ...rest] = [1, 2, 3]; first + rest.length', opts)).text, '3')
})

test('javascript: errors carry name, value and stack', async () => {
  const e = await sbx.runCode('throw new TypeError("bad thing")', { language: 'js' })
  assert.equal(e.error.name, 'TypeError')
  assert.equal(e.error.value, 'bad thing')
  assert.match(e.error.traceback, /TypeError: bad thing/)
  const s = await sbx.runCode('let = = 1', { language: 'javascript' })
  assert.equal(s.error.name, 'SyntaxError')
})

test('javascript: env vars per execution do not leak', async () => {
  const a = await sbx.runCode('process.env.JS_RUN', { language: 'javascript', envs: { JS_RUN: 'yes' } })
  assert.equal(a.text, 'yes')
  const b = await sbx.runCode('String(process.env.JS_RUN)', { language: 'javascript' })
  assert.equal(b.text, 'undefined')
})

test('javascript: timeout interrupts a busy loop; the context keeps its state', async () => {
  const ctx = await sbx.createCodeContext({ language: 'javascript' })
  await sbx.runCode('kept = 7', { context: ctx })
  await assert.rejects(sbx.runCode('while (true) {}', { context: ctx, timeoutMs: 1000 }), TimeoutError)
  assert.equal((await sbx.runCode('kept', { context: ctx })).text, '7')
  await sbx.removeCodeContext(ctx)
})

test('typescript: types are stripped, state persists, top-level await', async () => {
  const ctx = await sbx.createCodeContext({ language: 'typescript' })
  assert.equal(ctx.language, 'typescript')
  const e = await sbx.runCode(
    'interface P { x: number }\nconst p: P = { x: 4 }\nconst f = (n: number): number => n * 2\nawait Promise.resolve(f(p.x))',
    { context: ctx }
  )
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, '8')
  assert.equal((await sbx.runCode('f(10) as number', { context: ctx })).text, '20')
  const bad = await sbx.runCode('const x: = 1', { context: ctx })
  assert.equal(bad.error?.name, 'SyntaxError')
  assert.equal((await sbx.runCode('1 + 1', { language: 'ts' })).text, '2')
})

test('bash: one shell per context: cwd, variables and functions persist', async () => {
  const ctx = await sbx.createCodeContext({ language: 'bash' })
  assert.equal(ctx.language, 'bash')
  await sbx.runCode('cd /tmp; X=42; greet() { echo "hi $1"; }', { context: ctx })
  const e = await sbx.runCode('pwd; echo $X; greet there; echo $HOME', { context: ctx })
  assert.equal(e.error, undefined)
  assert.equal(e.logs.stdout.join(''), '/tmp\n42\nhi there\n/root\n')
  await sbx.removeCodeContext(ctx)
})

test('bash: stderr separate, a failing command line is an error with its status', async () => {
  const e = await sbx.runCode('echo oops >&2; false', { language: 'bash' })
  assert.equal(e.logs.stderr.join(''), 'oops\n')
  assert.equal(e.error?.value, '1')
})

test('bash: env vars per execution, restored afterwards', async () => {
  const a = await sbx.runCode('echo "$B_RUN"', { language: 'bash', envs: { B_RUN: 'set' } })
  assert.equal(a.logs.stdout.join(''), 'set\n')
  const b = await sbx.runCode('echo "${B_RUN-unset}"', { language: 'bash' })
  assert.equal(b.logs.stdout.join(''), 'unset\n')
})

test('bash: timeout interrupts sleep; variables survive', async () => {
  const ctx = await sbx.createCodeContext({ language: 'bash' })
  await sbx.runCode('KEEP=yes', { context: ctx })
  await assert.rejects(sbx.runCode('sleep 30', { context: ctx, timeoutMs: 800 }), TimeoutError)
  const e = await sbx.runCode('echo $KEEP', { context: ctx })
  assert.equal(e.logs.stdout.join(''), 'yes\n')
  await sbx.removeCodeContext(ctx)
})

test('an unsupported language is refused', async () => {
  await assert.rejects(sbx.runCode('1', { language: 'cobol' }), /500/)
})
