// The "outside" of the egress tests (there is no real internet here): a network namespace
// joined to the host by a veth pair, with HTTP/HTTPS servers and a DNS server
// (fixtures/egress-outside.py). The host routes 198.51.100.0/24 and 2001:db8:5b::/64 (the
// documentation ranges, which sbx does not block) to it, and one private address, 10.99.0.10,
// that sbx blocks unless listed. Nothing here touches the host's own routes otherwise.
//
// One outside on a host at a time: outsideUp() takes a host-wide lock (LOCK) and down()
// gives it back, so two runs at once (two checkouts' `make test`, a bench beside a test) wait
// for each other instead of colliding on these addresses and routes (each sbxd's nftables
// tables are its own, server/egress/README.md, so those never collide). Not 203.0.113.0/24:
// a host's real mirror may resolve there (deb.debian.org does on some networks), and routing
// it into the test's namespace would cut the host off from it meanwhile. A run that died holding the lock (its pid gone) leaves it stale: the next one takes it over
// and removes what that run left (its namespace and the servers in it, the private route).
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FIXTURES, sleep } from './sbxd.mjs'

export const OUT = {
  host4: '198.51.100.1', host6: '2001:db8:5b::1', // the host's end
  a4: '198.51.100.10', b4: '198.51.100.11', a6: '2001:db8:5b::10',
  private4: '10.99.0.10', dns: '198.51.100.10',
}
// name → address answers of the outside's DNS server
export const NAMES = [
  ['www.allowed.test', OUT.a4], ['www.allowed.test', OUT.a6], ['other.test', OUT.b4],
  ['*.wild.test', OUT.b4], ['wild.test', OUT.a4],
]

const ip = (...a) => execFileSync('ip', a, { stdio: ['ignore', 'ignore', 'pipe'] })

export const LOCK = join(existsSync('/run/lock') ? '/run/lock' : tmpdir(), 'sbx-egress-outside.lock')
const LOCK_WAIT_MS = 30 * 60 * 1000 // a whole egress test file or bench of another run

const nsName = (pid) => `sbxout${pid % 100000}`
const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return e.code === 'EPERM'
  }
}
const holderOf = () => {
  try {
    return Number(readFileSync(join(LOCK, 'pid'), 'utf8')) || 0
  } catch {
    return 0
  }
}

// mkdir is atomic: whoever makes LOCK holds it, its pid inside.
async function lockOutside() {
  const t0 = Date.now()
  for (let said = false; ;) {
    try {
      mkdirSync(LOCK)
      writeFileSync(join(LOCK, 'pid'), String(process.pid))
      return
    } catch (e) {
      if (e.code !== 'EEXIST') throw e
    }
    const holder = holderOf()
    let age = 0
    try { age = Date.now() - statSync(LOCK).mtimeMs } catch {}
    // a dead holder, or a lock that never got its pid written
    if ((holder && !alive(holder)) || (!holder && age > 5000)) {
      if (holder) {
        // its outside's servers outlive it (they run in the namespace, not under node)
        try {
          const pids = execFileSync('ip', ['netns', 'pids', nsName(holder)], { encoding: 'utf8' })
          for (const pid of pids.split('\n').filter(Boolean)) process.kill(Number(pid), 'SIGKILL')
        } catch {}
        try { ip('netns', 'del', nsName(holder)) } catch {}
      }
      try { ip('route', 'del', `${OUT.private4}/32`) } catch {}
      rmSync(LOCK, { recursive: true, force: true })
      continue
    }
    if (Date.now() - t0 > LOCK_WAIT_MS) throw new Error(`the egress outside is still held by pid ${holder} (${LOCK})`)
    if (!said) console.error(`# waiting for the egress outside, held by pid ${holder} (${LOCK})`)
    said = true
    await sleep(250)
  }
}

function unlockOutside() {
  if (holderOf() === process.pid) rmSync(LOCK, { recursive: true, force: true })
}

