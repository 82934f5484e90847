// The npm `e2b` SDK against the packaged sbxd (E2B_API_URL, E2B_API_KEY in the environment),
// for tests/package/run.sh:
//   node sdk.mjs create      a sandbox that stays: a file written, a process left running;
//                            prints its id
//   node sdk.mjs check ID    it is alive and the same: the file and the process are still there
//                            (a restart or an upgrade of sbxd kept it), and it runs commands
// Exit 0, or 1 with the reason on stderr.
import { Sandbox } from 'e2b'

const [cmd, id] = process.argv.slice(2)
const fail = (why) => {
  console.error(`sdk.mjs ${cmd}: ${why}`)
  process.exit(1)
}

if (cmd === 'create') {
  const s = await Sandbox.create({ timeoutMs: 900_000, metadata: { suite: 'package' } })
  const r = await s.commands.run('echo kept > /tmp/mark && . /etc/os-release && echo $ID')
  if (r.exitCode !== 0 || r.stdout.trim() !== 'debian') fail(`first command: ${JSON.stringify(r)}`)
  // what sbxd's unit must leave to sandboxes: root, and a W+X mapping (every JIT makes one)
  const root = await s.commands.run('id -u && chown 1000 /tmp/mark', { user: 'root' })
  if (root.exitCode !== 0 || root.stdout.trim() !== '0') fail(`as root: ${JSON.stringify(root)}`)
  const wx = await s.commands.run(`python3 -c 'import mmap; mmap.mmap(-1, 4096, prot=7); print("wx")'`)
  if (wx.exitCode !== 0 || wx.stdout.trim() !== 'wx') fail(`a W+X mapping: ${JSON.stringify(wx)}`)
  // a process that must live through sbxd's restarts: started, and its pid kept in a file
  const h = await s.commands.run('sleep 100000', { background: true })
  await s.commands.run(`echo ${h.pid} > /tmp/sleeper`)
  await h.disconnect()
  console.log(s.sandboxId)
} else if (cmd === 'check') {
  const s = await Sandbox.connect(id)
  const r = await s.commands.run('cat /tmp/mark && kill -0 "$(cat /tmp/sleeper)" && echo sleeping')
  if (r.exitCode !== 0 || r.stdout !== 'kept\nsleeping\n') fail(`not the same sandbox: ${JSON.stringify(r)}`)
  const w = await s.commands.run('echo $((6 * 7))')
  if (w.stdout.trim() !== '42') fail(`a new command: ${JSON.stringify(w)}`)
  console.log('ok')
} else {
  fail('usage: sdk.mjs create | check ID')
}
