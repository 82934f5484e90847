// envd process.Process through the unmodified npm `e2b` SDK (pinned 2.51.0): commands and pty.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  Sandbox, CommandExitError, NotFoundError, TimeoutError, AuthenticationError,
  InvalidArgumentError, SandboxError,
} from 'e2b'
import { sleep, sandboxFetch, envelope, parseEnvelopes, useSandbox } from '../lib/env.mjs'

let sbx
useSandbox(() => Sandbox.create(), (s) => (sbx = s))

test('commands.run: args, envs, cwd, stdout/stderr callbacks', async () => {
  const out = []
  const err = []
  const r = await sbx.commands.run('echo $A; pwd; echo oops >&2', {
    envs: { A: 'aa' }, cwd: '/tmp', onStdout: (d) => out.push(d), onStderr: (d) => err.push(d),
  })
  assert.equal(r.stdout, 'aa\n/tmp\n')
  assert.equal(out.join(''), 'aa\n/tmp\n')
  assert.equal(err.join(''), 'oops\n')
})

test('commands.run as user by default, root on request', async () => {
  assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n')
  assert.equal((await sbx.commands.run('whoami', { user: 'root' })).stdout, 'root\n')
  assert.equal((await sbx.commands.run('echo $HOME')).stdout, '/home/user\n')
})

test('commands.run with an unknown user → AuthenticationError', async () => {
  await assert.rejects(sbx.commands.run('true', { user: 'nobody-here' }), (e) => e instanceof AuthenticationError)
})

test('commands.run with a missing cwd fails clearly', async () => {
  await assert.rejects(sbx.commands.run('true', { cwd: '/no/such/dir' }), (e) => e instanceof SandboxError)
})

test('commands.run timeoutMs kills the process → TimeoutError', async () => {
  const t0 = Date.now()
  await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1000 }), (e) => e instanceof TimeoutError)
  assert.ok(Date.now() - t0 < 10_000)
})

test('background command: handle.pid, wait(), list shows it with config and tag-less entry', async () => {
  const h = await sbx.commands.run('sleep 2; echo bg-done', { background: true })
  assert.ok(h.pid > 0)
  const list = await sbx.commands.list()
  const me = list.find((p) => p.pid === h.pid)
  assert.ok(me, JSON.stringify(list))
  assert.equal(me.cmd, '/bin/bash')
  assert.deepEqual(me.args, ['-l', '-c', 'sleep 2; echo bg-done'])
  const r = await h.wait()
  assert.equal(r.stdout, 'bg-done\n')
  assert.equal((await sbx.commands.list()).find((p) => p.pid === h.pid), undefined)
})

test('list reports envs and cwd of the config', async () => {
  const h = await sbx.commands.run('sleep 5', { background: true, envs: { K: 'v' }, cwd: '/tmp' })
  const me = (await sbx.commands.list()).find((p) => p.pid === h.pid)
  assert.deepEqual(me.envs, { K: 'v' })
  assert.equal(me.cwd, '/tmp')
  assert.equal(await h.kill(), true)
})

test('commands.kill: true for a running process (whole group), false for an unknown pid', async () => {
  const h = await sbx.commands.run('sleep 100 & sleep 100; wait', { background: true })
  await sleep(300)
  assert.equal(await sbx.commands.kill(h.pid), true)
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError && e.exitCode === -1)
  const ps = await sbx.commands.run('pgrep -c -x sleep || true')
  assert.equal(ps.stdout.trim(), '0')
  assert.equal(await sbx.commands.kill(999999), false)
})

test('handle.kill() via SIGKILL ends the wait with signal: killed', async () => {
  const h = await sbx.commands.run('sleep 100', { background: true })
  assert.equal(await h.kill(), true)
  await assert.rejects(h.wait(), (e) => {
    assert.ok(e instanceof CommandExitError)
    assert.match(e.error ?? '', /signal: killed/)
    return true
  })
})

test('stdin: sendStdin writes to the process, closeStdin ends it', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(h.pid, 'hello stdin\n')
  await sbx.commands.closeStdin(h.pid)
  const r = await h.wait()
  assert.equal(r.stdout, 'hello stdin\n')
})

test('sendStdin / closeStdin to an unknown pid → NotFoundError', async () => {
  await assert.rejects(sbx.commands.sendStdin(999999, 'x'), (e) => e instanceof NotFoundError)
  await assert.rejects(sbx.commands.closeStdin(999999), (e) => e instanceof NotFoundError)
})

