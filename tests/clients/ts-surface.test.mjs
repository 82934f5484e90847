// The TypeScript client against the OpenAPI document and its own declarations: every /v1
// operation of the spec is in OPERATIONS with its method, path and retry rule and is called by
// a method; the published .d.ts type-checks the quick start and rejects misuse.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { TOP, PKG, client } from './ts-lib.mjs'

function specOperations() {
  const json = execFileSync('/usr/bin/python3', ['-c',
    'import json,sys,yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)',
    join(TOP, 'api/openapi/sbx-v1.yaml')])
  const doc = JSON.parse(json)
  const ops = {}
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!path.startsWith('/v1/')) continue
    for (const [m, op] of Object.entries(item)) {
      if (['get', 'post', 'put', 'delete', 'patch'].includes(m)) ops[op.operationId] = [m.toUpperCase(), path, Boolean(op['x-sbx-idempotent'])]
    }
  }
  return ops
}

test('every /v1 operation of the OpenAPI document is implemented, with its retry rule', () => {
  const spec = specOperations()
  const ours = client.OPERATIONS
  const missing = Object.keys(spec).filter((k) => !(k in ours))
  assert.deepEqual(missing, [], `operations of the spec the client lacks: ${missing}`)
  assert.deepEqual(Object.keys(ours).filter((k) => !(k in spec)), [], 'client operations not in the spec')
  for (const [op, want] of Object.entries(spec)) assert.deepEqual([...ours[op]], want, op)
})

test('every operation is built by a call and that call is used by a method', () => {
  const calls = readFileSync(join(PKG, 'src/calls.ts'), 'utf8')
  const users = readdirSync(join(PKG, 'src')).filter((f) => f !== 'calls.ts')
    .map((f) => readFileSync(join(PKG, 'src', f), 'utf8')).join('\n')
  for (const op of Object.keys(client.OPERATIONS)) {
    const m = new RegExp(`export const (\\w+) = \\([^]*?op: '${op}'`).exec(calls)
    assert.ok(m, `no builder for ${op}`)
    const builder = calls.slice(0, m.index + m[0].length).match(/export const (\w+) = /g).at(-1).slice(13, -3)
    assert.match(users, new RegExp(`(C\\.|\\b)${builder}\\(`), `${op} (${builder}) is not called by any method`)
  }
})

test('the published declarations type-check the quick start and reject misuse', () => {
  const out = join(TOP, 'tests/clients/ts-types.ts')
  try {
    execFileSync('tsc', ['--noEmit', '--strict', '--target', 'ES2020', '--module', 'ES2020', '--moduleResolution', 'node',
      '--lib', 'ES2020,DOM,DOM.Iterable', '--skipLibCheck', out], { encoding: 'utf8' })
  } catch (e) {
    assert.fail(`tsc: ${e.stdout}${e.stderr}`)
  }
  // the declarations are shipped next to the code, with the methods users call
  const dts = readFileSync(join(PKG, 'dist/sandbox.d.ts'), 'utf8')
  for (const m of ['create', 'connect', 'exec', 'sh', 'runCode', 'terminal', 'pause', 'resume', 'watch', 'writeStdin', 'wait', 'pull', 'pullStream', 'grow']) {
    assert.match(dts, new RegExp(`\\b${m}\\(`), m)
  }
  const pkg = JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8'))
  assert.equal(pkg.type, 'module')
  assert.deepEqual(pkg.dependencies ?? {}, {}, 'no runtime dependencies')
})
