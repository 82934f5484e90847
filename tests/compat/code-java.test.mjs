// The Java kernel (JShell, the JDK's REPL engine) through `@e2b/code-interpreter` 2.8.0
// (`language: 'java'`): state, env vars (as system properties, as E2B's Java kernel sets them,
// and in System.getenv) and cwd per context, streamed output, the last expression as the main
// result, compile and runtime errors, and an interrupt on timeout that keeps the shell's state.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { TimeoutError } from 'e2b'
import { useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create({ envs: { GLOBAL_J: 'from-create' } }), (s) => (sbx = s))
const java = (code, opts = {}) => sbx.runCode(code, { language: 'java', ...opts })

test('1+1; declarations persist; only an expression last gives a main result', async () => {
  const e = await java('1+1')
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, '2')
  assert.equal(e.results.length, 1)
  assert.equal(e.results[0].isMainResult, true)
  const d = await java('int kept = 41;\nString twice(String s) { return s + s; }')
  assert.equal(d.error, undefined, d.error?.traceback)
  assert.equal(d.results.length, 0)
  assert.equal((await java('kept + 1')).text, '42')
  assert.equal((await java('twice("ab")')).text, 'abab')
  assert.equal((await java('List.of(1, 2)')).text, '[1, 2]')
  assert.equal((await java('new int[] {1, 2, 3}')).text, '[1, 2, 3]')
  assert.equal((await java('kept = 5;\nkept * 2')).text, '10')
  assert.equal((await java('System.out.println("x");')).results.length, 0)
})

test('classes, records and imports of the default jshell startup', async () => {
  const e = await java(
    'record P(int x, int y) {}\nclass Counter { int n; int inc() { return ++n; } }\n' +
      'Counter c = new Counter();\nc.inc(); c.inc();\n' +
      'new P(1, 2) + " " + c.n + " " + Stream.of("a", "b").collect(Collectors.joining(","))'
  )
  assert.equal(e.error, undefined, e.error?.traceback)
  assert.equal(e.text, 'P[x=1, y=2] 2 a,b')
})

test('the default java context appears on first use and runs as root in /home/user', async () => {
  const e = await java('System.getProperty("user.dir") + " " + System.getProperty("user.name") + " " + new java.io.File(".").getCanonicalPath()')
  assert.equal(e.text, '/home/user root /home/user')
  const list = await sbx.listCodeContexts()
  assert.equal(list.filter((c) => c.language === 'java').length, 1)
})

test('stdout and stderr are separate and streamed while the cell runs', async () => {
  const go = '/tmp/go-java'
  const seen = []
  const e = await java(
    `System.out.println("ready");
    System.err.println("to stderr");
    while (!new File("${go}").exists()) Thread.sleep(50);
    System.out.println("done");`,
    {
      timeoutMs: 30_000,
      // The cell waits for a file that is only written once "ready" has arrived here.
      onStdout: (m) => {
        seen.push(m.line)
        if (m.line === 'ready') sbx.files.write(go, 'x').catch(() => {})
      },
    }
  )
  assert.equal(e.error, undefined, e.error?.traceback)
  // one message per write, as IJava sends them: println's text, then its line end
  assert.deepEqual(seen, ['ready', '\n', 'done', '\n'])
  assert.deepEqual(e.logs.stderr, ['to stderr', '\n'])
})

test('System.out.println gives the line without its newline first, as E2B\'s Java kernel', async () => {
  const e = await java('System.out.println("Hello, World!")')
  assert.equal(e.logs.stdout[0], 'Hello, World!') // E2B's own test of its Java kernel
  assert.deepEqual(e.logs.stdout, ['Hello, World!', '\n'])
  const p = await java('System.out.print("a"); System.out.print("b");')
  assert.deepEqual(p.logs.stdout, ['a', 'b'])
  // a subprocess writes to the kernel's fd 1, read by lines as before
  const sub = await java('new ProcessBuilder("echo", "from a child").inheritIO().start().waitFor();')
  assert.deepEqual(sub.logs.stdout, ['from a child\n'])
})

