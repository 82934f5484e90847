// sbx-egress, the process that parses what sandboxes send to the network's edge (egress/README.md):
// it runs as a user of its own with no capabilities, no_new_privs and a seccomp filter, cannot
// read sbxd's state dir, is started again by sbxd when it dies (with every sandbox's policy),
// and while it does not answer, sandboxes' DNS and proxied connections wait: nothing goes out
// another way. Through the unmodified SDK against the egress tests' outside (egress-net.mjs).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL, TOP, sleep } from './sbxd.mjs'
import { OUT, outsideUp, curlIn } from './egress-net.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false
const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')

let d, outside, e2b
const created = []
const opts = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key, timeoutMs: 120000 })
async function create(o = {}) {
  const s = await e2b.Sandbox.create('base', { ...opts(), ...o })
  created.push(s)
  return s
}

before(async () => {
  if (skip) return
  e2b = await import(SDK)
  outside = await outsideUp()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--egress-dns', OUT.dns, '--egress-max', 'any', '--egress-upstream-ca', outside.cert] })
})

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
  await d?.stop()
  outside?.down()
})

const status = (pid) => Object.fromEntries(readFileSync(`/proc/${pid}/status`, 'utf8').trim().split('\n')
  .map((l) => l.split(/:\s*/)).map(([k, ...v]) => [k, v.join(':')]))
// sbxd's child sbx-egress (0 when none runs)
function egressPid() {
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const s = status(p)
      if (s.Name === 'sbx-egress' && Number(s.PPid) === d.proc.pid) return Number(p)
    } catch {}
  }
  return 0
}
async function newEgressPid(old) {
  for (let i = 0; i < 200; i++) {
    const p = egressPid()
    if (p && p !== old) return p
    await sleep(25)
  }
  throw new Error('no new sbx-egress')
}
const restarts = async () => Number((await d.api('GET', '/metrics')).text
  .match(/^sbx_egress_restarts_total (\d+)$/m)?.[1])

// One DNS query from inside the sandbox with a deadline: "answered", "refused" or "none".
async function dnsIn(s, name, seconds = 1) {
  const py = `import socket, struct
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
q = struct.pack(">HHHHHH", 4660, 256, 1, 0, 0, 0) + b"".join(bytes([len(p)]) + p.encode() for p in "${name}".split(".")) + b"\\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(${seconds})
s.sendto(q, (ns, 53))
try:
    a = s.recv(4096)
    print("refused" if a[3] & 15 == 5 else "answered")
except socket.timeout:
    print("none")`
  return (await s.commands.run(`python3 -c '${py}'`)).stdout.trim()
}

const VALUE = 'sk-proc-' + 'x7'.repeat(12)
const rules = () => ({ 'www.allowed.test': [{ transform: { headers: { Authorization: `Bearer ${e2b.Secret.fill('proc-key')}` } } }] })
const recordedAuth = async () => (await (await fetch(`http://${OUT.a4}/recorded`)).json()).at(-1)?.authorization

test('sbx-egress runs as its own user: no capabilities, no_new_privs, seccomp, no state dir', { skip }, async () => {
  await e2b.Secret.create('proc-key', VALUE, opts())
  const s = await create({ network: { allowOut: ['www.allowed.test'], rules: rules() } })
  assert.equal((await curlIn(s, 'https://www.allowed.test/record', { extra: '-4' })).out, 'recorded\n')
  assert.equal(await recordedAuth(), `Bearer ${VALUE}`, 'the proxy in sbx-egress added the header')
  const pid = egressPid()
  assert.ok(pid > 0, 'sbxd started sbx-egress')
  const st = status(pid)
  const [uid, euid, suid, fsuid] = st.Uid.split(/\s+/).map(Number)
  assert.ok(uid >= 2 ** 20 && [euid, suid, fsuid].every((u) => u === uid), st.Uid)
  assert.ok(st.Gid.split(/\s+/).map(Number).every((g) => g === uid), st.Gid)
  assert.equal(st.Groups, '')
  for (const c of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.equal(BigInt('0x' + st[c]), 0n, c)
  assert.equal(st.NoNewPrivs, '1')
  assert.equal(st.Seccomp, '2', 'a seccomp filter')
  // a peer that hangs up makes a write fail with EPIPE, never kill the process (SIGPIPE)
  assert.equal(BigInt('0x' + st.SigIgn) & (1n << 12n), 1n << 12n, `SIGPIPE ignored (SigIgn ${st.SigIgn})`)
  // no sandbox shares its uid range
  const agent = JSON.parse(readFileSync(join(d.state, 'sandboxes', s.sandboxId, 'sandbox.json'), 'utf8')).pid
  const base = Number(status(agent).Uid.split(/\s+/)[0])
  assert.ok(uid < base || uid >= base + 65536, `sbx-egress ${uid}, sandbox ${base}`)
  // it holds nothing of the state dir, and its user cannot open it
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const to = readlinkSync(`/proc/${pid}/fd/${fd}`)
    assert.ok(!to.startsWith(d.state), `fd ${fd} -> ${to}`)
  }
  for (const f of ['keys', 'egress-ca/ca.key', 'secrets']) {
    assert.throws(() => execFileSync('setpriv', ['--reuid', String(uid), '--regid', String(uid), '--clear-groups',
      '--', 'ls', join(d.state, f)], { stdio: 'pipe' }), /Permission denied/, f)
  }
})

