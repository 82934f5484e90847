// Helpers for the native API suites (v1-*, cli-*, mcp-*): Bearer auth with $E2B_API_KEY
// against the sbxd that scripts/test-node.sh started.
import assert from 'node:assert/strict'

export const URL_ = process.env.E2B_API_URL
export const KEY = process.env.E2B_API_KEY
assert.ok(URL_ && KEY, 'E2B_API_URL and E2B_API_KEY must be exported (run via scripts/test-node.sh)')

export async function v1(method, path, { body, raw, key = KEY, headers = {} } = {}) {
  const h = { ...headers }
  if (key !== null) h.Authorization = `Bearer ${key}`
  if (body !== undefined) h['Content-Type'] = 'application/json'
  const res = await fetch(URL_ + path, {
    method,
    headers: h,
    body: raw !== undefined ? raw : body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  const buf = Buffer.from(await res.arrayBuffer())
  const text = buf.toString()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, headers: res.headers, text, buf, json }
}

// Every error has exactly one shape.
export function assertError(r, status, code) {
  assert.equal(r.status, status, r.text)
  assert.equal(typeof r.json?.error?.message, 'string', r.text)
  assert.ok(r.json.error.message.length > 0)
  if (code) assert.equal(r.json.error.code, code, r.text)
}

export async function createSandbox(body = {}) {
  const r = await v1('POST', '/v1/sandboxes', { body })
  assert.equal(r.status, 201, r.text)
  return r.json.id
}

export async function killSandbox(id) {
  await v1('DELETE', `/v1/sandboxes/${id}`)
}
