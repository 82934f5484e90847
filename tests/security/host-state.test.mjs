// What sandboxes leave on the host must not give anything on the host (docs/escape-battery.md,
// group G): set-id files in the layer store and the storage pool, through the unmodified npm `e2b` SDK.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { api, STATE } from '../lib/env.mjs'

const boxes = []
const snaps = []
after(async () => {
  for (const s of boxes) await s.kill().catch(() => {})
  for (const id of snaps) await api('DELETE', `/templates/${id}`)
})

test('G4: a setuid-root file snapshotted into the layer store runs without privilege on the host', async () => {
  const src = await Sandbox.create()
  boxes.push(src)
  const r = await src.commands.run('cp /usr/bin/id /tmp/suid-id && chmod 4755 /tmp/suid-id && stat -c %a /tmp/suid-id', { user: 'root' })
  assert.equal(r.stdout, '4755\n')
  const snap = await src.createSnapshot()
  snaps.push(snap.snapshotId)
  const tpl = JSON.parse(readFileSync(`${STATE}/templates/${snap.snapshotId}/template.json`, 'utf8'))
  // on the storage pool the snapshot is a read-only subvolume of the pool (nosuid); with the
  // image fallback, a layer of the store
  const file = tpl.upper
    ? `${STATE}/pool/snapshots/${tpl.upper}/upper/tmp/suid-id`
    : `${STATE}/layers/${tpl.layers.at(-1).replace('sha256:', '')}/tmp/suid-id`
  assert.ok(existsSync(file), `${file} is kept on the host`)
  const st = statSync(file)
  assert.equal(st.uid, 0, 'owned by host root on the host')
  // An unprivileged host process that gets hold of the file (here: an O_PATH fd opened by root
  // before dropping to nobody, which bypasses the state dir's 0700) executes it: the set-uid bit
  // must not make it root.
  const out = execFileSync('python3', ['-c', `
import os, sys
fd = os.open(sys.argv[1], os.O_PATH)
os.setgroups([]); os.setgid(65534); os.setuid(65534)
os.execv('/proc/self/fd/%d' % fd, ['id', '-u'])
`, file]).toString()
  assert.equal(out, '65534\n', 'the set-uid bit took effect on the host')
  // inside a sandbox of the snapshot the file keeps its mode (no_new_privs keeps it inert there)
  const c = await Sandbox.create(snap.snapshotId)
  boxes.push(c)
  const m = await c.commands.run('stat -c "%a %U" /tmp/suid-id; /tmp/suid-id -u')
  assert.equal(m.stdout, '4755 root\n1000\n')
})