test('killed, sbx-egress is started again with every policy; DNS and the proxy answer again', { skip }, async () => {
  const s = await create({ network: { allowOut: ['www.allowed.test'], rules: rules() } })
  const before = await restarts()
  assert.ok(Number.isInteger(before), 'sbx_egress_restarts_total is on /metrics')
  const old = egressPid()
  process.kill(old, 'SIGKILL')
  const pid = await newEgressPid(old)
  assert.notEqual(pid, old)
  assert.equal(await restarts(), before + 1, 'counted on /metrics')
  await sleep(200)
  assert.equal(await dnsIn(s, 'www.allowed.test'), 'answered')
  assert.equal(await dnsIn(s, 'other.test'), 'refused', 'the policy came with it')
  assert.equal((await curlIn(s, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  assert.equal((await curlIn(s, 'https://www.allowed.test/record', { extra: '-4' })).out, 'recorded\n')
  assert.equal(await recordedAuth(), `Bearer ${VALUE}`)
  // a policy changed while none ran reaches the next one
  process.kill(pid, 'SIGKILL')
  await s.updateNetwork({ allowOut: ['other.test'] })
  await newEgressPid(pid)
  await sleep(200)
  assert.equal(await dnsIn(s, 'other.test'), 'answered')
  assert.equal(await dnsIn(s, 'www.allowed.test'), 'refused')
})

test('a client that hangs up mid-answer costs sbx-egress nothing: same process, no restart', { skip }, async () => {
  if (!(await e2b.Secret.exists('proc-key', opts()))) await e2b.Secret.create('proc-key', VALUE, opts())
  const s = await create({ network: { allowOut: ['www.allowed.test'], rules: rules() } })
  assert.equal((await curlIn(s, 'https://www.allowed.test/record', { extra: '-4' })).out, 'recorded\n')
  const pid = egressPid()
  const before = await restarts()
  // the proxy is still writing 100 MB to the sandbox when head has read a few bytes and curl
  // goes: its next write meets a closed socket (EPIPE, and SIGPIPE unless it is ignored)
  const r = await s.commands.run('for i in 1 2 3 4 5 6; do curl -s -4 https://www.allowed.test/bytes/100000000 | head -c 100 | wc -c; done')
  assert.equal(r.stdout.trim().split('\n').map(Number).join(','), '100,100,100,100,100,100')
  // many connections at once, each closed by the server after its answer
  const urls = Array.from({ length: 200 }, () => 'https://www.allowed.test/ -o /dev/null').join(' ')
  const p = await s.commands.run(`curl -s -4 --parallel --parallel-max 8 -H 'Connection: close' -w '%{http_code} %{errormsg}\\n' ${urls} | sort | uniq -c`,
    { timeoutMs: 120000 })
  // every one is answered (the outside's server says "Connection: close" back, so curl never
  // sends a second request on a connection the server is closing), and none takes the
  // process down
  assert.equal(p.stdout.trim(), '200 200', `not all 200 answered: ${p.stdout}`)
  await sleep(500)
  assert.equal(egressPid(), pid, 'the same sbx-egress')
  assert.equal(await restarts(), before, 'no restart')
  assert.equal((await curlIn(s, 'https://www.allowed.test/record', { extra: '-4' })).out, 'recorded\n')
})

test('while sbx-egress does not answer, DNS waits and nothing goes out another way', { skip }, async () => {
  const open = await create({ allowInternetAccess: true })
  const listed = await create({ network: { allowOut: ['www.allowed.test'] } })
  assert.equal(await dnsIn(open, 'other.test'), 'answered')
  const pid = egressPid()
  process.kill(pid, 'SIGSTOP')
  try {
    assert.equal(await dnsIn(open, 'other.test'), 'none', 'no answer, and no other resolver either')
    assert.equal(await dnsIn(listed, 'www.allowed.test'), 'none')
    const r = await curlIn(listed, 'http://www.allowed.test/', { seconds: 2 })
    assert.notEqual(r.code, 0, r.out)
  } finally {
    process.kill(pid, 'SIGCONT')
  }
  assert.equal(await dnsIn(open, 'other.test'), 'answered')
  assert.equal((await curlIn(listed, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  assert.equal(egressPid(), pid, 'a process that only paused is not replaced')
})