test('errors: runtime exceptions by class, compile errors with the compiler message', async () => {
  const z = await java('int d = 0;\n10 / d')
  assert.equal(z.error.name, 'java.lang.ArithmeticException')
  assert.equal(z.error.value, '/ by zero')
  assert.match(z.error.traceback, /^java.lang.ArithmeticException: \/ by zero\n/)
  const t = await java('void boom() { throw new IllegalStateException("inner"); }\nboom()')
  assert.equal(t.error.name, 'java.lang.IllegalStateException')
  assert.match(t.error.traceback, /at boom\(#\d+:1\)/)
  const c = await java('int y = undefinedThing + 1;')
  assert.equal(c.error.name, 'CompilationException')
  assert.match(c.error.value, /cannot find symbol/)
  assert.match(c.error.traceback, /int y = undefinedThing \+ 1;\n\s+\^/)
  const inc = await java('int q = (')
  assert.equal(inc.error.name, 'CompilationException')
  assert.equal((await java('kept')).text, '5')
})

test('env vars: system properties (as E2B) and System.getenv, per execution, restored after', async () => {
  assert.equal((await java('System.getProperty("GLOBAL_J") + " " + System.getenv("GLOBAL_J")')).text,
    'from-create from-create')
  const a = await java('System.getProperty("FOO") + " " + System.getenv("FOO") + " " + System.getenv("GLOBAL_J")', {
    envs: { FOO: 'bar', GLOBAL_J: 'overridden' },
  })
  assert.equal(a.text, 'bar bar overridden')
  const b = await java('System.getProperty("FOO", "default") + " " + System.getenv("FOO") + " " + System.getenv("GLOBAL_J")')
  assert.equal(b.text, 'default null from-create')
  // A subprocess inherits the JVM's own environment (the sandbox envs); a per-execution value
  // reaches it through ProcessBuilder.environment(), which copies System.getenv's map.
  const sh = 'String sh(String cmd) throws Exception { ProcessBuilder pb = new ProcessBuilder("sh", "-c", cmd); ' +
    'pb.environment(); return new String(pb.start().getInputStream().readAllBytes()).trim(); }'
  assert.equal((await java(sh)).error, undefined)
  const p = await java('sh("echo $GLOBAL_J $SUB_J")', { envs: { SUB_J: 'inherited' } })
  assert.equal(p.text, 'from-create inherited')
})

test('createCodeContext java: its own cwd and shell; restart clears it', async () => {
  const ctx = await sbx.createCodeContext({ language: 'java', cwd: '/tmp' })
  assert.equal(ctx.language, 'java')
  await sbx.runCode('int onlyHere = 1;\nFiles.writeString(Path.of("written-java.txt"), "w");', { context: ctx })
  assert.equal(await sbx.files.read('/tmp/written-java.txt'), 'w')
  assert.equal((await sbx.runCode('System.getProperty("user.dir")', { context: ctx })).text, '/tmp')
  assert.equal((await java('onlyHere')).error?.name, 'CompilationException')
  const res = await fetch(`${process.env.E2B_SANDBOX_URL}/contexts/${ctx.id}/restart`, {
    method: 'POST',
    headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' },
  })
  assert.equal(res.status, 200)
  assert.equal((await sbx.runCode('onlyHere', { context: ctx })).error?.name, 'CompilationException')
  await sbx.removeCodeContext(ctx)
})

test('a timeout interrupts a busy loop and a sleep; the shell keeps its state', async () => {
  const ctx = await sbx.createCodeContext({ language: 'java' })
  await sbx.runCode('int survivor = 7;', { context: ctx })
  await assert.rejects(sbx.runCode('while (true) {}', { context: ctx, timeoutMs: 2000 }), TimeoutError)
  assert.equal((await sbx.runCode('survivor', { context: ctx })).text, '7')
  await assert.rejects(sbx.runCode('Thread.sleep(60_000);', { context: ctx, timeoutMs: 2000 }), TimeoutError)
  assert.equal((await sbx.runCode('survivor + 1', { context: ctx })).text, '8')
  await sbx.removeCodeContext(ctx)
})

test('unicode survives the round trip', async () => {
  const e = await java('String s = "h\\u00e9llo \\u2713 \\ud83d\\ude00";\nSystem.out.println(s);\ns')
  assert.equal(e.logs.stdout.join(''), 'héllo ✓ 😀\n')
  assert.equal(e.text, 'héllo ✓ 😀')
})
