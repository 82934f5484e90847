// Credentials the code never sees (docs/e2b-wire.md "Secrets", server/egress/README.md
// "Credentials"): E2B's /secrets through the unmodified SDK, values never readable back; and
// network transform rules whose headers the egress proxy adds to a sandbox's HTTP(S) requests,
// seen by an outside server while nothing inside the sandbox holds the secret.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createServer } from 'node:net'
import { startSbxd, realTemplates, REAL, TOP } from './sbxd.mjs'
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
const api = (method, path, body) => fetch(`${d.url}${path}`, {
  method, headers: { 'X-API-KEY': d.key, 'Content-Type': 'application/json' },
  body: body === undefined ? undefined : JSON.stringify(body),
})

before(async () => {
  if (skip) return
  e2b = await import(SDK)
  outside = await outsideUp()
  // the outside's own certificate is the upstream trust anchor of the proxy (no public CA here)
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--egress-dns', OUT.dns, '--egress-max', 'any', '--egress-upstream-ca', outside.cert] })
})

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
  await d?.stop()
  outside?.down()
})

const VALUE = 'sk-live-' + 'q7Zr2'.repeat(6)

test('secrets: create, get, list, update, delete; the value is never returned', { skip }, async () => {
  const S = e2b.Secret
  const a = await S.create('Api-Key', VALUE, { ...opts(), metadata: { team: 'x' } })
  assert.match(a.secretId, /^sec_[0-9a-f]{24}$/)
  assert.equal(a.name, 'api-key', 'names are lowercased')
  assert.equal(a.version, 1)
  assert.deepEqual(a.metadata, { team: 'x' })
  assert.ok(a.createdAt instanceof Date && !isNaN(a.createdAt))
  // a date, not the host's uptime: within a minute of now
  assert.ok(Math.abs(a.createdAt.getTime() - Date.now()) < 60_000, a.createdAt.toISOString())
  await assert.rejects(S.create('api-key', 'other', opts()), /already exists/)
  const byName = await S.getInfo('api-key', opts())
  const byId = await S.getInfo(a.secretId, opts())
  assert.equal(byName.secretId, a.secretId)
  assert.equal(byId.name, 'api-key')
  assert.equal(await S.exists('nope', opts()), false)

  const b = await S.create('second', 'v2', opts())
  const pager = S.list({ ...opts(), limit: 1 })
  const seen = []
  while (pager.hasNext) seen.push(...(await pager.nextItems()))
  assert.deepEqual(seen.map((s) => s.name), ['api-key', 'second'], 'oldest first, paged')

  const u = await S.update('api-key', VALUE + 'x', opts())
  assert.equal(u.version, 2)
  const u2 = await S.update(a.secretId, VALUE, opts())
  assert.equal(u2.version, 3)

  // no read surface carries a value, raw answers included
  for (const path of ['/secrets', `/secrets/${a.secretId}`, '/secrets/api-key']) {
    const text = await (await api('GET', path)).text()
    assert.ok(!text.includes(VALUE) && !text.includes('"value"'), text)
  }
  // bad input: 400 in E2B's shape
  for (const body of [{ name: 'a{b}', value: 'x' }, { name: 'sec_x', value: 'x' },
    { name: 'ok', value: '' }, { name: 'ok', value: 'a\nb' }, { name: 'ok', value: 'a\u0001b' }, { name: 'ok' },
    { name: 'x'.repeat(64), value: 'x' }, { name: 'ok', value: 'x', metadata: { k: 1 } }]) {
    const r = await api('POST', '/secrets', body)
    assert.equal(r.status, 400, JSON.stringify(body))
    assert.equal((await r.json()).code, 400)
  }
  assert.equal((await api('GET', '/secrets?limit=0')).status, 400)
  assert.equal((await api('POST', '/secrets/nope', { value: 'x' })).status, 404)

  // on disk: owner-only files in an owner-only dir
  const dir = join(d.state, 'secrets')
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  for (const f of readdirSync(dir)) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f)

  assert.equal(await S.destroy(b.secretId, opts()), true)
  assert.equal(await S.destroy(b.secretId, opts()), false)
  assert.equal(await S.exists('second', opts()), false)
})

