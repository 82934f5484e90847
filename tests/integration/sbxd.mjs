// Starts a private sbxd for one test file: port 0, fresh state dir, port read back from
// --port-file. Self-contained: no npm packages, nothing shared with other suites.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, existsSync, mkdirSync, writeFileSync, rmSync, openSync, writeSync, closeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const TOP = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const FIXTURES = join(TOP, 'tests/integration/fixtures')

const firstExisting = (...c) => c.find((p) => p && existsSync(p))

// The sbxd binary: $SBXD, else build/ then build-server/.
export const SBXD = firstExisting(process.env.SBXD, join(TOP, 'build/server/sbxd'),
  join(TOP, 'build-server/server/sbxd'))

// Real helpers, when built: used by sandbox.test.mjs only.
export const REAL = {
  jailer: firstExisting(process.env.SBX_JAILER, join(TOP, 'build/jailer/sbx-jailer')),
  agent: firstExisting(process.env.SBX_AGENT, join(TOP, 'build/guest-agent/sbx-agent')),
  templateBuild: firstExisting(process.env.SBX_TEMPLATE_BUILD, join(TOP, 'templates/build-all.sh')),
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// A template dir that passes template.json validation (for the fake jailer: never mounted).
export function fakeTemplate(state, name = 'base') {
  const d = join(state, 'templates', name)
  mkdirSync(join(d, 'layer'), { recursive: true })
  writeFileSync(join(d, 'template.json'), JSON.stringify({
    name, layers: ['layer'], binds: [{ source: '/usr', target: '/usr', readonly: true }],
    cpuCount: 1, memoryMB: 256, diskSizeMB: 128,
  }))
}

// Build the real templates with the colleague's script (build-all.sh takes <state>/templates,
// a per-template build.sh takes <state>/templates/<name>).
// host: the host-/usr templates under the default names (SBX_BASE=host, templates/README.md),
// for a state dir on a small file system of its own: the Debian base is copied there whole
// (it cannot be hard-linked from the build cache across file systems).
export function realTemplates(state, { host = false } = {}) {
  const s = REAL.templateBuild
  const arg = s.endsWith('build-all.sh') ? join(state, 'templates') : join(state, 'templates/base')
  const env = host ? { ...process.env, SBX_BASE: 'host' } : process.env
  execFileSync('bash', [s, arg], { stdio: ['ignore', 'ignore', 'inherit'], env })
}

// The storage pool's size in tests (server/storage/disk-pool.h): small, preallocated.
export const TEST_POOL = '2G'

// sbxd keeps its storage pool (<state>/pool, on a loop device) and the state dir's own bind
// mount while sandbox dirs remain (persisted sandboxes, or after a SIGKILL): detach both
// before the dir is removed, so nothing is deleted through a mount and no loop device stays.
export function releaseState(state) {
  for (const m of [join(state, 'pool'), state]) {
    try { execFileSync('umount', ['-l', m], { stdio: 'ignore' }) } catch {}
  }
}

// Fills the file system of dir (a test's own small one) until a write fails with ENOSPC, as
// something else filling the host's disk would; any other failure is thrown. Returns the
// filler's path (remove it to free the space again).
export function fillUp(dir) {
  const p = join(dir, 'filler')
  const fd = openSync(p, 'w')
  const chunk = Buffer.alloc(1 << 20, 1)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (e) {
    if (e.code !== 'ENOSPC') throw e
  } finally {
    closeSync(fd)
  }
  return p
}

// reuse: { dir, state } of an earlier startSbxd (stopped with keep: true) to restart on it.
// args: extra sbxd arguments. wrap: a command sbxd runs under (['prlimit', '--nofile=1024']).
// The warm pool is off unless a test turns it on
// (['--pool-size', '2']): pool members would show up in the state dir and take uid slots.
// host: the loopback address to listen on (127.0.0.1 unless a test spreads nodes over 127.0.0.x).
// env: variables added to sbxd's environment.
export async function startSbxd({ jailer, agent, prepare, reuse, args: extra = [], wrap = [], host = '127.0.0.1', env } = {}) {
  if (!SBXD) throw new Error('sbxd binary not found: build it or set SBXD')
  const dir = reuse ? reuse.dir : mkdtempSync(join(tmpdir(), 'sbxd-it-'))
  const state = join(dir, 'state')
  mkdirSync(state, { recursive: true })
  if (prepare && !reuse) prepare(state)
  const portFile = join(dir, 'port')
  rmSync(portFile, { force: true })
  const args = ['--listen', `${host}:0`, '--state-dir', state, '--port-file', portFile]
  if (jailer) args.push('--jailer', jailer)
  if (agent) args.push('--agent', agent)
  args.push('--pool-size', '0', ...extra)
  // A test's storage pool is small (the default takes a quarter of the host's free space)
  if (!extra.includes('--storage-pool') && !extra.includes('--disk')) args.push('--storage-pool', TEST_POOL)
  const opts = { stdio: ['ignore', 'pipe', 'pipe'], env: env ? { ...process.env, ...env } : process.env }
  const proc = wrap.length
    ? spawn(wrap[0], [...wrap.slice(1), SBXD, ...args], opts)
    : spawn(SBXD, args, opts)
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d) => { stdout += d })
  proc.stderr.on('data', (d) => { stderr += d })
  for (let i = 0; i < 200 && !existsSync(portFile) && proc.exitCode === null; i++) await sleep(25)
  if (!existsSync(portFile)) {
    proc.kill('SIGKILL')
    throw new Error(`sbxd did not start:\n${stderr}`)
  }
  const port = Number(readFileSync(portFile, 'utf8').trim())
  const url = `http://${host}:${port}`
  for (let i = 0; i < 100 && stdout.split('\n').length < 5; i++) await sleep(10)
  const key = readFileSync(join(state, 'keys'), 'utf8').split('\n')[0]

  async function api(method, path, { body, key: k = key, headers = {}, raw = false } = {}) {
    const h = { ...headers }
    if (k !== null) h['X-API-KEY'] = k
    if (body !== undefined && !raw) h['Content-Type'] = 'application/json'
    const res = await fetch(url + path, {
      method, headers: h, duplex: 'half',
      body: body === undefined ? undefined : (typeof body === 'string' || raw) ? body : JSON.stringify(body),
    })
    const text = await res.text()
    let json
    try { json = JSON.parse(text) } catch { json = undefined }
    return { status: res.status, headers: res.headers, text, json }
  }

  // keep: leave sandboxes and state behind (to restart on them with reuse).
  async function stop({ keep = false } = {}) {
    if (!keep) {
      // Kill what is left so nothing outlives the test, then stop sbxd.
      const l = await api('GET', '/v2/sandboxes').catch(() => ({ json: [] }))
      for (const s of l.json || []) await api('DELETE', `/sandboxes/${s.sandboxID}`).catch(() => {})
    }
    proc.kill('SIGTERM')
    await new Promise((r) => proc.exitCode !== null || proc.signalCode ? r() : proc.once('exit', r))
    if (!keep) {
      releaseState(state)
      rmSync(dir, { recursive: true, force: true })
    }
  }

  return { url, port, key, state, dir, proc, api, stop, stdout: () => stdout, stderr: () => stderr }
}

