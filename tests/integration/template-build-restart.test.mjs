// A template build in progress when sbxd dies: the restarted sbxd marks it failed with a
// message (server/template-build/README.md "State"), removes its build sandbox, and keeps the template's
// records and earlier builds.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { startSbxd, realTemplates, REAL, sleep } from './sbxd.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false

let d
after(async () => { await d?.stop() })

async function startBuild(name, steps) {
  const req = await d.api('POST', '/v3/templates', { body: { name } })
  assert.equal(req.status, 202, req.text)
  const { templateID, buildID } = req.json
  const st = await d.api('POST', `/v2/templates/${templateID}/builds/${buildID}`, { body: { fromTemplate: 'base', steps, force: false } })
  assert.equal(st.status, 202, st.text)
  return { templateID, buildID }
}

async function waitStatus(t, want, ms = 60000) {
  let last
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) {
    last = await d.api('GET', `/templates/${t.templateID}/builds/${t.buildID}/status`)
    if (want.includes(last.json?.status)) return last.json
  }
  throw new Error(`build never reached ${want}: ${last?.text}`)
}

test('a build running when sbxd is killed is marked failed after the restart', { skip }, async () => {
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates })
  const done = await startBuild('rs-done', [{ type: 'RUN', args: ['echo one > /tmp/one'] }])
  assert.equal((await waitStatus(done, ['ready', 'error'])).status, 'ready')
  const req = await d.api('POST', '/v3/templates', { body: { name: 'rs-start' } })
  const st = await d.api('POST', `/v2/templates/${req.json.templateID}/builds/${req.json.buildID}`, {
    body: { fromTemplate: 'base', steps: [], startCmd: 'date +%s%N > /tmp/started; sleep 600', readyCmd: '[ -f /tmp/started ]' },
  })
  assert.equal(st.status, 202, st.text)
  assert.equal((await waitStatus(req.json, ['ready', 'error'])).status, 'ready')

  const t = await startBuild('rs-slow', [{ type: 'RUN', args: ['echo started; sleep 120'] }])
  for (let i = 0; ; i++) {
    const s = await waitStatus(t, ['building'])
    if (s.logEntries.some((e) => e.message === 'started')) break
    assert.ok(i < 300, 'the step never started')
    await sleep(100)
  }
  const buildBoxes = readdirSync(join(d.state, 'sandboxes'))
  assert.equal(buildBoxes.length, 1, 'one build sandbox runs the step')
  const old = { dir: d.dir, state: d.state }
  d.proc.kill('SIGKILL')
  await new Promise((r) => d.proc.exitCode !== null || d.proc.signalCode ? r() : d.proc.once('exit', r))

  // restarted with a warm pool of a built template whose start command runs in every sandbox
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: old, args: ['--pool-size', '1', '--pool-templates', 'rs-start'] })
  const s = await waitStatus(t, ['ready', 'error'], 5000)
  assert.equal(s.status, 'error')
  assert.match(s.reason.message, /sbxd was restarted while this build was running/)
  // the build sandbox (its record marked like a warm-pool member's) was removed at adoption
  assert.ok(!existsSync(join(d.state, 'sandboxes', buildBoxes[0])))
  assert.ok(!existsSync(join(d.state, 'build/run')) || readdirSync(join(d.state, 'build/run')).length === 0)

  // the pool member ran the start command, and was ready, before a create took it
  for (let i = 0; i < 300 && !/sbx_sandboxes\{state="pool"\} 1/.test((await d.api('GET', '/metrics')).text); i++) await sleep(100)
  const sb = await Sandbox.create('rs-start', { apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key })
  assert.match(d.stderr(), new RegExp(`sandbox ${sb.sandboxId}: started \\(template rs-start[^"]*from the warm pool`))
  assert.match((await sb.commands.run('cat /tmp/started')).stdout, /^\d+\n$/)
  await sb.kill()
  // the finished build still starts sandboxes; the failed one can be built again
  const c = await d.api('POST', '/v2/sandboxes', { body: { templateID: 'rs-done' } })
  assert.equal(c.status, 201, c.text)
  await d.api('DELETE', `/sandboxes/${c.json.sandboxID}`)
  const again = await startBuild('rs-slow', [{ type: 'RUN', args: ['echo quick'] }])
  assert.equal((await waitStatus(again, ['ready', 'error'])).status, 'ready')
})