// What the outside's /record saw, newest last (read from the host, never from a sandbox).
async function recorded() {
  return (await fetch(`http://${OUT.a4}/recorded`)).json()
}
const last = async () => (await recorded()).at(-1)

test('transform: the header reaches the server, the secret never enters the sandbox', { skip }, async () => {
  await e2b.Secret.create('svc-key', VALUE, opts())
  const s = await create({ network: {
    allowOut: ['www.allowed.test', 'other.test'],
    rules: { 'www.allowed.test': [{ transform: { headers: {
      Authorization: `Bearer ${e2b.Secret.fill('svc-key')}`, 'X-Sbx-Static': 'plain' } } }] },
  } })
  // HTTPS to the matching name, certificate verified in the sandbox (no -k): the proxy's leaf,
  // signed by the CA the sandbox's bundle now holds; the sandbox's own Authorization is replaced
  let r = await curlIn(s, 'https://www.allowed.test/record', { extra: "-4 -H 'Authorization: Bearer fake'" })
  assert.equal(r.code, 0, r.out)
  assert.equal(r.out, 'recorded\n')
  let h = await last()
  assert.equal(h.authorization, `Bearer ${VALUE}`)
  assert.equal(h['x-sbx-static'], 'plain')
  assert.equal(h.host, 'www.allowed.test')

  // another name: untouched, TLS and all (the outside's own certificate: -k)
  r = await curlIn(s, 'https://other.test/record', { extra: "-H 'Authorization: Bearer mine'" })
  assert.equal(r.out, 'recorded\n')
  h = await last()
  assert.equal(h.authorization, 'Bearer mine')
  assert.equal(h['x-sbx-static'], undefined)
  // not intercepted: the sandbox sees the outside's self-signed certificate, which it does
  // not trust (an intercepted name would verify: the sandbox trusts the proxy's CA)
  const plainCurl = (url) => s.commands.run(`curl -sS -m 5 -o /dev/null ${url}; echo rc=$?`)
  assert.match((await plainCurl('https://other.test/')).stdout, /rc=60/)
  // plain HTTP is never transformed
  await curlIn(s, 'http://www.allowed.test/record', { extra: '-4' })
  assert.equal((await last())['x-sbx-static'], undefined)

  // nothing in the sandbox holds the value: env, every process's environ, the files it can read
  const env = await s.commands.run('env')
  assert.ok(!env.stdout.includes(VALUE))
  const found = await s.commands.run(
    // a pattern that matches the value without spelling it (grep's own cmdline is searched too)
    `grep -rlsE 'sk-live-(q7Zr2){6}' /proc/[0-9]*/environ /proc/[0-9]*/cmdline /etc /root /home /tmp /var /opt /usr/local 2>/dev/null; true`,
    { timeoutMs: 120000 })
  assert.equal(found.stdout.trim(), '', `the secret is readable in: ${found.stdout}`)

  // the header goes to the name the upstream proved, never to another Host behind it
  // (domain fronting): refused before anything is sent upstream
  const before = (await recorded()).length
  r = await curlIn(s, 'https://www.allowed.test/record', { extra: "-4 -H 'Host: other.test' -w ' %{http_code}'" })
  assert.match(r.out, / 421$/)
  assert.equal((await recorded()).length, before, 'nothing reached the server')
  // refused in a loop: every request is refused, but sbxd's log takes a bounded share of
  // the lines (egress/serve/slot-log.h: 10 per sandbox a minute), not one per request
  const loop = await s.commands.run(`for i in $(seq 60); do curl -sk -4 -m 5 -o /dev/null -w '%{http_code}\\n' -H 'Host: other.test' https://www.allowed.test/record; done | sort | uniq -c`,
    { timeoutMs: 120000 })
  assert.match(loop.stdout.trim(), /^60 421$/)
  assert.equal((await recorded()).length, before, 'nothing reached the server')
  const logged = d.stderr().split('\n').filter((l) => l.includes('for another host refused'))
  assert.ok(logged.length >= 1 && logged.length <= 2 * 10, `${logged.length} log lines for 61 refusals`)

  // a new value is used at once; an unknown secret fails the request, not silently
  await e2b.Secret.update('svc-key', VALUE + '2', opts())
  await curlIn(s, 'https://www.allowed.test/record', { extra: '-4' })
  assert.equal((await last()).authorization, `Bearer ${VALUE}2`)

  // updateNetwork replaces the rules
  await s.updateNetwork({ allowOut: ['www.allowed.test', 'other.test'],
    rules: { 'other.test': [{ transform: { headers: { 'X-Sbx-Static': 'moved' } } }],
      'www.allowed.test': [{ transform: { headers: { Authorization: '${e2b.secrets.nope}' } } }] } })
  r = await curlIn(s, 'https://other.test/record')
  assert.equal(r.code, 0, r.out)
  h = await last()
  assert.equal(h['x-sbx-static'], 'moved')
  r = await curlIn(s, 'https://www.allowed.test/record', { extra: "-4 -w ' %{http_code}'" })
  assert.match(r.out, /secret 'nope' does not exist.* 502$/s)
  await e2b.Secret.destroy('svc-key', opts())
})

