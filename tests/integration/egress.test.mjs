// Egress by policy (docs/e2b-wire.md "Egress", server/egress/egress.h) through the
// unmodified SDK, against an "outside" network namespace of our own (egress-net.mjs): deny by
// default, allowInternetAccess, allowOut by IP, CIDR and domain, denyOut, changes at runtime
// that keep open connections, the always-blocked ranges, the escape battery's network group
// (docs/escape-battery.md E) on the new interface, and nothing left behind after kill and
// after an sbxd restart.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL, TOP, sleep } from './sbxd.mjs'
import { OUT, outsideUp, sbxLeftovers, curlIn } from './egress-net.mjs'

const missing = Object.entries(REAL).filter(([, p]) => !p).map(([k]) => k)
const skip = missing.length ? `not built: ${missing.join(', ')}` : false
const SDK = join(TOP, 'tests/node_modules/e2b/dist/index.mjs')

let d, outside, e2b, hostServer, hostPort
const logs = [] // stderr of every sbxd this file stopped: none may have logged an error
async function stopSbxd(o) {
  logs.push(d.stderr())
  await d.stop(o)
}
const opts = () => ({ apiUrl: d.url, sandboxUrl: d.url, apiKey: d.key, timeoutMs: 120000 })
const created = []
async function create(o = {}) {
  const s = await e2b.Sandbox.create('base', { ...opts(), ...o })
  created.push(s)
  return s
}

before(async () => {
  if (skip) return
  e2b = await import(SDK)
  outside = await outsideUp()
  // a listener of the host's own, on every address: no sandbox may reach it
  hostServer = createServer((q, r) => r.end('host\n'))
  await new Promise((r) => hostServer.listen(0, '::', r))
  hostPort = hostServer.address().port
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--egress-dns', OUT.dns, '--egress-max', 'any'] })
})

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
  await d?.stop()
  hostServer?.close()
  outside?.down()
})

test('deny by default: a sandbox that asks for nothing has loopback only', { skip }, async () => {
  const s = await create()
  const dev = (await s.commands.run('cat /proc/net/dev')).stdout
  assert.ok(!dev.includes('eth0'), dev)
  assert.equal((await curlIn(s, `http://${OUT.a4}/`)).code, 7)
  assert.equal(sbxLeftovers(d.state), '', 'a loopback-only sandbox makes no link and no table')
})