test('a process that never reads stdin finishes normally', async () => {
  const h = await sbx.commands.run('sleep 0.2; echo ok', { background: true, stdin: true })
  const r = await h.wait()
  assert.equal(r.stdout, 'ok\n')
})

test('connect re-attaches to a running process: start, retained output, end', async () => {
  const h = await sbx.commands.run('echo early; sleep 1.5; echo late', { background: true })
  await sleep(500)
  await h.disconnect()
  const h2 = await sbx.commands.connect(h.pid)
  assert.equal(h2.pid, h.pid)
  const r = await h2.wait()
  assert.equal(r.stdout, 'early\nlate\n')
  assert.equal(r.exitCode, 0)
})

test('connect to a finished process replays output and exit status', async () => {
  const h = await sbx.commands.run('echo gone; exit 4', { background: true })
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError && e.exitCode === 4)
  const h2 = await sbx.commands.connect(h.pid)
  await assert.rejects(h2.wait(), (e) => e instanceof CommandExitError && e.exitCode === 4 && e.stdout === 'gone\n')
})

test('connect to an unknown pid → NotFoundError', async () => {
  await assert.rejects(sbx.commands.connect(999999), (e) => e instanceof NotFoundError)
})

test('tags: Start with a tag, List shows it, Connect by tag over the wire', async () => {
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Start', {
    method: 'POST',
    headers: { 'Content-Type': 'application/connect+json', 'X-Access-Token': sbx.envdAccessToken ?? '', 'Connect-Timeout-Ms': '10000' },
    body: envelope({ process: { cmd: '/bin/sh', args: ['-c', 'echo tagged; sleep 1'] }, tag: 'my-tag', stdin: false }),
  })
  assert.equal(res.status, 200)
  const reader = res.body.getReader()
  await reader.read()
  const list = await sbx.commands.list()
  const me = list.find((p) => p.tag === 'my-tag')
  assert.ok(me, JSON.stringify(list))
  const c = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Connect', {
    method: 'POST',
    headers: { 'Content-Type': 'application/connect+json', 'X-Access-Token': sbx.envdAccessToken ?? '' },
    body: envelope({ process: { tag: 'my-tag' } }),
  })
  const frames = parseEnvelopes(Buffer.from(await c.arrayBuffer()))
  assert.deepEqual(frames[0].msg, { event: { start: { pid: me.pid } } })
  const out = frames.filter((f) => f.msg.event?.data).map((f) => Buffer.from(f.msg.event.data.stdout, 'base64').toString()).join('')
  assert.equal(out, 'tagged\n')
  assert.equal(frames.at(-1).flags, 2)
  await reader.cancel()
})

test('Connect to a missing pid is HTTP 200 with an end-stream not_found', async () => {
  const c = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Connect', {
    method: 'POST',
    headers: { 'Content-Type': 'application/connect+json', 'X-Access-Token': sbx.envdAccessToken ?? '' },
    body: envelope({ process: { pid: 999999 } }),
  })
  assert.equal(c.status, 200)
  const frames = parseEnvelopes(Buffer.from(await c.arrayBuffer()))
  assert.equal(frames.at(-1).flags, 2)
  assert.equal(frames.at(-1).msg.error.code, 'not_found')
})

test('keepalive events arrive at Keepalive-Ping-Interval', async () => {
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Start', {
    method: 'POST',
    headers: { 'Content-Type': 'application/connect+json', 'X-Access-Token': sbx.envdAccessToken ?? '', 'Keepalive-Ping-Interval': '1' },
    body: envelope({ process: { cmd: '/bin/sh', args: ['-c', 'sleep 2.5'] }, stdin: false }),
  })
  const frames = parseEnvelopes(Buffer.from(await res.arrayBuffer()))
  const ka = frames.filter((f) => f.msg.event?.keepalive)
  assert.ok(ka.length >= 2, JSON.stringify(frames))
})

test('output flood: 200 MB through one command with flat agent memory', async () => {
  const before = await agentRss()
  let n = 0
  const r = await sbx.commands.run('yes | head -c 200000000', { onStdout: (d) => { n += d.length }, timeoutMs: 120_000 })
  assert.equal(r.exitCode, 0)
  assert.equal(n, 200_000_000)
  const afterRss = await agentRss()
  assert.ok(afterRss - before < 64 * 1024, `agent RSS grew from ${before} to ${afterRss} kB`)
})

