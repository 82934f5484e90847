// Several sbxd on one host (server/egress/README.md "Several sbxd on one host"): two and three sbxd
// with linked sandboxes, created and killed in every order, restarted, and `nft flush ruleset`
// while sandboxes run. No sandbox ever reaches what its policy refuses (the host's private
// 10.99.0.10 in particular), none loses what it allows for longer than a restore takes, every
// instance's uid slots, links, addresses and nftables tables are its own, and a kill or a stop
// of one leaves the others' rules alone.
//
// Everything runs in a network namespace this file makes (the file runs itself again inside
// it), so that flushing the ruleset touches nothing of the host's, nor of other tests' sbxd.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL, TOP, sleep } from './sbxd.mjs'
import { OUT, outsideUp, curlIn, tablesOf } from './egress-net.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false
const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')
const NETNS = process.env.SBX_TEST_NETNS

if (!NETNS) {
  // The host's side: a namespace, this file inside it, the namespace gone after.
  test('several sbxd on one host, in a network namespace of their own', { skip, timeout: 1800000 }, () => {
    const ns = `sbxhosts${process.pid % 100000}`
    execFileSync('ip', ['netns', 'add', ns])
    try {
      execFileSync('ip', ['-n', ns, 'link', 'set', 'lo', 'up'])
      // a test file of its own there (not a subtest of this runner's: NODE_TEST_CONTEXT goes)
      const { NODE_TEST_CONTEXT, ...env } = process.env
      // nsenter, not `ip netns exec`: that one mounts a sysfs of its own over /sys, hiding the
      // cgroup hierarchies sandboxes are made in
      const r = spawnSync('nsenter', [`--net=/run/netns/${ns}`, process.execPath, '--test-reporter=tap',
        fileURLToPath(import.meta.url)], { env: { ...env, SBX_TEST_NETNS: ns }, encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'], timeout: 1700000 })
      for (const line of r.stdout.split('\n')) if (/^(not )?ok |^# (pass|fail|skipped|figure)/.test(line)) console.log(line)
      // the failures in full: from each "not ok" to the end of its YAML block
      const failures = r.stdout.split(/^(?=not ok |ok )/m).filter((b) => b.startsWith('not ok'))
      assert.equal(r.status, 0, failures.map((b) => b.split(/^\s+\.\.\.$/m)[0]).join('\n'))
      assert.match(r.stdout, /^# pass 3$/m, 'the three tests ran in the namespace')
    } finally {
      try {
        for (const pid of execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
          try { process.kill(Number(pid), 'SIGKILL') } catch {}
        }
      } catch {}
      execFileSync('ip', ['netns', 'del', ns])
    }
  })
}

let e2b, outside
const sbxd = {} // name → sbxd
const opts = (d) => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key, timeoutMs: 120000 })
const start = (name, reuse) => startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates, reuse,
  args: ['--egress-dns', OUT.dns, '--egress-max', 'any', '--disk', 'tmpfs'] }) // three sbxd: no disk images

if (NETNS) {
  before(async () => {
    e2b = await import(SDK)
    outside = await outsideUp({ private: true })
    for (const n of ['a', 'b', 'c']) sbxd[n] = await start(n)
  })
  after(async () => {
    for (const d of Object.values(sbxd)) await d.stop().catch(() => {})
    outside?.down()
  })
}

const record = (d, s) => JSON.parse(readFileSync(join(d.state, 'sandboxes', s.sandboxId, 'sandbox.json'), 'utf8'))
const uidOf = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)[1])
const reaches = async (s, url) => (await curlIn(s, url, { seconds: 2 })).code === 0
// The same from the host, in the sandbox's network namespace (its sbxd may be down)
const reachesFrom = (pid, url) => spawnSync('nsenter', ['-t', String(pid), '-n', 'curl', '-sS', '-m', '2',
  '-o', '/dev/null', url], { stdio: 'ignore' }).status === 0