test('allowInternetAccess true reaches the outside over IPv4, IPv6, DNS and HTTPS', { skip }, async () => {
  const s = await create({ allowInternetAccess: true })
  assert.equal((await curlIn(s, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`)
  assert.equal((await curlIn(s, `http://[${OUT.a6}]/`)).out, `outside ${OUT.a6}\n`)
  assert.equal((await curlIn(s, 'http://other.test/')).out, `outside ${OUT.b4}\n`)
  assert.equal((await curlIn(s, 'https://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  const info = await e2b.Sandbox.getInfo(s.sandboxId, opts())
  assert.equal(info.allowInternetAccess, true)
})

test('metadata, private ranges and the host itself are blocked unless listed', { skip }, async () => {
  // the host reaches the private address: only the policy stands in the sandbox's way
  assert.equal(await (await fetch(`http://${OUT.private4}/`)).text(), `outside ${OUT.private4}\n`)
  const s = await create({ allowInternetAccess: true })
  for (const url of ['http://169.254.169.254/latest/meta-data/', `http://${OUT.private4}/`,
    `http://${OUT.host4}:${hostPort}/`, `http://[${OUT.host6}]:${hostPort}/`,
    `http://10.200.0.1:${hostPort}/`, `http://127.0.0.1:${hostPort}/`, 'http://[fd00::1]/']) {
    const r = await curlIn(s, url)
    assert.notEqual(r.code, 0, `${url} answered: ${r.out}`)
  }
  const listed = await create({ allowInternetAccess: true,
    network: { allowOut: [OUT.private4, `${OUT.host4}/32`] } })
  assert.equal((await curlIn(listed, `http://${OUT.private4}/`)).out, `outside ${OUT.private4}\n`)
  assert.equal((await curlIn(listed, `http://${OUT.host4}:${hostPort}/`)).out, 'host\n')
})

test('allowOut by IP, CIDR and domain; denyOut; allow wins over deny', { skip }, async () => {
  const byIp = await create({ network: { allowOut: [OUT.b4] } })
  assert.equal((await curlIn(byIp, `http://${OUT.b4}/`)).out, `outside ${OUT.b4}\n`)
  assert.notEqual((await curlIn(byIp, `http://${OUT.a4}/`)).code, 0)
  assert.notEqual((await curlIn(byIp, `http://[${OUT.a6}]/`)).code, 0)
  assert.equal((await curlIn(byIp, 'http://other.test/')).code, 6, 'names outside allowOut are refused')

  const byCidr = await create({ network: { allowOut: ['198.51.100.8/29', '2001:db8:5b::/64'] } })
  assert.equal((await curlIn(byCidr, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`)
  assert.equal((await curlIn(byCidr, `http://${OUT.b4}/`)).out, `outside ${OUT.b4}\n`)
  assert.equal((await curlIn(byCidr, `http://[${OUT.a6}]/`)).out, `outside ${OUT.a6}\n`)

  const byName = await create({ network: { allowOut: ['www.allowed.test', '*.wild.test'] } })
  assert.notEqual((await curlIn(byName, `http://${OUT.a4}/`)).code, 0, 'not before it was resolved')
  assert.equal((await curlIn(byName, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  assert.equal((await curlIn(byName, 'http://www.allowed.test/', { extra: '-6' })).out, `outside ${OUT.a6}\n`)
  assert.equal((await curlIn(byName, 'http://a.b.wild.test/')).out, `outside ${OUT.b4}\n`)
  assert.equal((await curlIn(byName, 'http://wild.test/')).code, 6, 'a wildcard does not match the apex')
  assert.equal((await curlIn(byName, 'http://other.test/')).code, 6)

  const denied = await create({ allowInternetAccess: true, network: { denyOut: [OUT.b4] } })
  assert.notEqual((await curlIn(denied, `http://${OUT.b4}/`)).code, 0)
  assert.equal((await curlIn(denied, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`)

  const allowWins = await create({ network: { allowOut: [OUT.b4, 'www.allowed.test'], denyOut: ['198.51.100.0/24', '0.0.0.0/0'] } })
  assert.equal((await curlIn(allowWins, `http://${OUT.b4}/`)).out, `outside ${OUT.b4}\n`)
  assert.equal((await curlIn(allowWins, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  assert.notEqual((await curlIn(allowWins, `http://[${OUT.a6}]:80/`, { extra: '--connect-to ::' })).code, 0)

  await assert.rejects(create({ network: { denyOut: ['example.com'] } }), /not supported for deny rules/)
  await assert.rejects(create({ network: { allowOut: ['not a host'] } }), /allowOut/)
})

test('updateNetwork changes a running sandbox at once and keeps its open connections', { skip }, async () => {
  const s = await create({ allowInternetAccess: true })
  // a download that lasts 4 s, started before the change
  await s.commands.run(`curl -sS -m 20 http://${OUT.a4}/slow/4 > /tmp/slow 2>&1`, { background: true })
  await sleep(1200)
  const t0 = performance.now()
  await s.updateNetwork({ denyOut: [e2b.ALL_TRAFFIC ?? '0.0.0.0/0'] })
  const ms = performance.now() - t0
  console.log(`# updateNetwork took ${ms.toFixed(1)} ms`)
  assert.notEqual((await curlIn(s, `http://${OUT.b4}/`, { seconds: 2 })).code, 0, 'new connections see the new rules')
  await sleep(4000)
  assert.equal((await s.commands.run('cat /tmp/slow')).stdout, 'outside slow\n'.repeat(4),
    'the connection opened before the change finished')
  await s.updateNetwork({ allowOut: [OUT.a4], denyOut: ['0.0.0.0/0'] })
  assert.equal((await curlIn(s, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`)
  assert.notEqual((await curlIn(s, `http://${OUT.b4}/`)).code, 0)
  // a loopback-only sandbox gets its link (and a resolv.conf naming it) when it needs one
  const lo = await create()
  assert.ok(!(await lo.commands.run('cat /proc/net/dev')).stdout.includes('eth0'))
  await lo.commands.run('sleep 600 >/dev/null 2>&1', { background: true })
  await lo.updateNetwork({ allowOut: ['www.allowed.test'] })
  assert.equal((await curlIn(lo, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  assert.notEqual((await curlIn(lo, `http://${OUT.b4}/`)).code, 0)
  assert.match((await lo.commands.run('ps -eo comm')).stdout, /sleep/, 'its processes carry on')
  await lo.updateNetwork({})
  assert.notEqual((await curlIn(lo, `http://${OUT.a4}/`)).code, 0, 'and loses what it lost')
})

const py = (code) => `python3 -c '${code.replace(/'/g, "'\\''")}'`

test('escape battery E on the link: raw sockets, spoofed sources, other sandboxes, the host', { skip }, async () => {
  const a = await create({ allowInternetAccess: true })
  const b = await create({ allowInternetAccess: true })
  // b serves on every address; a may not reach it, nor b's host end
  await b.commands.run('python3 -m http.server 8000 --bind :: >/dev/null 2>&1', { background: true })
  await sleep(800)
  const bAddrs = (await b.commands.run('cat /proc/net/if_inet6; grep -h "" /proc/net/fib_trie | head -40')).stdout
  const b4 = (await b.commands.run(py(`import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("${OUT.a4}", 9)); print(s.getsockname()[0])`))).stdout.trim()
  assert.match(b4, /^10\.200\./, bAddrs)
  assert.equal((await curlIn(b, 'http://127.0.0.1:8000/', { extra: '-o /dev/null -w %{http_code}' })).out, '200')
  assert.notEqual((await curlIn(a, `http://${b4}:8000/`)).code, 0, 'another sandbox is out of reach')
  const gwB = b4.replace(/\.\d+$/, (m) => '.' + (Number(m.slice(1)) - 1))
  assert.notEqual((await curlIn(a, `http://${gwB}:${hostPort}/`)).code, 0)

  // raw and packet sockets: refused by seccomp whatever the link
  const raw = await a.commands.run(py(`import socket
for f, t in ((socket.AF_INET, socket.SOCK_RAW), (socket.AF_INET6, socket.SOCK_RAW), (socket.AF_PACKET, socket.SOCK_RAW)):
    try:
        socket.socket(f, t, 1); print("open")
    except OSError as e:
        print(e.errno)`), { user: 'root' })
  assert.deepEqual(raw.stdout.trim().split('\n'), ['1', '1', '1'])

  // spoofed sources, UDP to the outside's logger with a token each; the outside must see only
  // what came from the sandbox's own addresses. From inside (IP_FREEBIND needs no privilege)
  // the kernel already refuses a non-local source; then the same from a process with every
  // capability in a's net namespace (IP_TRANSPARENT, as a sandbox that broke out of its
  // capability set would), which only the host end's rules (and rp_filter, for IPv4) stop.
  const b6 = (await b.commands.run(py('import socket; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.connect(("2001:db8:5b::10", 9)); print(s.getsockname()[0])'))).stdout.trim()
  const sender = (fam, src, dst, token, opt) => `import socket
s = socket.socket(socket.${fam}, socket.SOCK_DGRAM)
if "${src}":
    s.setsockopt(${fam === 'AF_INET' ? 0 : 41}, ${opt}, 1); s.bind(("${src}", 0))
try:
    for _ in range(3):
        s.sendto(b"${token}", ("${dst}", 9999))
    print("sent")
except OSError as e:
    print("refused", e.errno)`
  const tag = `t${Date.now()}`
  const cases = [['AF_INET', b4, OUT.a4, 'b4'], ['AF_INET', OUT.b4, OUT.a4, 'out4'],
    ['AF_INET6', b6, OUT.a6, 'b6'], ['AF_INET6', '2001:db8:5b::99', OUT.a6, 'out6']]
  for (const [fam, src, dst, name] of cases) {
    const r = await a.commands.run(py(sender(fam, src, dst, `${tag}-in-${name}`, fam === 'AF_INET' ? 15 : 78)), { user: 'root' })
    assert.match(r.stdout, /^(refused|sent)/)
  }
  const agentPid = JSON.parse(readFileSync(join(d.state, 'sandboxes', a.sandboxId, 'sandbox.json'), 'utf8')).pid
  const nsSend = (fam, src, dst, token) => execFileSync('nsenter', ['-t', String(agentPid), '-n', 'python3', '-c',
    sender(fam, src, dst, token, fam === 'AF_INET' ? 19 : 75)], { encoding: 'utf8' })
  assert.match(nsSend('AF_INET', '', OUT.a4, `${tag}-own4`), /^sent/)
  assert.match(nsSend('AF_INET6', '', OUT.a6, `${tag}-own6`), /^sent/)
  for (const [fam, src, dst, name] of cases) assert.match(nsSend(fam, src, dst, `${tag}-root-${name}`), /^sent/)
  await sleep(500)
  const seen = (await (await fetch(`http://${OUT.a4}/udp-log`)).text()).split('\n')
    .filter((l) => l.startsWith(tag)).map((l) => l.split(' ')[0].slice(tag.length + 1))
  assert.deepEqual([...new Set(seen)].sort(), ['own4', 'own6'], `the outside saw: ${seen}`)
  // and the unspoofed path still works from the same sandbox
  assert.equal((await curlIn(a, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`)
})

test('nothing left behind after kill, and the rules survive an sbxd restart', { skip }, async () => {
  for (const s of created.splice(0)) await s.kill()
  assert.equal(sbxLeftovers(d.state), '', 'links and table go with the last sandbox')

  const s = await create({ network: { allowOut: ['www.allowed.test', OUT.b4] } })
  assert.equal((await curlIn(s, 'http://www.allowed.test/', { extra: '-4' })).out, `outside ${OUT.a4}\n`)
  await stopSbxd({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: d, args: ['--egress-dns', OUT.dns, '--egress-max', 'any'] })
  const again = await e2b.Sandbox.connect(s.sandboxId, opts())
  assert.equal((await curlIn(again, `http://${OUT.b4}/`)).out, `outside ${OUT.b4}\n`, 'allowOut kept')
  assert.equal((await curlIn(again, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`, 'pinned address kept')
  assert.notEqual((await curlIn(again, `http://[${OUT.a6}]/`)).code, 0, 'nothing more')
  assert.equal((await curlIn(again, 'http://other.test/')).code, 6, 'the resolver answers again, by policy')
  await again.kill()
  created.splice(0)
  assert.equal(sbxLeftovers(d.state), '')
})

test('--egress allow and --egress-max: the operator\'s default and cap', { skip }, async () => {
  // one sbxd with egress at a time (server/egress/README.md "Egress", gaps)
  await stopSbxd()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--egress-dns', OUT.dns, '--egress', 'allow'] })
  const open = await create()
  assert.equal((await curlIn(open, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`, 'nothing asked: the default, allow')
  const closed = await create({ allowInternetAccess: false })
  assert.ok(!(await closed.commands.run('cat /proc/net/dev')).stdout.includes('eth0'))
  for (const s of created.splice(0)) await s.kill()

  // The default install (no --egress option): allow_internet_access is not honoured, only
  // allowOut lists are. The Python SDK sends this body on every create (allow_internet_access
  // defaults to True there); the JS SDK sends the same field when asked.
  await stopSbxd()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--egress-dns', OUT.dns] })
  for (let i = 0; i < 100 && !/egress: a sandbox/.test(d.stderr()); i++) await sleep(20)
  assert.match(d.stderr(), /egress: a sandbox that asks for nothing gets loopback only; --egress-max listed/)
  const py = await d.api('POST', '/sandboxes', { body: { templateID: 'base', timeout: 300, metadata: {},
    envVars: {}, secure: true, allow_internet_access: true } })
  assert.equal(py.status, 201, py.text)
  assert.equal(py.json.allowInternetAccess, false, 'the create answer says what the sandbox got')
  const pySbx = await e2b.Sandbox.connect(py.json.sandboxID, opts())
  created.push(pySbx)
  assert.equal((await curlIn(pySbx, `http://${OUT.a4}/`)).code, 7, 'a Python SDK create gets no internet')
  assert.equal((await curlIn(pySbx, `http://[${OUT.a6}]/`)).code, 7, 'nor IPv6')
  assert.equal((await e2b.Sandbox.getInfo(pySbx.sandboxId, opts())).allowInternetAccess, false)
  const capped = await create({ allowInternetAccess: true })
  assert.ok(!(await capped.commands.run('cat /proc/net/dev')).stdout.includes('eth0'), 'no internet under listed')
  assert.equal((await capped.getInfo()).allowInternetAccess, false)
  const listed = await create({ allowInternetAccess: true, network: { allowOut: [OUT.a4] } })
  assert.equal((await curlIn(listed, `http://${OUT.a4}/`)).out, `outside ${OUT.a4}\n`)
  assert.notEqual((await curlIn(listed, `http://${OUT.b4}/`)).code, 0, 'only what is listed')
  const info = await e2b.Sandbox.getInfo(listed.sandboxId, opts())
  assert.equal(info.allowInternetAccess, false)
  for (const s of created.splice(0)) await s.kill()

  await stopSbxd()
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--egress-dns', OUT.dns, '--egress-max', 'none'] })
  const none = await create({ allowInternetAccess: true, network: { allowOut: [OUT.a4] } })
  assert.ok(!(await none.commands.run('cat /proc/net/dev')).stdout.includes('eth0'))
  await none.updateNetwork({ allowOut: [OUT.a4] }) // accepted, and still nothing
  assert.notEqual((await curlIn(none, `http://${OUT.a4}/`)).code, 0)
  for (const s of created.splice(0)) await s.kill()
  assert.equal(sbxLeftovers(d.state), '')
})

test('no sbxd of this file logged an error', { skip }, async () => {
  const text = [...logs, d.stderr()].join('\n')
  assert.match(text, /"ident":"sbxd"/, 'the logs were read')
  assert.deepEqual(text.split('\n').filter((l) => l.includes('"level":"error"')), [])
})
