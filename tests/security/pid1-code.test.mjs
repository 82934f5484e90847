// Escape battery A11 (docs/escape-battery.md): sandbox root writes code for PID 1 (a library
// named in /etc/ld.so.preload, a library the old dynamic agent loaded replaced in the upper,
// LD_PRELOAD in a template's environment) and the sandbox is forked, snapshotted and created
// again, persisted and resumed: the agent of every new start is static and runs none of it,
// while the sandbox's own processes still do (they use the image's loader, as users expect).
// Through the unmodified npm `e2b` SDK against the real sbxd.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox, Template } from 'e2b'
import { STATE, api } from '../lib/env.mjs'

// Writes a marker when it runs in PID 1, then 4 MiB at PID 1's stderr (sbxd's agent.log), the
// way the red-team's code did; in any other process a marker of its own.
const PLANTED_C = `
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void)
{
        static char buf[65536];
        int fd;
        if (getpid() == 1) {
                fd = open("/pid1-ran-planted-code", O_WRONLY | O_CREAT, 0644);
                if (fd >= 0)
                        close(fd);
                memset(buf, 'X', sizeof(buf));
                for (int i = 0; i < 64; i++)
                        (void)!write(2, buf, sizeof(buf));
        } else {
                fd = open("/tmp/planted-ran-in-user-code", O_WRONLY | O_CREAT, 0666);
                if (fd >= 0)
                        close(fd);
        }
}
`
const LIB = '/usr/lib/x86_64-linux-gnu/libsbxplanted.so'
const work = mkdtempSync(join(tmpdir(), 'sbx-planted-'))
const made = []
const snaps = []
after(async () => {
  for (const s of made) await s.kill().catch(() => {})
  for (const id of snaps) await Sandbox.deleteSnapshot(id).catch(() => {})
  await api('DELETE', '/templates/sbx-planted-env').catch(() => {})
  rmSync(work, { recursive: true, force: true })
})

function plantedLib() {
  const src = join(work, 'planted.c')
  const so = join(work, 'libsbxplanted.so')
  if (!existsSync(so)) {
    execFileSync('sh', ['-c', `cat > ${src} <<'EOF'\n${PLANTED_C}\nEOF`])
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', so, src])
  }
  return so
}

const track = (s) => { made.push(s); return s }
const sh = async (s, cmd, user = 'user') => (await s.commands.run(cmd, { user, timeoutMs: 60000 })).stdout

// The new start's agent ran nothing of it: no PID 1 marker, nothing of the flood on the host;
// the sandbox's own processes do load it.
async function assertAgentClean(s, what) {
  assert.equal(await sh(s, 'test -e /pid1-ran-planted-code && echo RAN || echo clean'), 'clean\n',
    `${what}: the agent ran the planted code`)
  const log = join(STATE, 'sandboxes', s.sandboxId, 'agent.log')
  const size = existsSync(log) ? statSync(log).size : 0
  assert.ok(size < 64 * 1024, `${what}: agent.log is ${size} bytes`)
  assert.ok(!existsSync(log) || !readFileSync(log, 'utf8').includes('XXXXXXXX'), `${what}: the flood reached agent.log`)
  await sh(s, 'rm -f /tmp/planted-ran-in-user-code; true')
  assert.equal(await sh(s, 'cat /etc/ld.so.preload; test -e /tmp/planted-ran-in-user-code && echo loaded'),
    `${LIB}\nloaded\n`, `${what}: user processes keep the image's loader and its preload`)
}

test('A11: ld.so.preload and a replaced library in the upper never reach PID 1: fork, snapshot, persist-resume', { timeout: 300000 }, async () => {
  const src = track(await Sandbox.create())
  await src.files.write(LIB, readFileSync(plantedLib()), { user: 'root' })
  // the library the dynamically linked agent loaded from the image, replaced in the upper
  await sh(src, `chmod 755 ${LIB} && cp ${LIB} "$(readlink -f /usr/lib/x86_64-linux-gnu/libcjson.so.1)" && ` +
    `echo ${LIB} > /etc/ld.so.preload`, 'root')
  assert.equal(await sh(src, 'test -e /tmp/planted-ran-in-user-code && echo loaded'), 'loaded\n',
    'the preload is live for the sandbox\'s processes')

  const snap = await src.createSnapshot()
  snaps.push(snap.snapshotId)
  await assertAgentClean(track(await Sandbox.create(snap.snapshotId)), 'snapshot then create')

  const forks = await src.fork({ count: 1 })
  assert.ok(!(forks[0] instanceof Error), String(forks[0]))
  await assertAgentClean(track(forks[0]), 'fork')

  // files-only pause: the processes go, and the resume starts a new agent on the upper
  assert.equal(await src.pause({ keepMemory: false }), true)
  const back = await Sandbox.connect(src.sandboxId)
  await assertAgentClean(back, 'persist then resume')
})

test('A11/F13: LD_PRELOAD in a template\'s environment reaches its processes, never the agent', { timeout: 300000 }, async () => {
  const ctx = join(work, 'ctx')
  execFileSync('mkdir', ['-p', ctx])
  execFileSync('cp', [plantedLib(), join(ctx, 'libsbxplanted.so')])
  const t = Template({ fileContextPath: ctx }).fromTemplate('base')
    .copy('libsbxplanted.so', '/usr/lib/x86_64-linux-gnu/', { user: 'root' })
    .setEnvs({ LD_PRELOAD: LIB })
  await Template.build(t, 'sbx-planted-env')
  const s = track(await Sandbox.create('sbx-planted-env'))
  assert.equal(await sh(s, 'test -e /pid1-ran-planted-code && echo RAN || echo clean'), 'clean\n')
  assert.equal(await sh(s, 'echo "$LD_PRELOAD"; test -e /tmp/planted-ran-in-user-code && echo loaded'), `${LIB}\nloaded\n`)
  const log = join(STATE, 'sandboxes', s.sandboxId, 'agent.log')
  assert.ok(!existsSync(log) || !readFileSync(log, 'utf8').includes('XXXXXXXX'))
})