// What each sandbox's policy says, checked from inside it.
async function holds(s, { open = false, name = false }) {
  assert.equal(await reaches(s, `http://${OUT.private4}/`), false, 'the host\'s private range stays shut')
  assert.equal(await reaches(s, `http://${OUT.host4}:1/`), false)
  assert.equal(await reaches(s, `http://${OUT.a4}/`), open, `the internet: ${open}`)
  if (name) assert.equal((await curlIn(s, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
}

test('two and three sbxd: nothing shared, each keeps its own rules through the others\' kills and restarts', { skip: skip || !NETNS }, async () => {
  const { a, b, c } = sbxd
  const a1 = await e2b.Sandbox.create('base', { ...opts(a), allowInternetAccess: true })
  const b1 = await e2b.Sandbox.create('base', { ...opts(b), network: { allowOut: ['www.allowed.test'] } })
  const c1 = await e2b.Sandbox.create('base', { ...opts(c), allowInternetAccess: true })
  const b2 = await e2b.Sandbox.create('base', { ...opts(b), allowInternetAccess: true })
  const all = [[a, a1], [b, b1], [c, c1], [b, b2]]
  const slots = all.map(([d, s]) => record(d, s).uidSlot)
  assert.equal(new Set(slots).size, 4, `uid slots, hence links and addresses: ${slots}`)
  const uids = all.map(([d, s]) => uidOf(record(d, s).pid))
  assert.equal(new Set(uids.map((u) => Math.floor(u / 65536))).size, 4, `uid ranges: ${uids}`)
  for (const d of [a, b, c]) assert.equal(tablesOf(d.state).length, 2, 'its own main and keep tables')

  await holds(a1, { open: true })
  await holds(b1, { name: true })
  await holds(c1, { open: true })

  // b's last linked sandboxes go: only b's tables go with them
  await b1.kill()
  await b2.kill()
  assert.deepEqual(tablesOf(b.state), [])
  assert.equal(tablesOf(a.state).length + tablesOf(c.state).length, 4)
  await holds(a1, { open: true })
  await holds(c1, { open: true })

  // b again, then restarted with a sandbox running
  const b3 = await e2b.Sandbox.create('base', { ...opts(b), network: { allowOut: ['www.allowed.test'] } })
  await b.stop({ keep: true })
  sbxd.b = await start('b', b)
  await holds(a1, { open: true })
  await holds(c1, { open: true })
  await holds(await e2b.Sandbox.connect(b3.sandboxId, opts(sbxd.b)), { name: true })

  // while c's sbxd is down, its sandbox's link passes nothing at all (its keep table); seen from
  // the sandbox's network namespace, as its sbxd cannot run a command in it now
  const c1pid = record(c, c1).pid
  assert.equal(reachesFrom(c1pid, `http://${OUT.a4}/`), true, 'its link, as its sbxd runs')
  await c.stop({ keep: true })
  assert.equal(reachesFrom(c1pid, `http://${OUT.a4}/`), false, 'fail closed while its sbxd is down')
  assert.equal(reachesFrom(c1pid, `http://${OUT.private4}/`), false)
  await holds(a1, { open: true })
  sbxd.c = await start('c', c)
  await holds(await e2b.Sandbox.connect(c1.sandboxId, opts(sbxd.c)), { open: true })

  // kills in the other order: a's first, c's last
  await a1.kill()
  assert.deepEqual(tablesOf(a.state), [])
  await holds(await e2b.Sandbox.connect(c1.sandboxId, opts(sbxd.c)), { open: true })
  await e2b.Sandbox.kill(b3.sandboxId, opts(sbxd.b))
  await e2b.Sandbox.kill(c1.sandboxId, opts(sbxd.c))
  for (const d of Object.values(sbxd)) assert.deepEqual(tablesOf(d.state), [])
})

// What holds() checks, repeatable: a sandbox that lists www.allowed.test has its address
// pinned once it resolved it, so the refused address here is b4, which nothing of it lists.
async function holdsAgain(s, open) {
  assert.equal(await reaches(s, `http://${OUT.private4}/`), false, 'the host\'s private range stays shut')
  assert.equal(await reaches(s, `http://${OUT.host4}:1/`), false)
  assert.equal(await reaches(s, `http://${OUT.b4}/`), open, `an address it does not list: ${open}`)
  if (!open) assert.equal((await curlIn(s, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
}

// Every order: each of the six orders of the three sbxd creates one linked sandbox in each
// (alternately internet-enabled and listing one name) and kills them in that order or its
// reverse (so each kill order comes once); after every kill the others still hold, and the
// killed one's sbxd has no table left.
const PERMS = [['a', 'b', 'c'], ['a', 'c', 'b'], ['b', 'a', 'c'], ['b', 'c', 'a'], ['c', 'a', 'b'], ['c', 'b', 'a']]
test('three sbxd, linked sandboxes created and killed in every order: the rest keep their rules', { skip: skip || !NETNS, timeout: 1200000 }, async () => {
  for (const [i, order] of PERMS.entries()) {
    const live = [] // [name, sandbox, policy]
    for (const [k, n] of order.entries()) {
      const open = (i + k) % 2 === 0
      const network = open ? { allowInternetAccess: true } : { network: { allowOut: ['www.allowed.test'] } }
      const sb = await e2b.Sandbox.create('base', { ...opts(sbxd[n]), ...network })
      live.push([n, sb, open])
      assert.equal(tablesOf(sbxd[n].state).length, 2, `${n}: its tables, created ${order.slice(0, k + 1)}`)
    }
    const slots = live.map(([n, sb]) => record(sbxd[n], sb).uidSlot)
    assert.equal(new Set(slots).size, 3, `${order}: slots ${slots}`)
    const kills = i % 2 === 0 ? [...live] : [...live].reverse()
    for (const [n, sb] of kills) {
      await sb.kill()
      assert.deepEqual(tablesOf(sbxd[n].state), [], `${n}'s tables go with its last sandbox`)
      live.splice(live.findIndex(([, x]) => x === sb), 1)
      for (const [m, other, open] of live) {
        assert.equal(tablesOf(sbxd[m].state).length, 2, `${m} keeps its tables after ${n}'s kill`)
        await holdsAgain(other, open)
      }
    }
  }
})

test('nft flush ruleset while sandboxes run: the links stay shut to what is refused, the rules come back', { skip: skip || !NETNS }, async () => {
  const { a, b } = sbxd
  const a1 = await e2b.Sandbox.create('base', { ...opts(a), allowInternetAccess: true })
  const b1 = await e2b.Sandbox.create('base', { ...opts(b), network: { allowOut: ['www.allowed.test'] } })
  assert.equal((await curlIn(b1, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  const restored = async (d) => Number((await d.api('GET', '/metrics')).text
    .match(/^sbx_egress_rules_restored_total (\d+)$/m)?.[1])
  const before = [await restored(a), await restored(b)]
  assert.ok(before.every(Number.isInteger), 'sbx_egress_rules_restored_total is on /metrics')
  // a transfer that lasts through the flush and the restore: what is allowed keeps going
  await a1.commands.run(`curl -sS -m 20 http://${OUT.a4}/slow/4 > /tmp/slow 2>&1`, { background: true })
  await sleep(500)
  execFileSync('nft', ['flush', 'ruleset'])
  const flushed = Date.now()
  // at once, before any restore: refused stays refused, allowed stays allowed
  const [priv, open, pinned] = await Promise.all([reaches(a1, `http://${OUT.private4}/`),
    reaches(a1, `http://${OUT.b4}/`), reaches(b1, `http://${OUT.a4}/`)])
  assert.deepEqual([priv, open, pinned], [false, true, true])
  assert.equal(await reaches(b1, `http://${OUT.b4}/`), false, 'nothing the policy does not list')
  for (let i = 0; i < 40 && (tablesOf(a.state).length < 2 || tablesOf(b.state).length < 2); i++) await sleep(100)
  // a figure, not an assert (the watch looks every EGRESS_WATCH_MS, 1 s)
  console.log(`# figure: both sbxd's tables back ${Date.now() - flushed} ms after the flush (checks included)`)
  assert.equal(tablesOf(a.state).length, 2, 'a\'s rules back within 4 s')
  assert.equal(tablesOf(b.state).length, 2)
  assert.ok(await restored(a) > before[0] && await restored(b) > before[1], 'counted on /metrics')
  assert.match(a.stderr(), /"level":"error".*removed by another program.*put back/)
  await sleep(3500)
  assert.equal((await a1.commands.run('cat /tmp/slow')).stdout, 'outside slow\n'.repeat(4), 'the transfer went on')
  await a1.kill()
  await b1.kill()
})