test('transform: Node fetch, urllib, requests and pip trust the CA through the variables sbx sets', { skip }, async () => {
  const rules = { 'www.allowed.test': [{ transform: { headers: { 'X-Sbx-Static': 'clients' } } }] }
  const s = await create({ network: { allowOut: ['www.allowed.test'], rules } })
  const bundle = '/etc/ssl/certs/ca-certificates.crt'
  assert.equal((await s.commands.run('echo $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE $SSL_CERT_FILE $PIP_CERT $CURL_CA_BUNDLE')).stdout,
    `${Array(5).fill(bundle).join(' ')}\n`)
  const url = 'https://www.allowed.test/record'
  const clients = {
    'node fetch': `node -e "fetch('${url}').then((r) => r.text()).then((t) => process.stdout.write(t))"`,
    'python urllib': `python3 -c "import urllib.request as u; print(u.urlopen('${url}').read().decode(), end='')"`,
    'python requests': `python3 -c "import requests; print(requests.get('${url}').text, end='')"`,
  }
  for (const [name, cmd] of Object.entries(clients)) {
    const before = (await recorded()).length
    const r = await s.commands.run(cmd, { timeoutMs: 60000 }).catch((e) => e)
    assert.equal(r.stdout, 'recorded\n', `${name}: ${r.stderr || r.message}`)
    assert.equal((await recorded()).length, before + 1)
    assert.equal((await last())['x-sbx-static'], 'clients', `${name} went through the rule`)
  }
  // pip download through the rule, from an index at the rule's name
  const pip = await s.commands.run('pip download --no-deps --disable-pip-version-check --no-cache-dir ' +
    '--index-url https://www.allowed.test/simple/ -d /tmp/dl sbx-probe && ls /tmp/dl', { timeoutMs: 120000 }).catch((e) => e)
  assert.match(pip.stdout, /sbx_probe-1\.0-py3-none-any\.whl\n$/, pip.stderr || pip.message)
  assert.equal((await last())['x-sbx-static'], 'clients')

  // a value the user set wins; a sandbox without a link gets none of them
  const own = await create({ envs: { SSL_CERT_FILE: '/home/user/my.pem' }, network: { allowOut: ['www.allowed.test'], rules } })
  assert.equal((await own.commands.run('echo $SSL_CERT_FILE $PIP_CERT')).stdout, `/home/user/my.pem ${bundle}\n`)
  const closed = await create()
  assert.equal((await closed.commands.run('echo "[$NODE_EXTRA_CA_CERTS$SSL_CERT_FILE$PIP_CERT]"')).stdout, '[]\n')
  // updateNetwork giving a running sandbox its link: its new processes get them too
  await closed.updateNetwork({ allowOut: ['www.allowed.test'], rules })
  assert.equal((await closed.commands.run('echo $NODE_EXTRA_CA_CERTS')).stdout, `${bundle}\n`)
  const r = await closed.commands.run(clients['node fetch'], { timeoutMs: 60000 }).catch((e) => e)
  assert.equal(r.stdout, 'recorded\n', r.stderr || r.message)
})

