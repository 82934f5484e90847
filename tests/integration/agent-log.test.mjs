// The agent's stderr on the host is bounded (server/lifecycle/agent-log.h; escape battery A12):
// a PID 1 that floods it (tests/security/flood-agent.c, bound as the agent of a private sbxd,
// which then execs the real one) leaves at most 2 MiB on the host, costs sbxd next to no CPU,
// and the sandbox and its neighbours keep serving; a restarted sbxd drains the same FIFO.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, REAL, sleep, TOP } from './sbxd.mjs'

const BUILD = process.env.SBX_TEST_BUILD || join(TOP, 'build')
const FLOOD = join(BUILD, 'tests/security/sbx-flood-agent')
const RUNTIME = join(dirname(REAL.agent || ''), 'runtime')
const skip = !REAL.agent || !existsSync(FLOOD) || !existsSync(RUNTIME) ? 'agent, runtime or flood agent not built' : false

// AGENT_LOG_MAX_BYTES twice, plus the throttle notes sbxd adds
const MAX_ON_HOST = 2 * 1024 * 1024 + 4096

let d
const rt = mkdtempSync(join(tmpdir(), 'sbx-flood-rt-'))
after(async () => {
  await d?.stop()
  rmSync(rt, { recursive: true, force: true })
})

const conn = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key })
const logBytes = (id) => ['agent.log', 'agent.log.1']
  .map((f) => join(d.state, 'sandboxes', id, f))
  .reduce((n, p) => n + (existsSync(p) ? statSync(p).size : 0), 0)
// user + system CPU seconds of a process
const cpu = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}

test('a PID 1 flooding its stderr: 2 MiB on the host at most, sbxd barely busy, everything serves', { skip, timeout: 300000 }, async () => {
  cpSync(RUNTIME, rt, { recursive: true })
  copyFileSync(REAL.agent, join(rt, 'sbx-agent'))
  d = await startSbxd({ jailer: REAL.jailer, agent: FLOOD, prepare: realTemplates, args: ['--runtime', rt] })
  const s = await Sandbox.create('base', conn())
  const cpu0 = cpu(d.proc.pid)
  const t0 = Date.now()
  // a minute of flooding at whatever rate the sandbox manages: at 16 KiB/s after the first
  // 256 KiB, agent.log passes 1 MiB and rotates after about 50 s
  for (let i = 0; i < 13; i++) {
    assert.equal((await s.commands.run('echo alive')).stdout, 'alive\n', `after ${5 * i} s`)
    assert.ok(logBytes(s.sandboxId) <= MAX_ON_HOST, `${logBytes(s.sandboxId)} bytes on the host after ${5 * i} s`)
    await sleep(5000)
  }
  const secs = (Date.now() - t0) / 1000
  const used = cpu(d.proc.pid) - cpu0
  assert.ok(used < 0.25 * secs, `sbxd used ${used} s of CPU in ${secs} s`)
  const dir = join(d.state, 'sandboxes', s.sandboxId)
  assert.ok(existsSync(join(dir, 'agent.log.1')), 'rotated')
  // the throttle is said once in each file the flood fills, not at every pause
  for (const f of ['agent.log', 'agent.log.1']) {
    const notes = readFileSync(join(dir, f), 'utf8').match(/sbxd: the agent writes more than 16384 bytes\/s to its log/g) || []
    assert.equal(notes.length, 1, `${f}: ${notes.length} notes`)
  }
  // a neighbour is unaffected
  const n = await Sandbox.create('base', conn())
  assert.equal((await n.commands.run('echo neighbour')).stdout, 'neighbour\n')
  await n.kill()
  await s.kill()
  assert.ok(!existsSync(dir), 'the log goes with the sandbox dir')
})

test('a restarted sbxd drains the FIFO of the sandboxes it adopts', { skip, timeout: 300000 }, async () => {
  await d?.stop()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, args: ['--runtime', rt] })
  const s = await Sandbox.create('base', conn())
  const old = d
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old, args: ['--runtime', rt] })
  const s2 = await Sandbox.connect(s.sandboxId, conn())
  // sandbox root signalling PID 1 makes the agent log a refusal (tests/security/pid1.test.mjs)
  await s2.commands.run('kill -TERM 1', { user: 'root' })
  const logPath = join(d.state, 'sandboxes', s.sandboxId, 'agent.log')
  let log = ''
  for (let i = 0; i < 50 && !/signal 15 from pid \d+ inside the sandbox/.test(log); i++) {
    await sleep(100)
    log = readFileSync(logPath, 'utf8')
  }
  assert.match(log, /signal 15 from pid \d+ inside the sandbox/)
  await s2.kill()
})
