// Shared helpers for the node suites. The runner (scripts/test-node.sh) starts a real sbxd and
// exports E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY; nothing here mocks the server.
import assert from 'node:assert/strict'
import { before, after } from 'node:test'
import { readFileSync, readdirSync, existsSync } from 'node:fs'

export const API_URL = process.env.E2B_API_URL
export const API_KEY = process.env.E2B_API_KEY
export const STATE = process.env.SBX_TEST_STATE

assert.ok(API_URL && API_KEY, 'E2B_API_URL and E2B_API_KEY must be exported (run via make test)')

// One sandbox for all the tests of a file: create() runs before the first (its result, which may
// be null for none, is handed to set), and the sandbox is killed after the last, whatever
// happened in between.
export function useSandbox(create, set) {
  let s
  before(async () => {
    s = await create()
    set(s)
  })
  after(async () => {
    if (s) await s.kill().catch(() => {})
  })
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// Raw HTTP to the control plane, for what the SDK does not expose (status codes, bodies).
export async function api(method, path, { body, key = API_KEY, headers = {} } = {}) {
  const h = { ...headers }
  if (key !== null) h['X-API-KEY'] = key
  if (body !== undefined) h['Content-Type'] = 'application/json'
  const res = await fetch(API_URL + path, {
    method,
    headers: h,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, headers: res.headers, text, json }
}

// Raw request to a sandbox port through sbxd's router.
export async function sandboxFetch(id, port, path, init = {}) {
  const headers = { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': String(port), ...(init.headers || {}) }
  return fetch(API_URL + path, { ...init, headers })
}

// Connect server-stream request body: one enveloped JSON message.
export function envelope(obj) {
  const json = Buffer.from(JSON.stringify(obj))
  const head = Buffer.alloc(5)
  head.writeUInt32BE(json.length, 1)
  return Buffer.concat([head, json])
}

// Parse a whole Connect stream response body into [{flags, msg}].
export function parseEnvelopes(buf) {
  const out = []
  let off = 0
  while (off + 5 <= buf.length) {
    const flags = buf[off]
    const len = buf.readUInt32BE(off + 1)
    out.push({ flags, msg: JSON.parse(buf.subarray(off + 5, off + 5 + len).toString()) })
    off += 5 + len
  }
  assert.equal(off, buf.length, 'trailing bytes after the last envelope')
  return out
}

// Host-side view of a sandbox, for the cleanup and isolation checks.
export function sandboxDirs() {
  const d = STATE && `${STATE}/sandboxes`
  return d && existsSync(d) ? readdirSync(d) : []
}

export function cgroupExists(id) {
  return existsSync(`/sys/fs/cgroup/unified/sbx/${id}`) ||
    existsSync(`/sys/fs/cgroup/memory/sbx/${id}`) ||
    existsSync(`/sys/fs/cgroup/pids/sbx/${id}`)
}

export function hostPidOf(id) {
  try {
    return JSON.parse(readFileSync(`${STATE}/sandboxes/${id}/sandbox.json`, 'utf8')).pid
  } catch { return undefined }
}

export async function waitFor(pred, ms = 5000, step = 50) {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await pred()) return true
    await sleep(step)
  }
  return false
}
