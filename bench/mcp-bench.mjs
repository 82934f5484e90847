// MCP tool-call figures (issue 6). Starts its own sbxd (SBX_BUILD, default build/) twice:
// without a pool, then with a warm pool of code-interpreter-v1 sandboxes (the MCP default
// template). Over plain HTTP POSTs to /mcp, as an MCP client sends them, it prints:
//  - a session's first call (run_python "1+1": sandbox create + execution), S sessions;
//  - warm calls on one session, N each: run_python "1+1", run_node "1+1", run_shell "true";
//  - run_python with state: "x += 1" (a variable kept between calls).
// Nothing here asserts a time.
//   SBX_BUILD=build-lead node bench/mcp-bench.mjs [N] [S]
import { startSbxd, fmt } from './lifecycle-lib.mjs'

const N = Number(process.argv[2] || 300)
const S = Number(process.argv[3] || 10)

function client(d) {
  let sid
  let id = 1
  async function rpc(method, params) {
    const headers = { Authorization: `Bearer ${d.key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }
    if (sid) headers['Mcp-Session-Id'] = sid
    const res = await fetch(`${d.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }) })
    const json = await res.json()
    if (method === 'initialize') sid = res.headers.get('mcp-session-id')
    if (!json.result || json.result.isError) throw new Error(`${method}: ${JSON.stringify(json)}`)
    return json.result
  }
  return {
    init: () => rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } }),
    call: (name, args) => rpc('tools/call', { name, arguments: args }),
    end: () => fetch(`${d.url}/mcp`, { method: 'DELETE', headers: { Authorization: `Bearer ${d.key}`, 'Mcp-Session-Id': sid } }),
  }
}

async function timed(n, f) {
  const xs = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await f(i)
    xs.push(performance.now() - t)
  }
  return xs
}

async function firstCalls(d, label, pauseMs = 0) {
  const xs = []
  for (let i = 0; i < S; i++) {
    await new Promise((r) => setTimeout(r, pauseMs))
    const c = client(d)
    await c.init()
    const t = performance.now()
    await c.call('run_python', { code: '1+1' })
    xs.push(performance.now() - t)
    await c.end()
  }
  console.log(`first call of a session (${label}), n=${S}: ${fmt(xs)}`)
}

async function main() {
  let d = await startSbxd(['--pool-size', '0'])
  try {
    await firstCalls(d, 'cold create')
    const c = client(d)
    await c.init()
    await c.call('run_python', { code: 'x = 0' })
    await c.call('run_node', { code: '1' })
    console.log(`run_python "1+1" warm, n=${N}: ${fmt(await timed(N, () => c.call('run_python', { code: '1+1' })))}`)
    console.log(`run_python "x += 1; x" warm, n=${N}: ${fmt(await timed(N, () => c.call('run_python', { code: 'x += 1\nx' })))}`)
    console.log(`run_node "1+1" warm, n=${N}: ${fmt(await timed(N, () => c.call('run_node', { code: '1+1' })))}`)
    console.log(`run_shell "true", n=${N}: ${fmt(await timed(N, () => c.call('run_shell', { command: 'true' })))}`)
    await c.end()
  } finally {
    await d.stop()
  }
  d = await startSbxd(['--pool-size', '2', '--pool-templates', 'code-interpreter-v1'])
  try {
    await firstCalls(d, 'from the warm pool, 2 s between sessions for the refill', 2000)
  } finally {
    await d.stop()
  }
}

await main()