async function agentRss() {
  const r = await sbx.commands.run("awk '/VmRSS/ {print $2}' /proc/1/status", { user: 'root' })
  return Number(r.stdout.trim())
}

test('1 GiB of output streams through with backpressure; the agent peak memory stays flat', async () => {
  const hwm = async () => Number((await sbx.commands.run("awk '/VmHWM/ {print $2}' /proc/1/status", { user: 'root' })).stdout.trim())
  const before = await hwm()
  const res = await sandboxFetch(sbx.sandboxId, 49983, '/process.Process/Start', {
    method: 'POST',
    headers: { 'Content-Type': 'application/connect+json', 'X-Access-Token': sbx.envdAccessToken ?? '' },
    body: envelope({ process: { cmd: '/bin/sh', args: ['-c', 'yes | head -c 1073741824'] }, stdin: false }),
  })
  let buf = Buffer.alloc(0)
  let bytes = 0
  let end
  for await (const chunk of res.body) {
    buf = buf.length ? Buffer.concat([buf, chunk]) : Buffer.from(chunk)
    let off = 0
    while (off + 5 <= buf.length) {
      const len = buf.readUInt32BE(off + 1)
      if (off + 5 + len > buf.length) break
      const msg = JSON.parse(buf.subarray(off + 5, off + 5 + len))
      if (msg.event?.data?.stdout) bytes += Buffer.byteLength(msg.event.data.stdout, 'base64')
      if (msg.event?.end) end = msg.event.end
      off += 5 + len
    }
    buf = buf.subarray(off)
  }
  assert.equal(bytes, 1073741824)
  assert.equal(end.exitCode ?? 0, 0)
  const after = await hwm()
  assert.ok(after - before < 32 * 1024, `agent peak RSS grew from ${before} to ${after} kB`)
})

test('10,000 short commands in a row leave nothing behind', async () => {
  for (let i = 0; i < 10_000; i++) await sbx.commands.run('true')
  const r = await sbx.commands.run('ls /proc | grep -c "^[0-9]"; ls /proc/1/fd | wc -l', { user: 'root' })
  const [procs, fds] = r.stdout.trim().split('\n').map(Number)
  assert.ok(procs <= 4, `processes left: ${procs}`)
  assert.ok(fds < 20, `agent fds: ${fds}`)
  assert.deepEqual(await sbx.commands.list(), [])
})

test('zombies of orphaned grandchildren are reaped', async () => {
  await sbx.commands.run('(sleep 0.1 &) ; (sleep 0.1 &); true')
  await sleep(500)
  const r = await sbx.commands.run("grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l")
  assert.equal(r.stdout.trim(), '0')
})

test('pty.create: interactive bash, sendInput, output via onData, kill', async () => {
  let out = ''
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d) } })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo pty-$((6*7))\n'))
  for (let i = 0; i < 50 && !out.includes('pty-42'); i++) await sleep(100)
  assert.ok(out.includes('pty-42'), out)
  assert.equal(await sbx.pty.kill(h.pid), true)
})

test('pty.resize is visible to stty size', async () => {
  let out = ''
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d) } })
  await sbx.pty.resize(h.pid, { cols: 123, rows: 45 })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('stty size\n'))
  for (let i = 0; i < 50 && !out.includes('45 123'); i++) await sleep(100)
  assert.ok(out.includes('45 123'), out)
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('exit 0\n'))
  const r = await h.wait()
  assert.equal(r.exitCode, 0)
})

test('pty: TERM and the user; unknown pid errors', async () => {
  let out = ''
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d) }, user: 'root' })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo "$TERM:$(whoami)"; exit\n'))
  await h.wait().catch(() => {})
  assert.ok(out.includes('xterm-256color:root'), out)
  await assert.rejects(sbx.pty.sendInput(999999, new Uint8Array([1])), (e) => e instanceof NotFoundError)
  await assert.rejects(sbx.pty.resize(999999, { cols: 10, rows: 10 }), (e) => e instanceof NotFoundError)
  assert.equal(await sbx.pty.kill(999999), false)
})

test('pty.connect re-attaches to a running terminal', async () => {
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
  await h.disconnect()
  let out = ''
  const h2 = await sbx.pty.connect(h.pid, { onData: (d) => { out += new TextDecoder().decode(d) } })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo again-$((1+1))\n'))
  for (let i = 0; i < 50 && !out.includes('again-2'); i++) await sleep(100)
  assert.ok(out.includes('again-2'), out)
  await h2.kill()
})
