// sudo's cost in a `base` sandbox (guest-agent/sudo/): N runs of `sudo true` one after another
// inside one commands.run, beside N runs of `/bin/true` (the floor: a fork and an exec) and
// `sudo -u user true`; and a sudo round trip through the SDK (commands.run('sudo true')) beside
// commands.run('true'). Starts its own sbxd (SBX_BUILD, default build/). Needs the Debian base
// (no sbx sudo in base-host). Prints figures; asserts nothing.
// Usage: node bench/sudo-bench.mjs [N=500]
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { TOP, startSbxd, fmt, e2bFor } from './lifecycle-lib.mjs'

process.env.SBX_BUILD ||= join(TOP, 'build')
const N = Number(process.argv[2] || 500)
const srv = await startSbxd()
const { Sandbox } = await e2bFor(srv)

try {
  const sbx = await Sandbox.create()
  const loop = async (cmd) => {
    const r = await sbx.commands.run(
      `s=$(date +%s%N); i=0; while [ $i -lt ${N} ]; do ${cmd} || exit 1; i=$((i+1)); done; e=$(date +%s%N); echo $(( (e - s) / ${N} / 1000 ))`)
    return Number(r.stdout.trim())
  }
  console.log(`in the sandbox, mean of ${N} one after another:`)
  for (const cmd of ['/bin/true', 'sudo true', 'sudo -u user true', 'sudo -i true']) {
    console.log(`  ${cmd.padEnd(18)} ${await loop(cmd)} µs`)
  }
  for (const cmd of ['true', 'sudo true']) {
    const t = []
    for (let i = 0; i < Math.min(N, 200); i++) {
      const s = performance.now()
      await sbx.commands.run(cmd)
      t.push(performance.now() - s)
    }
    console.log(`commands.run('${cmd}') through the SDK: ${fmt(t)}`)
  }
  await sbx.kill()
} finally {
  await srv.stop()
}