// Returns { down() }, once this process holds the outside (see LOCK above). private: this
// process runs in a network namespace of its own (egress-hosts.test.mjs), whose addresses and
// routes nobody shares: no lock.
export async function outsideUp({ private: own = false } = {}) {
  if (!own) await lockOutside()
  const ns = nsName(process.pid), link = `sbxto${process.pid % 100000}`
  let certs, server
  const down = () => {
    try { server?.kill('SIGKILL') } catch {}
    try { ip('route', 'del', `${OUT.private4}/32`) } catch {}
    try { ip('netns', 'del', ns) } catch {} // the veth pair goes with it
    if (certs) rmSync(certs, { recursive: true, force: true })
    if (!own) unlockOutside()
  }
  try {
    // in the lock: a stale lock's go with it
    certs = mkdtempSync(own ? join(tmpdir(), 'sbx-outside-') : join(LOCK, 'certs-'))
    ip('netns', 'add', ns)
  } catch (e) {
    down()
    throw e
  }
  try {
    ip('link', 'add', link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
    ip('addr', 'add', `${OUT.host4}/24`, 'dev', link)
    ip('-6', 'addr', 'add', `${OUT.host6}/64`, 'dev', link, 'nodad')
    ip('link', 'set', link, 'up')
    for (const a of [`${OUT.a4}/24`, `${OUT.b4}/24`]) ip('-n', ns, 'addr', 'add', a, 'dev', 'eth0')
    ip('-n', ns, '-6', 'addr', 'add', `${OUT.a6}/64`, 'dev', 'eth0', 'nodad')
    ip('-n', ns, 'addr', 'add', `${OUT.private4}/32`, 'dev', 'lo')
    ip('-n', ns, 'link', 'set', 'lo', 'up')
    ip('-n', ns, 'link', 'set', 'eth0', 'up')
    ip('-n', ns, 'route', 'add', 'default', 'via', OUT.host4)
    ip('-n', ns, '-6', 'route', 'add', 'default', 'via', OUT.host6)
    ip('route', 'add', `${OUT.private4}/32`, 'via', OUT.a4)
    server = spawn('ip', ['netns', 'exec', ns, 'python3', join(FIXTURES, 'egress-outside.py'), certs,
      OUT.a4, OUT.b4, OUT.a6, OUT.private4, '--', ...NAMES.map(([n, a]) => `${n}=${a}`)],
    { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    server.stdout.on('data', (d) => { out += d })
    for (let i = 0; i < 400 && !out.includes('ready'); i++) await sleep(25)
    if (!out.includes('ready')) throw new Error('the outside did not start')
  } catch (e) {
    down()
    throw e
  }
  // cert: the outside's certificate (self-signed, the test names as SANs), to trust upstream
  return { ns, link, down, cert: join(certs, 'cert.pem') }
}

// An sbxd's instance id (server/core/host-claim.h): its nftables tables are named after it.
export const instanceOf = (state) => createHash('sha256').update(state).digest('hex').slice(0, 16)
// The nftables tables of sbxd d (by its state dir), as `nft list tables` names them.
export function tablesOf(state) {
  const id = instanceOf(state)
  return execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' }).split('\n').map((l) => l.trim())
    .filter((l) => l === `table inet sbx_${id}` || l === `table inet sbxk_${id}`)
}
// The links sbx left on the host and the tables sbxd of state dir state left ("" when none).
export function sbxLeftovers(state) {
  const links = execFileSync('ip', ['-br', 'link'], { encoding: 'utf8' }).split('\n')
    .filter((l) => l.startsWith('sbxe')).map((l) => l.split(/[ @]/)[0])
  return [...links, ...tablesOf(state)].join(', ')
}

// curl inside the sandbox: { code, out } (code 0 ok, 6 name not resolved, 7 no connection,
// 28 timed out). Never throws for a failed curl.
export async function curlIn(sbx, url, { seconds = 3, extra = '' } = {}) {
  try {
    const r = await sbx.commands.run(`curl -sS -k -m ${seconds} ${extra} '${url}'`, { timeoutMs: (seconds + 10) * 1000 })
    return { code: 0, out: r.stdout }
  } catch (e) {
    if (e?.result) return { code: e.result.exitCode, out: e.result.stdout + e.result.stderr }
    throw e
  }
}
