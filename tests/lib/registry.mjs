// Registries as users run them, for the pull tests (server/pull/README.md): Debian's
// docker-registry (CNCF distribution) behind token auth (a token server here, in Node: it
// checks a user's password and signs the JWT the registry's `auth: token:` verifies), Basic
// auth (htpasswd, bcrypt), or TLS with a CA made here; a counting proxy in front of one (how
// many times each blob was transferred, optionally slowed down or corrupting one blob).
import { execFileSync } from 'node:child_process'
import { createHash, createPrivateKey, sign } from 'node:crypto'
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startRegistry } from './images.mjs'

const b64url = (b) => Buffer.from(b).toString('base64url')
const ossl = (cwd, ...a) => execFileSync('openssl', a, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })

// A CA and a certificate it signs for names (DNS names and IP addresses), in dir:
// ca.pem, cert.pem, key.pem.
export function makeCerts(dir, { ips = ['127.0.0.1'], dns = ['localhost'] } = {}) {
  ossl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=sbx registry test CA')
  ossl(dir, 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'key.pem', '-out', 'req.csr', '-subj', '/CN=registry')
  const san = [...dns.map((d) => `DNS:${d}`), ...ips.map((i) => `IP:${i}`)].join(',')
  writeFileSync(join(dir, 'ext'), `subjectAltName=${san}\n`)
  ossl(dir, 'x509', '-req', '-in', 'req.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key',
    '-CAcreateserial', '-out', 'cert.pem', '-days', '2', '-extfile', 'ext')
  return { ca: join(dir, 'ca.pem'), cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') }
}

// A registry that serves HTTPS with a certificate of a CA made here: { ...registry, ca }.
export async function startTlsRegistry({ host = '127.0.0.1' } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'sbx-regtls-'))
  const c = makeCerts(dir, { ips: [host] })
  const reg = await startRegistry(['  tls:', `    certificate: ${c.cert}`, `    key: ${c.key}`].join('\n'),
    { host, scheme: 'https', ca: readFileSync(c.ca) })
  const stop = reg.stop
  return { ...reg, ca: c.ca, stop: async () => { await stop(); rmSync(dir, { recursive: true, force: true }) } }
}

