// MCP through the official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// tests/package.json): its streamable HTTP transport against sbxd's /mcp, and its stdio
// transport against `sbx mcp`. What a model host does: initialize, list the tools, call
// them across steps, end the session.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

const URL_ = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const SBX = join(process.env.SBX_TEST_BUILD || 'build', 'cli/sbx')
const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('')

async function httpClient() {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', URL_), {
    requestInit: { headers: { Authorization: `Bearer ${KEY}` } },
  })
  const client = new Client({ name: 'sbx-compat', version: '1.0.0' })
  await client.connect(transport)
  return { client, transport }
}

test('streamable HTTP: initialize, tools, state across calls, a chart as an image, end of session', async () => {
  const { client, transport } = await httpClient()
  try {
    assert.match(transport.sessionId, /^[0-9a-f]{32}$/)
    assert.equal(client.getServerVersion().name, 'sbx')
    assert.ok(client.getServerCapabilities().tools)
    assert.match(client.getInstructions(), /persistent/)

    const { tools } = await client.listTools()
    assert.deepEqual(tools.map((t) => t.name).sort(),
      ['get_file', 'install_package', 'put_file', 'run_node', 'run_python', 'run_shell', 'upload_file'])

    let r = await client.callTool({ name: 'run_python', arguments: { code: 'import statistics\ndata = [3, 1, 4, 1, 5, 9, 2, 6]' } })
    assert.equal(r.isError, false)
    r = await client.callTool({ name: 'run_python', arguments: { code: 'statistics.median(data)' } })
    assert.equal(text(r), '3.5\n')
    r = await client.callTool({ name: 'run_python', arguments: { code: 'import matplotlib.pyplot as plt\nplt.bar(range(len(data)), data)\nplt.show()' } })
    const img = r.content.find((c) => c.type === 'image')
    assert.equal(img?.mimeType, 'image/png')
    assert.ok(Buffer.from(img.data, 'base64').length > 1000)

    r = await client.callTool({ name: 'run_node', arguments: { code: 'let total = 0\nfor (const v of [1, 2, 3]) total += v' } })
    assert.equal(r.isError, false, text(r))
    r = await client.callTool({ name: 'run_node', arguments: { code: 'total * 10' } })
    assert.equal(text(r), '60\n')

    r = await client.callTool({ name: 'put_file', arguments: { path: 'notes/a.txt', content: 'alpha\nbeta\n' } })
    assert.equal(r.structuredContent.path, '/home/user/notes/a.txt')
    r = await client.callTool({ name: 'run_shell', arguments: { command: 'wc -l < notes/a.txt' } })
    assert.equal(text(r), '2\n')
    r = await client.callTool({ name: 'run_python', arguments: { code: 'open("/home/user/notes/a.txt").read().split()' } })
    assert.equal(text(r), "['alpha', 'beta']\n")
    r = await client.callTool({ name: 'get_file', arguments: { path: '/home/user/notes/a.txt' } })
    assert.equal(text(r), 'alpha\nbeta\n')

    // an error in the code is a result; a bad call is a JSON-RPC error the SDK raises
    r = await client.callTool({ name: 'run_python', arguments: { code: 'int("x")' } })
    assert.equal(r.isError, false)
    assert.match(text(r), /ValueError: invalid literal for int\(\)/)
    await assert.rejects(client.callTool({ name: 'run_python', arguments: {} }), (e) => e.code === -32602)
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (e) => e.code === -32602)
    await client.ping()

    // aborting a call (the host's stop button) sends notifications/cancelled: the kernel is
    // interrupted, so the cell never finishes and the next call does not wait for it
    const ac = new AbortController()
    const slow = client.callTool({ name: 'run_python', arguments: { code: 'import time\ntime.sleep(30)\nslept = True' } }, undefined, { signal: ac.signal })
    await new Promise((r) => setTimeout(r, 1000))
    ac.abort('stop')
    await assert.rejects(slow)
    r = await client.callTool({ name: 'run_python', arguments: { code: '"slept" in globals(), statistics.mean(data)' } })
    assert.equal(text(r), '(False, 3.875)\n')

    // progress keeps a call alive past the request timeout when the host asks for it
    const seen = []
    // (progress every 2 s against a 5 s timeout: slack for a loaded machine)
    r = await client.callTool({ name: 'run_python', arguments: { code: 'import time\ntime.sleep(8)\n"awake"' } }, undefined,
      { timeout: 5000, resetTimeoutOnProgress: true, onprogress: (p) => seen.push(p) })
    assert.equal(text(r), 'awake\n')
    assert.ok(seen.length >= 3, JSON.stringify(seen))
    assert.match(seen[0].message, /running for/)
    // without progress the same host gives up at its timeout (and cancels the call)
    await assert.rejects(client.callTool({ name: 'run_python', arguments: { code: 'import time\ntime.sleep(7)\nlate = True' } }, undefined, { timeout: 1500 }),
      (e) => e.code === -32001)
    r = await client.callTool({ name: 'run_python', arguments: { code: '"late" in globals()' } })
    assert.equal(text(r), 'False\n')

    // ending the session kills its sandbox; the session id is then unknown
    const sid = transport.sessionId
    await transport.terminateSession()
    const res = await fetch(new URL('/mcp', URL_), {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    })
    assert.equal(res.status, 404)
  } finally {
    await client.close()
  }
})

test('two sessions have separate sandboxes and kernels', async () => {
  const a = await httpClient()
  const b = await httpClient()
  try {
    await a.client.callTool({ name: 'run_python', arguments: { code: 'who = "a"' } })
    await a.client.callTool({ name: 'run_shell', arguments: { command: 'echo a > /tmp/mark' } })
    let r = await b.client.callTool({ name: 'run_python', arguments: { code: '"who" in globals()' } })
    assert.equal(text(r), 'False\n')
    r = await b.client.callTool({ name: 'run_shell', arguments: { command: 'cat /tmp/mark' } })
    assert.match(text(r), /No such file/)
    r = await a.client.callTool({ name: 'run_python', arguments: { code: 'who' } })
    assert.equal(text(r), 'a\n')
  } finally {
    await a.transport.terminateSession()
    await b.transport.terminateSession()
    await a.client.close()
    await b.client.close()
  }
})

test('stdio: the SDK drives `sbx mcp`', { skip: existsSync(SBX) ? false : `${SBX} not built` }, async () => {
  const transport = new StdioClientTransport({
    command: SBX,
    args: ['mcp'],
    env: { SBX_URL: URL_, SBX_API_KEY: KEY, PATH: process.env.PATH },
    stderr: 'pipe',
  })
  const client = new Client({ name: 'sbx-compat-stdio', version: '1.0.0' })
  await client.connect(transport)
  try {
    assert.equal(client.getServerVersion().name, 'sbx')
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'run_python'))
    await client.callTool({ name: 'run_python', arguments: { code: 'n = 20' } })
    const r = await client.callTool({ name: 'run_python', arguments: { code: 'n + 22' } })
    assert.equal(text(r), '42\n')
  } finally {
    await client.close() // EOF on stdin: sbx mcp ends the session (DELETE /mcp)
  }
})
