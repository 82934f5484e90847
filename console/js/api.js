// The console's client of sbxd's public APIs, same origin. The API key lives in this tab's
// sessionStorage only (gone when the tab closes) and travels as a header on each call: no
// cookie, so another site cannot make the browser send it (no CSRF surface).
const KEY = 'sbx.apiKey'

export const key = {
  get: () => sessionStorage.getItem(KEY),
  set: (k) => sessionStorage.setItem(KEY, k),
  clear: () => sessionStorage.removeItem(KEY)
}

export class ApiError extends Error {
  constructor (status, message, code) {
    super(message)
    this.status = status
    this.code = code
  }
}

const enc = encodeURIComponent

// Both error shapes: E2B's {code, message} and the native {error: {code, message}}.
async function errorOf (res) {
  let text = ''
  try { text = await res.text() } catch (e) { /* the body is gone: the status speaks */ }
  let msg = text
  let code
  try {
    const j = JSON.parse(text)
    if (j && j.error) { msg = j.error.message; code = j.error.code } else if (j && j.message) msg = j.message
  } catch (e) { /* not JSON */ }
  return new ApiError(res.status, msg || `HTTP ${res.status}`, code)
}

// One call. opts: {body (object → JSON, Blob/ArrayBuffer → raw), native (Bearer), headers,
// raw (return the Response), signal}.
export async function call (method, path, opts = {}) {
  const k = key.get()
  const headers = Object.assign({}, opts.headers)
  if (k) {
    if (opts.native) headers.Authorization = `Bearer ${k}`
    else headers['X-API-KEY'] = k
  }
  let body = opts.body
  if (body !== undefined && !(body instanceof Blob) && !(body instanceof ArrayBuffer) &&
      !(body instanceof Uint8Array) && typeof body !== 'string') {
    body = JSON.stringify(body)
    headers['Content-Type'] = 'application/json'
  }
  const res = await fetch(path, { method, headers, body, signal: opts.signal, cache: 'no-store' })
  if (res.status === 401 && !opts.noSignOut) window.dispatchEvent(new Event('sbx-unauthorized'))
  if (!res.ok) throw await errorOf(res)
  if (opts.raw) return res
  if (res.status === 204) return null
  const text = await res.text()
  return text ? JSON.parse(text) : null
}

const v1 = (method, path, opts = {}) => call(method, path, Object.assign({ native: true }, opts))

// ---- sandboxes (E2B control plane) ----

// Every sandbox the filters match, following E2B's cursor, at most `max`.
export async function listSandboxes ({ state, metadata, max = 1000 } = {}) {
  const out = []
  let next = null
  do {
    const q = new URLSearchParams({ limit: '100' })
    if (state) q.set('state', state)
    if (metadata) q.set('metadata', metadata)
    if (next) q.set('nextToken', next)
    const res = await call('GET', `/v2/sandboxes?${q}`, { raw: true })
    out.push(...(await res.json()))
    next = res.headers.get('X-Next-Token')
  } while (next && out.length < max)
  return { sandboxes: out, more: !!next }
}

export const sandboxes = {
  get: (id) => call('GET', `/sandboxes/${enc(id)}`),
  create: (body) => call('POST', '/sandboxes', { body }),
  kill: (id) => call('DELETE', `/sandboxes/${enc(id)}`),
  pause: (id) => call('POST', `/sandboxes/${enc(id)}/pause`),
  resume: (id, timeout) => call('POST', `/sandboxes/${enc(id)}/connect`, { body: { timeout } }),
  setTimeout: (id, timeout) => call('POST', `/sandboxes/${enc(id)}/timeout`, { body: { timeout } }),
  setNetwork: (id, body) => call('PUT', `/sandboxes/${enc(id)}/network`, { body }),
  // SandboxMetric samples (every 5 s, the last 10 min) at or after `start` (unix s)
  metrics: (id, start) => call('GET', `/sandboxes/${enc(id)}/metrics${start ? `?start=${start}` : ''}`)
}

// One process to its end (native /v1 exec: argv, no shell): {stdout, stderr, exit_code, ...}.
export async function execIn (id, cmd, timeoutMs = 10000) {
  const r = await v1('POST', `/v1/sandboxes/${enc(id)}/exec`, { body: { cmd, timeout_ms: timeoutMs } })
  return r.result
}

// ---- one sandbox's files (native /v1, run as the sandbox's user) ----

export const files = {
  list: (id, path) => v1('GET', `/v1/sandboxes/${enc(id)}/fs/list?path=${enc(path)}`),
  read: (id, path) => v1('GET', `/v1/sandboxes/${enc(id)}/files?path=${enc(path)}`, { raw: true }),
  write: (id, path, blob) => v1('PUT', `/v1/sandboxes/${enc(id)}/files?path=${enc(path)}`,
    { body: blob, headers: { 'Content-Type': 'application/octet-stream' } }),
  mkdir: (id, path) => v1('POST', `/v1/sandboxes/${enc(id)}/fs/mkdir`, { body: { path } }),
  remove: (id, path, recursive) =>
    v1('DELETE', `/v1/sandboxes/${enc(id)}/fs?path=${enc(path)}${recursive ? '&recursive=true' : ''}`)
}