// A registry with Basic auth: htpasswd with user:password (bcrypt, as the registry wants it).
export async function startBasicRegistry(user, password) {
  const dir = mkdtempSync(join(tmpdir(), 'sbx-regbasic-'))
  const hash = execFileSync('python3', ['-c',
    'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))', password],
  { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim()
  writeFileSync(join(dir, 'htpasswd'), `${user}:${hash}\n`)
  const reg = await startRegistry(['auth:', '  htpasswd:', '    realm: sbx-test',
    `    path: ${join(dir, 'htpasswd')}`].join('\n'))
  const stop = reg.stop
  return { ...reg, stop: async () => { await stop(); rmSync(dir, { recursive: true, force: true }) } }
}

// A token server (GET /token?service=&scope=, Basic auth) and a registry that trusts it.
// users: { name: password }. Every request is counted in requests ({ user|null, scope }).
// The JWT is RS256 with the signing certificate in its x5c header, the certificate in the
// registry's rootcertbundle, as distribution's token auth verifies it.
export async function startTokenRegistry(users) {
  const dir = mkdtempSync(join(tmpdir(), 'sbx-regtoken-'))
  ossl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'signer.key',
    '-out', 'signer.pem', '-days', '2', '-subj', '/CN=sbx test token issuer')
  const key = createPrivateKey(readFileSync(join(dir, 'signer.key')))
  const der = execFileSync('openssl', ['x509', '-in', join(dir, 'signer.pem'), '-outform', 'DER'])
  const requests = []
  const service = 'sbx-test-registry'
  const issuer = 'sbx-test-issuer'
  const srv = createServer((req, res) => {
    const u = new URL(req.url, 'http://x')
    let user = null
    const auth = req.headers.authorization || ''
    if (auth.startsWith('Basic ')) {
      const [name, ...rest] = Buffer.from(auth.slice(6), 'base64').toString().split(':')
      if (users[name] === undefined || users[name] !== rest.join(':')) {
        requests.push({ user: name, scope: u.searchParams.get('scope'), refused: true })
        res.writeHead(401, { 'Content-Type': 'application/json' })
        return res.end('{"details":"incorrect username or password"}')
      }
      user = name
    }
    const scope = u.searchParams.get('scope') || ''
    requests.push({ user, scope })
    if (!user) { // a private registry: no anonymous access
      res.writeHead(401, { 'Content-Type': 'application/json' })
      return res.end('{"details":"authentication required"}')
    }
    const [type, name, actions] = scope.split(':')
    const now = Math.floor(Date.now() / 1000)
    const header = { typ: 'JWT', alg: 'RS256', x5c: [der.toString('base64')] }
    const claims = {
      iss: issuer, sub: user, aud: u.searchParams.get('service'), exp: now + 300, nbf: now - 10,
      iat: now, jti: createHash('sha256').update(String(Math.random())).digest('hex'),
      access: type === 'repository' ? [{ type, name, actions: (actions || '').split(',').filter(Boolean) }] : [],
    }
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`
    const token = `${input}.${b64url(sign('sha256', Buffer.from(input), key))}`
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify({ token, expires_in: 300 }))
  })
  await new Promise((r) => srv.listen(0, '127.0.0.1', r))
  const realm = `http://127.0.0.1:${srv.address().port}/token`
  const reg = await startRegistry(['auth:', '  token:', `    realm: ${realm}`, `    service: ${service}`,
    `    issuer: ${issuer}`, `    rootcertbundle: ${join(dir, 'signer.pem')}`].join('\n'))
  const stop = reg.stop
  return {
    ...reg, realm, requests,
    stop: async () => {
      await stop()
      await new Promise((r) => srv.close(r))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

// A plain HTTP proxy in front of target (http://host:port): counts the GETs of each blob
// (blobs[digest]), records how each blob GET ended (ended[digest]: [{ sent, size, aborted }],
// aborted when the client left before the end), and optionally slows blob bodies down
// (bytesPerSec) or flips the middle byte of one blob (corrupt: a digest).
// Returns { host, blobs, ended, stop(), reset() }.
export async function startCountingProxy(target, opts = {}) {
  const t = new URL(target)
  const blobs = {}
  const manifests = {}
  const ended = {}
  const srv = createServer((req, res) => {
    const m = req.url.match(/\/blobs\/(sha256:[0-9a-f]{64})/)
    if (m && req.method === 'GET') blobs[m[1]] = (blobs[m[1]] || 0) + 1
    if (/\/manifests\//.test(req.url)) manifests[req.url] = (manifests[req.url] || 0) + 1
    const up = httpRequest({ host: t.hostname, port: t.port, method: req.method, path: req.url,
      headers: { ...req.headers, host: t.host } }, (ur) => {
      const headers = { ...ur.headers }
      // blob redirects of the registry's own storage are not used here (filesystem driver)
      res.writeHead(ur.statusCode, headers)
      const digest = m && m[1]
      const flip = Math.floor(Number(ur.headers['content-length'] || 0) / 2) // the middle byte
      let seen = 0
      ur.on('data', (chunk) => {
        if (digest && opts.corrupt === digest && seen <= flip && seen + chunk.length > flip) {
          chunk = Buffer.from(chunk)
          chunk[flip - seen] ^= 0xff
        }
        seen += chunk.length
        // the next chunk once this one's time is up and the client took it (either alone
        // resuming would let the other's wait be skipped)
        const waits = []
        if (!res.write(chunk)) waits.push(new Promise((r) => res.once('drain', r)))
        if (digest && opts.bytesPerSec) {
          waits.push(new Promise((r) => setTimeout(r, Math.ceil((chunk.length / opts.bytesPerSec) * 1000))))
        }
        if (waits.length) {
          ur.pause()
          Promise.all(waits).then(() => ur.resume())
        }
      })
      ur.on('end', () => res.end())
      ur.on('error', () => res.destroy())
      if (digest && ur.statusCode === 200) {
        res.on('close', () => {
          const size = Number(ur.headers['content-length'] || 0)
          ;(ended[digest] ||= []).push({ sent: seen, size, aborted: !res.writableFinished })
        })
      }
    })
    up.on('error', () => { res.writeHead(502); res.end() })
    req.pipe(up)
    res.on('close', () => up.destroy())
  })
  await new Promise((r) => srv.listen(0, '127.0.0.1', r))
  return {
    host: `127.0.0.1:${srv.address().port}`,
    blobs, manifests, ended, opts,
    reset: () => { for (const x of [blobs, manifests, ended]) for (const k of Object.keys(x)) delete x[k] },
    stop: () => new Promise((r) => { srv.closeAllConnections(); srv.close(r) }),
  }
}

// The digests of an OCI layout's image (mkoci.py's: one manifest): { manifest, config, layers }.
export function layoutDigests(layout) {
  const index = JSON.parse(readFileSync(join(layout, 'index.json')))
  const md = index.manifests[0].digest
  const man = JSON.parse(readFileSync(join(layout, 'blobs/sha256', md.slice(7))))
  return { manifest: md, config: man.config.digest, layers: man.layers.map((l) => l.digest), man }
}

// An OCI layout at out whose tag "latest" is an image index of the images of layouts, each
// with the platform given ([{ layout, os, architecture }]): what a multi-arch image is.
export function makeIndexLayout(out, images) {
  mkdirSync(join(out, 'blobs/sha256'), { recursive: true })
  const manifests = images.map(({ layout, os, architecture }) => {
    for (const f of readdirSync(join(layout, 'blobs/sha256'))) {
      copyFileSync(join(layout, 'blobs/sha256', f), join(out, 'blobs/sha256', f))
    }
    const d = JSON.parse(readFileSync(join(layout, 'index.json'))).manifests[0]
    return { mediaType: d.mediaType, digest: d.digest, size: d.size, platform: { os, architecture } }
  })
  const index = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests }))
  const id = createHash('sha256').update(index).digest('hex')
  writeFileSync(join(out, 'blobs/sha256', id), index)
  writeFileSync(join(out, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}')
  writeFileSync(join(out, 'index.json'), JSON.stringify({
    schemaVersion: 2,
    manifests: [{ mediaType: 'application/vnd.oci.image.index.v1+json', digest: `sha256:${id}`, size: index.length,
      annotations: { 'org.opencontainers.image.ref.name': 'latest' } }],
  }))
  return { index: `sha256:${id}`, manifests }
}
