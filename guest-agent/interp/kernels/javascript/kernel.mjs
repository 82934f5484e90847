// SPDX-License-Identifier: Apache-2.0
// sbx JavaScript/TypeScript kernel: one persistent global context, driven by sbx-agent over a
// unix socket with the same line protocol as the Python kernel (guest-agent/README.md):
//   agent -> kernel  {"code", "env"?, "genv"?, "lang"?: "typescript"}
//   kernel -> agent  Y (ready) | R<json> (forwarded verbatim) | D (done)
// console output goes to fd 1/2 (pipes, written synchronously on Linux). SIGINT interrupts
// the running cell (vm breakOnSigint for synchronous code, rejection for pending awaits).
import net from 'node:net'
import vm from 'node:vm'
import util from 'node:util'
import path from 'node:path'
import { createRequire, isBuiltin } from 'node:module'
import { pathToFileURL } from 'node:url'
import { rewrite, transpileTs } from './rewrite.mjs'

const sockName = process.env.SBX_KERNEL_SOCKET || ''
delete process.env.SBX_KERNEL_SOCKET
delete process.env.SBX_KERNEL_PRELOAD

let sock
let count = 0
let genv = {}
let requireCwd = null
let interruptCurrent = null

function send(tag, obj) {
  sock.write(obj === undefined ? `${tag}\n` : `${tag}${JSON.stringify(obj)}\n`)
}

function safeInspect(v) {
  try {
    return util.inspect(v, { depth: 4, maxArrayLength: 1000, breakLength: 80 })
  } catch (e) {
    return String(v)
  }
}

function resultLine(bundle, main) {
  const out = { type: 'result' }
  const fields = {
    'text/plain': 'text', 'text/html': 'html', 'text/markdown': 'markdown', 'image/svg+xml': 'svg',
    'image/png': 'png', 'image/jpeg': 'jpeg', 'application/pdf': 'pdf', 'text/latex': 'latex',
    'application/json': 'json', 'application/javascript': 'javascript',
  }
  const extra = {}
  for (const [mime, v] of Object.entries(bundle)) {
    const f = fields[mime]
    if (!f) extra[mime] = v
    else if (f === 'text' && typeof v === 'string' && v.length >= 2 && v[0] === v[v.length - 1] && `'"`.includes(v[0])) out.text = v.slice(1, -1)
    else out[f] = v
  }
  if (Object.keys(extra).length) out.extra = extra
  out.is_main_result = main
  return out
}

function publish(value, main) {
  let bundle = { 'text/plain': safeInspect(value) }
  if (value && typeof value === 'object' && value.__sbx_mime) bundle = value.__sbx_mime
  send('R', resultLine(bundle, main))
}

// ijavascript-style display helpers: $$.html('<b>x</b>'), $$.png(base64), $$.mime({...}).
const mime = (type) => (data) => { publish({ __sbx_mime: { [type]: data } }, false) }
globalThis.$$ = {
  html: mime('text/html'), svg: mime('image/svg+xml'), png: mime('image/png'),
  jpeg: mime('image/jpeg'), markdown: mime('text/markdown'), latex: mime('text/latex'),
  text: mime('text/plain'), json: mime('application/json'),
  mime: (bundle) => publish({ __sbx_mime: bundle }, false),
}

function errorLine(e) {
  if (e instanceof Error || (e && typeof e === 'object' && 'message' in e)) {
    // Keep the message line and the user's frames; the kernel's own frames are noise.
    const lines = String(e.stack || `${e.name}: ${e.message}`).split('\n')
    const tb = [lines[0], ...lines.slice(1).filter((l) => l.includes('<cell-'))].join('\n')
    return { type: 'error', name: String(e.name || 'Error'), value: String(e.message ?? ''), traceback: tb }
  }
  return { type: 'error', name: 'Error', value: safeInspect(e), traceback: '' }
}

function syncRequire() {
  const cwd = process.cwd()
  if (cwd !== requireCwd) {
    globalThis.require = createRequire(path.join(cwd, '__sbx_cell__.js'))
    requireCwd = cwd
  }
}

globalThis.__sbx_import = async function (spec) {
  spec = String(spec)
  if (isBuiltin(spec) || /^(node|file|data):/.test(spec)) return import(spec)
  if (spec.startsWith('.') || spec.startsWith('/')) return import(pathToFileURL(path.resolve(process.cwd(), spec)).href)
  try {
    return await import(pathToFileURL(globalThis.require.resolve(spec)).href)
  } catch (e) {
    if (e.code !== 'MODULE_NOT_FOUND' && e.code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw e
  }
  return import(spec)
}

function applyEnv(req) {
  if (req.genv) {
    for (const k of Object.keys(genv)) if (!(k in req.genv) && process.env[k] === genv[k]) delete process.env[k]
    Object.assign(process.env, req.genv)
    genv = { ...req.genv }
  }
  const saved = {}
  for (const [k, v] of Object.entries(req.env || {})) {
    if (!(k in saved)) saved[k] = process.env[k]
    process.env[k] = v
  }
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}

async function execute(req) {
  count++
  const restore = applyEnv(req)
  try {
    syncRequire()
    let code = String(req.code ?? '')
    if (req.lang === 'typescript') code = transpileTs(code)
    const script = new vm.Script(rewrite(code), { filename: `<cell-${count}>` })
    const pending = script.runInThisContext({ breakOnSigint: true })
    const interrupted = new Promise((_, reject) => {
      interruptCurrent = () => {
        const e = new Error('Script execution was interrupted by `SIGINT`')
        e.code = 'ERR_SCRIPT_EXECUTION_INTERRUPTED'
        reject(e)
      }
    })
    let value = await Promise.race([pending, interrupted])
    if (value && typeof value.then === 'function') value = await Promise.race([value, interrupted])
    if (value !== undefined) publish(value, true)
  } catch (e) {
    send('R', errorLine(e))
  } finally {
    interruptCurrent = null
    restore()
    send('D')
  }
}

// console output through the socket keeps it in order with the results; what subprocesses
// write still goes to the fd 1/2 pipes.
for (const [stream, tag] of [[process.stdout, '1'], [process.stderr, '2']]) {
  stream.write = (chunk, enc, cb) => {
    if (typeof enc === 'function') cb = enc
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')
    if (text && sock && !sock.destroyed) send(tag, text)
    if (cb) process.nextTick(cb)
    return true
  }
}

let queue = Promise.resolve()
process.on('SIGINT', () => { if (interruptCurrent) interruptCurrent() })
process.on('uncaughtException', (e) => { process.stderr.write(`Uncaught ${e && e.stack ? e.stack : e}\n`) })
process.on('unhandledRejection', (e) => { process.stderr.write(`Unhandled rejection: ${e && e.stack ? e.stack : e}\n`) })

sock = net.createConnection({ path: sockName }, () => send('Y'))
sock.setEncoding('utf8')
let buf = ''
sock.on('data', (d) => {
  buf += d
  let nl
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl)
    buf = buf.slice(nl + 1)
    let req
    try { req = JSON.parse(line) } catch { continue }
    queue = queue.then(() => execute(req))
  }
})
sock.on('close', () => process.exit(0))
sock.on('error', () => process.exit(1))