test('transform: the proxy reaches nothing the sandbox could not (the host, blocked ranges)', { skip }, async () => {
  // a listener of the host's own on its outside address, port 443: the sandbox's input chain
  // refuses it, and a redirect to the proxy (which connects from the host) must not open it
  let hits = 0
  const host = createServer((c) => { hits++; c.destroy() })
  await new Promise((r) => host.listen(443, OUT.host4, r))
  try {
    const s = await create({ allowInternetAccess: true,
      network: { rules: { '*.test': [{ transform: { headers: { 'X-Sbx-Static': 'x' } } }] } } })
    for (const url of [`https://${OUT.host4}/`, `https://${OUT.private4}/`, 'https://169.254.169.254/']) {
      const r = await curlIn(s, url, { extra: '--connect-timeout 3' })
      assert.notEqual(r.code, 0, `${url} answered: ${r.out}`)
    }
    assert.equal(hits, 0, 'the host listener was reached')
    // what the sandbox may reach still works through the proxy
    const r = await curlIn(s, 'https://www.allowed.test/record', { extra: '-4' })
    assert.equal(r.out, 'recorded\n')
    assert.equal((await last())['x-sbx-static'], 'x')
  } finally {
    host.close()
  }
})

test('transform: an upstream that cannot prove the name gets nothing', { skip }, async () => {
  // nothere.test is at an allowed address, but the outside's certificate does not name it
  const s = await create({ network: { allowOut: [OUT.b4],
    rules: { 'nothere.test': [{ transform: { headers: { 'X-Sbx-Static': 'never' } } }] } } })
  const before = (await recorded()).length
  const r = await curlIn(s, 'https://nothere.test/record',
    { extra: `--resolve nothere.test:443:${OUT.b4} -w ' %{http_code}'` })
  assert.match(r.out, /certificate did not verify.* 502$/s)
  assert.equal((await recorded()).length, before, 'nothing reached the server')
})

test('transform: the rules, the CA and the secrets survive an sbxd restart', { skip }, async () => {
  await e2b.Secret.create('kept', VALUE, opts())
  const s = await create({ network: { allowOut: ['www.allowed.test'],
    rules: { 'www.allowed.test': [{ transform: { headers: { 'X-Sbx-Kept': e2b.Secret.fill('kept') } } }] } } })
  const ca = readFileSync(join(d.state, 'egress-ca', 'ca.crt'), 'utf8')
  assert.equal(statSync(join(d.state, 'egress-ca', 'ca.key')).mode & 0o777, 0o600)
  const bundle = await s.commands.run('cat /etc/ssl/certs/ca-certificates.crt')
  assert.ok(bundle.stdout.includes(ca.trim()), 'the sandbox trusts the CA')
  await d.stop({ keep: true })
  d = await startSbxd({ jailer: REAL.jailer, agent: REAL.agent, reuse: d,
    args: ['--egress-dns', OUT.dns, '--egress-max', 'any', '--egress-upstream-ca', outside.cert] })
  assert.equal(readFileSync(join(d.state, 'egress-ca', 'ca.crt'), 'utf8'), ca, 'the CA is kept')
  const again = await e2b.Sandbox.connect(s.sandboxId, opts())
  const r = await curlIn(again, 'https://www.allowed.test/record', { extra: '-4' })
  assert.equal(r.out, 'recorded\n')
  assert.equal((await last())['x-sbx-kept'], VALUE)
  assert.equal((await e2b.Secret.list(opts()).nextItems()).some((x) => x.name === 'kept'), true)
  await e2b.Secret.destroy('kept', opts())
})

test('transform rules: bad input is a 400', { skip }, async () => {
  for (const rules of [{ '*': [{ transform: { headers: { A: 'b' } } }] },
    { 'a.test': [{ transform: { headers: { Host: 'x' } } }] },
    { 'a.test': [{ transform: { headers: { 'Bad Name': 'x' } } }] },
    { 'a.test': [{ transform: { headers: { A: 'x\r\nB: y' } } }] },
    { 'a.test': [{ transform: { headers: { A: '${e2b.secrets.}' } } }] },
    { 'a.test': [{ transform: { headers: { A: '${e2b.identity.tokens.x}' } } }] },
    { 'a.test': 'no' }]) {
    const r = await api('POST', '/sandboxes', { templateID: 'base', network: { rules } })
    assert.equal(r.status, 400, JSON.stringify(rules))
  }
})