// ---- envd's process service through the sandbox proxy (Connect, JSON) ----

// envd answers 401 for a wrong access token: that is no reason to sign out.
function envdHeaders (id, token, type) {
  return { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token, 'Content-Type': type }
}

export const processes = {
  list: (id, token) => call('POST', '/process.Process/List',
    { body: '{}', headers: envdHeaders(id, token, 'application/json'), noSignOut: true }),
  signal: (id, token, pid, signal) => call('POST', '/process.Process/SendSignal', {
    body: JSON.stringify({ process: { pid }, signal }), headers: envdHeaders(id, token, 'application/json'), noSignOut: true
  }),
  // A streaming Connect call: onEvent gets each event object ({start}, {data}, {end}, {keepalive})
  // until the stream ends or signal aborts it.
  async follow (id, token, pid, onEvent, signal) {
    const msg = new TextEncoder().encode(JSON.stringify({ process: { pid } }))
    const env = new Uint8Array(5 + msg.length)
    new DataView(env.buffer).setUint32(1, msg.length)
    env.set(msg, 5)
    const res = await call('POST', '/process.Process/Connect', {
      body: env, raw: true, signal, noSignOut: true, headers: envdHeaders(id, token, 'application/connect+json')
    })
    const reader = res.body.getReader()
    let buf = new Uint8Array(0)
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      const joined = new Uint8Array(buf.length + value.length)
      joined.set(buf)
      joined.set(value, buf.length)
      buf = joined
      while (buf.length >= 5) {
        const flags = buf[0]
        const len = new DataView(buf.buffer, buf.byteOffset).getUint32(1)
        if (buf.length < 5 + len) break
        const obj = JSON.parse(new TextDecoder().decode(buf.subarray(5, 5 + len)) || '{}')
        buf = buf.slice(5 + len)
        if (flags & 2) { // end of stream: an error, or nothing
          if (obj.error) throw new ApiError(500, obj.error.message || obj.error.code, obj.error.code)
          return
        }
        if (obj.event) onEvent(obj.event)
      }
    }
  }
}

// ---- templates, volumes, images ----

export const templates = {
  all: () => v1('GET', '/v1/templates'),
  built: () => call('GET', '/templates'),
  get: (id) => call('GET', `/templates/${enc(id)}`),
  buildStatus: (id, build, offset) =>
    call('GET', `/templates/${enc(id)}/builds/${enc(build)}/status?logsOffset=${offset || 0}`),
  remove: (id) => call('DELETE', `/templates/${enc(id)}`)
}

export const volumes = {
  list: () => call('GET', '/volumes'),
  get: (id) => call('GET', `/volumes/${enc(id)}`),
  create: (name, sizeMB) => call('POST', '/volumes', { body: sizeMB ? { name, sizeMB } : { name } }),
  remove: (id) => call('DELETE', `/volumes/${enc(id)}`),
  // the content API takes the API key as a Bearer token too
  dir: (id, path) => v1('GET', `/volumecontent/${enc(id)}/dir?path=${enc(path)}`),
  read: (id, path) => v1('GET', `/volumecontent/${enc(id)}/file?path=${enc(path)}`, { raw: true }),
  removePath: (id, path) => v1('DELETE', `/volumecontent/${enc(id)}/path?path=${enc(path)}`)
}

export const images = {
  list: () => v1('GET', '/v1/images'),
  remove: (id) => v1('DELETE', `/v1/images/${enc(id)}`),
  pull: (body) => v1('POST', '/v1/images/pull', { body }),
  // Whether this sbxd pulls from registries: the route exists when a bad body gets a 400 (not
  // the 404 or 405 of a path no row takes).
  async canPull () {
    try {
      await v1('POST', '/v1/images/pull', { body: {}, noSignOut: true })
      return true
    } catch (e) {
      return e.status !== 404 && e.status !== 405
    }
  }
}

// The terminal's WebSocket URL: browsers cannot set headers on a WebSocket, so the key goes in
// the query (?token=), over wss:// when the console is served over HTTPS.
// session: the id the terminal sent, to take its shell over after a lost connection.
export function terminalUrl (id, cols, rows, session) {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:'
  const q = new URLSearchParams({ token: key.get() || '', cols: String(cols), rows: String(rows) })
  if (session) q.set('session', session)
  return `${proto}//${location.host}/v1/sandboxes/${enc(id)}/terminal?${q}`
}