// What cmd (run by /bin/sh -c in sandbox id) wrote to stdout, through envd's
// process.Process/Start on the sbxd at url with the sandbox's envd token: raw Connect, no SDK.
// timeoutMs (optional) bounds the whole call.
export async function envdStdout(url, id, token, cmd, { timeoutMs } = {}) {
  const body = JSON.stringify({ process: { cmd: '/bin/sh', args: ['-c', cmd] } })
  const head = Buffer.alloc(5)
  head.writeUInt32BE(Buffer.byteLength(body), 1)
  const res = await fetch(url + '/process.Process/Start', {
    method: 'POST',
    headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token,
      'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1' },
    body: Buffer.concat([head, Buffer.from(body)]),
    signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined,
  })
  const buf = Buffer.from(await res.arrayBuffer())
  let out = ''
  for (let off = 0; off + 5 <= buf.length;) {
    const len = buf.readUInt32BE(off + 1)
    const data = JSON.parse(buf.subarray(off + 5, off + 5 + len).toString())?.event?.data?.stdout
    if (data) out += Buffer.from(data, 'base64').toString()
    off += 5 + len
  }
  return out
}

// A test CA (dir/ca.pem) and a certificate it signs (dir/cert.pem, dir/key.pem) for the default
// sandbox domain sbx.localhost, its wildcard and 127.0.0.1: what sbxd's --tls-cert/--tls-key
// take, and what a client trusts through NODE_EXTRA_CA_CERTS.
export function makeTestCerts(dir) {
  const ossl = (...a) => execFileSync('openssl', a, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  ossl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=sbx test CA')
  ossl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'key.pem', '-out', 'req.csr', '-subj', '/CN=sbx.localhost')
  writeFileSync(join(dir, 'ext'), 'subjectAltName=DNS:sbx.localhost,DNS:*.sbx.localhost,IP:127.0.0.1\n')
  ossl('x509', '-req', '-in', 'req.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'cert.pem', '-days', '2', '-extfile', 'ext')
}
