// Images as users bring them (tests/lib/images/build.sh: a static busybox, a musl image, Debian
// minbase with python3, none holding anything of sbx's), a real OCI registry (Debian's
// docker-registry, the CNCF distribution) on loopback, and skopeo to push and convert.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))
const BUILD = join(HERE, 'images/build.sh')
export const MKOCI = join(HERE, 'images/mkoci.py')

let built
// The four OCI layouts, built once per test run (into the run's state dir when there is one).
export function userImages() {
  if (built) return built
  const base = process.env.SBX_TEST_STATE || mkdtempSync(join(tmpdir(), 'sbx-images-'))
  const out = join(base, 'user-images')
  if (!existsSync(join(out, 'minbase-app', 'index.json'))) {
    execFileSync('bash', [BUILD, out], { stdio: ['ignore', 'ignore', 'inherit'] })
  }
  built = {
    busybox: join(out, 'busybox'),
    musl: join(out, 'musl'),
    minbase: join(out, 'minbase'),
    minbaseApp: join(out, 'minbase-app'),
  }
  return built
}

export function freePort(addr = '127.0.0.1') {
  return new Promise((res, rej) => {
    const s = createServer()
    s.on('error', rej)
    s.listen(0, addr, () => {
      const { port } = s.address()
      s.close(() => res(port))
    })
  })
}

// GET url with node:https/http (a CA for https): the status, or an error.
function probe(url, ca) {
  return new Promise((res, rej) => {
    const mod = url.startsWith('https:') ? httpsRequest : httpRequest
    const r = mod(url, { ca }, (a) => { a.resume(); res(a.statusCode) })
    r.on('error', rej)
    r.end()
  })
}

// A registry on 127.0.0.1 (or host) with storage in a temp dir. extraConfig is appended to
// its YAML config under http: (a tls: section) or after it (an auth: section, at column 0).
// scheme and ca: how to reach it when it serves TLS. Returns { host, url, dir, stop() }.
export async function startRegistry(extraConfig = '', { host: addr = '127.0.0.1', scheme = 'http', ca } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'sbx-registry-'))
  const port = await freePort(addr)
  const config = join(dir, 'config.yml')
  writeFileSync(config, [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${dir}/data`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: ${addr}:${port}`,
    extraConfig,
  ].join('\n') + '\n')
  const child = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr.on('data', (d) => { log += d })
  const host = `${addr}:${port}`
  for (let i = 0; i < 100; i++) {
    try {
      const st = await probe(`${scheme}://${host}/v2/`, ca)
      if (st === 200 || st === 401) break
    } catch {}
    if (child.exitCode !== null) throw new Error(`docker-registry exited: ${log}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    host,
    url: `${scheme}://${host}`,
    dir,
    log: () => log,
    stop: async () => {
      child.kill('SIGTERM')
      await new Promise((r) => (child.exitCode !== null ? r() : child.on('exit', r)))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

// skopeo copy from an OCI layout to a registry reference (HOST/NAME:TAG), TLS not verified.
// format: 'v2s2' for a Docker v2 schema 2 manifest (gzip layers only); all: an index with
// every image it lists (the layout's tag names the index).
// Asynchronous (a token server in this process must answer skopeo meanwhile).
export function push(layout, ref, { creds, format, all, tag = 'latest' } = {}) {
  const args = ['copy', '-q', '--dest-tls-verify=false']
  if (creds) args.push('--dest-creds', creds)
  if (format) args.push('--format', format)
  if (all) args.push('--all')
  args.push(`oci:${layout}:${tag}`, `docker://${ref}`)
  return new Promise((res, rej) => {
    const p = spawn('skopeo', args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    p.stderr.on('data', (d) => { err += d })
    p.on('error', rej)
    p.on('exit', (code) => (code === 0 ? res() : rej(new Error(`skopeo ${args.join(' ')}: ${err}`))))
  })
}

// The same image as a `docker save` archive.
export function dockerArchive(layout, file, ref) {
  mkdirSync(dirname(resolve(file)), { recursive: true })
  rmSync(file, { force: true })
  execFileSync('skopeo', ['copy', '-q', `oci:${layout}:latest`, `docker-archive:${file}:${ref}`],
    { stdio: ['ignore', 'ignore', 'inherit'] })
  return file
}
