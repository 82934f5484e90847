// The web console (/ui/) driven in headless Chromium against the real sbxd of the run, with the
// unmodified SDK on the other side: what a user does in the browser must be what the SDK sees.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { Sandbox, Template } from 'e2b'
import { launch, newPage, signIn, terminalText, blipRelay } from './browser.mjs'

const BASE = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const HOSTILE = '<img src=x onerror=alert(1)>'
let browser, page, sbx

before(async () => {
  browser = await launch()
  page = await newPage(browser)
})
after(async () => {
  await browser?.close()
  if (sbx) await sbx.kill().catch(() => {})
})

const until = async (fn, what, ms = 15000) => {
  const end = Date.now() + ms
  let last
  while (Date.now() < end) {
    last = await fn()
    if (last) return last
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`)
}

test('static files: strict CSP, content types, ETags, nothing outside the console', async () => {
  const r = await fetch(`${BASE}/ui/`)
  assert.equal(r.status, 200)
  assert.match(r.headers.get('content-type'), /^text\/html/)
  const csp = r.headers.get('content-security-policy')
  assert.match(csp, /default-src 'none'/)
  assert.match(csp, /script-src 'self'(;|$)/)
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/)
  assert.match(csp, /frame-ancestors 'none'/)
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff')
  const html = await r.text()
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script in index.html')
  assert.doesNotMatch(html, /https?:\/\//, 'nothing loaded from another origin')

  const js = await fetch(`${BASE}/ui/js/app.js`)
  assert.match(js.headers.get('content-type'), /^text\/javascript/)
  const etag = js.headers.get('etag')
  assert.match(etag, /^"[0-9a-f]{16}"$/)
  const again = await fetch(`${BASE}/ui/js/app.js`, { headers: { 'If-None-Match': etag } })
  assert.equal(again.status, 304)
  assert.equal(again.headers.get('etag'), etag)
  const xterm = await fetch(`${BASE}/ui/vendor/xterm.js`)
  assert.equal(xterm.status, 200)
  assert.match(await xterm.text(), /Terminal/)
  assert.match((await fetch(`${BASE}/ui/vendor/xterm.css`)).headers.get('content-type'), /^text\/css/)
  const head = await fetch(`${BASE}/ui/console.css`, { method: 'HEAD' })
  assert.equal(head.status, 200)
  assert.ok(Number(head.headers.get('content-length')) > 0)

  // the root and /ui lead to the console
  const root = await fetch(`${BASE}/`, { redirect: 'manual' })
  assert.equal(root.status, 302)
  assert.equal(root.headers.get('location'), '/ui/')
  // nothing but the console's own files: the state dir's keys, other files, odd paths
  for (const p of ['/ui/../keys', '/ui/%2e%2e/keys', '/ui/..%2fkeys', '/ui/js/../../keys', '/ui/.hidden',
    '/ui/README.md', '/ui/js/', '/ui//etc/passwd', '/ui/vendor/xterm-entry.js']) {
    const res = await fetch(`${BASE}${p}`)
    assert.equal(res.status, 404, p)
    assert.doesNotMatch(await res.text(), /e2b_[0-9a-f]{40}/, p)
  }
})

test('sign-in: a wrong key is refused, the right one opens the console', async () => {
  await page.goto(`${BASE}/ui/`)
  await page.fill('#apikey', `e2b_${'0'.repeat(40)}`)
  await page.click('form.signin button[type=submit]')
  await page.waitForSelector('#signin-error:text("not one of this server")')
  assert.equal(await page.evaluate(() => sessionStorage.length), 0)
  await signIn(page, BASE, KEY)
  // kept in the tab's session storage, no cookie
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sbx.apiKey')), KEY)
  assert.equal((await page.context().cookies()).length, 0)
  assert.equal(await page.evaluate(() => document.cookie), '')
})

test('a sandbox created through the SDK appears in the live list, metadata as text', async () => {
  sbx = await Sandbox.create('base', { metadata: { owner: 'console-test', note: '<b>bold</b>&amp;' }, timeoutMs: 600_000 })
  const row = page.locator(`tr[data-id="${sbx.sandboxId}"]`)
  await row.waitFor({ timeout: 10000 })
  assert.equal(await row.getAttribute('data-state'), 'running')
  const text = await row.textContent()
  assert.match(text, /base/)
  assert.ok(text.includes('note=<b>bold</b>&amp;'), text)
  assert.equal(await row.locator('b').count(), 0)
  // the text filter narrows the list to it
  await page.fill('#f-text', 'owner=console-test')
  await until(async () => (await page.locator('tbody tr[data-id]').count()) === 1, 'the filtered list')
  // its CPU and memory come in from the metrics within a sampler period or two
  await until(async () => /%/.test(await row.locator('td').nth(5).textContent()), 'the CPU column', 20000)
  await page.fill('#f-text', '')
})

test('terminal: type echo $((6*7)) and read 42 on the screen', async () => {
  await page.click(`tr[data-id="${sbx.sandboxId}"] a`)
  await page.waitForSelector('[role=tab]:text-is("Overview")')
  await page.click('[role=tab]:text-is("Terminal")')
  await page.waitForSelector('.term-status:text-is("Connected.")')
  await page.click('.term-wrap')
  await page.keyboard.type('echo $((6*7))\n')
  await until(async () => /^42\s*$/m.test(await terminalText(page)), '42 on the terminal')

  // resize follows the window: the shell sees the new size
  await page.setViewportSize({ width: 900, height: 700 })
  await page.keyboard.type('stty size\n')
  const size = await until(async () => (await terminalText(page)).match(/^(\d+) (\d+)\s*$/m), 'stty size')
  assert.ok(Number(size[2]) < 110, `cols after the resize: ${size[2]}`)
  await page.setViewportSize({ width: 1280, height: 860 })
})

test('terminal: a network blip between the browser and sbxd; the same shell comes back', async () => {
  // A TCP relay stands for the network: cutting its connections drops the WebSocket with no
  // close frame, as a blip does.
  const relay = await blipRelay(Number(new URL(BASE).port))
  const via = relay.url
  const p2 = await newPage(browser)
  try {
    await signIn(p2, via, KEY)
    await p2.goto(`${via}/ui/#/sandboxes/${sbx.sandboxId}/terminal`)
    await p2.waitForSelector('.term-status:text-is("Connected.")')
    await p2.click('.term-wrap')
    await p2.keyboard.type('export MARK=same-$$; echo marked-$((2*3))\n')
    await until(async () => /^marked-6\s*$/m.test(await terminalText(p2)), 'marked')
    // the network stays down a few seconds: connections are refused, then it comes back
    const relayPort = relay.server.address().port
    await new Promise((r) => { relay.server.close(r); relay.cut() })
    await p2.waitForSelector('.term-status:text("reconnecting")')
    await new Promise((r) => setTimeout(r, 2500))
    await new Promise((r) => relay.server.listen(relayPort, '127.0.0.1', r))
    await p2.waitForSelector('.term-status:text-is("Reconnected to the same shell.")', { timeout: 15000 })
    await until(async () => /^marked-6\s*$/m.test(await terminalText(p2)), 'the screen redrawn')
    await p2.click('.term-wrap')
    await p2.keyboard.type('echo "$MARK" = same-$$\n')
    await until(async () => /^(same-\d+) = \1\s*$/m.test(await terminalText(p2)), 'the same shell after the blip')
    assert.deepEqual(p2.problems.filter((x) => !/WebSocket/.test(x)), [])
  } finally {
    await p2.context().close()
    relay.server.close()
    relay.cut()
  }
})

test('files: upload, find it with the SDK, download it back; hostile names are text', async () => {
  const bytes = randomBytes(300 * 1024)
  await sbx.files.write(`/home/user/${HOSTILE}`, 'hostile\n')
  await page.click('[role=tab]:text-is("Files")')
  await page.setInputFiles('#files-upload', { name: 'upload.bin', mimeType: 'application/octet-stream', buffer: bytes })
  await page.waitForSelector('tr[data-name="upload.bin"]')
  const got = await sbx.files.read('/home/user/upload.bin', { format: 'bytes' })
  assert.ok(Buffer.from(got).equals(bytes), 'the SDK reads what the browser uploaded')

  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('button[aria-label="Download upload.bin"]')])
  assert.equal(dl.suggestedFilename(), 'upload.bin')
  assert.ok((await readFile(await dl.path())).equals(bytes), 'the download is the same bytes')

  // the hostile name is shown as the text it is: no <img> made, no alert
  const hostile = page.locator('tbody tr').filter({ hasText: HOSTILE })
  assert.equal(await hostile.count(), 1)
  assert.equal(await page.locator('.table-wrap img').count(), 0)
  await page.click(`button[aria-label="Open ${HOSTILE}"]`)
  await page.waitForSelector('pre.viewer:text("hostile")')
  assert.equal(await page.locator('h2.mono').first().textContent(), `/home/user/${HOSTILE}`)

  // delete from the console: gone for the SDK
  await page.click('button[aria-label="Delete upload.bin"]')
  await page.click('dialog button[type=submit]')
  await page.waitForSelector('tr[data-name="upload.bin"]', { state: 'detached' })
  assert.equal(await sbx.files.exists('/home/user/upload.bin'), false)
})

test('processes: an SDK command is listed, its output followed, then killed', async () => {
  const cmd = await sbx.commands.run('for i in $(seq 1 1000); do echo "tick-$i <i>x</i>"; sleep 0.2; done', { background: true })
  await page.click('[role=tab]:text-is("Processes")')
  const row = page.locator(`tr[data-pid="${cmd.pid}"]`)
  await row.waitFor()
  assert.match(await row.textContent(), /tick-\$i <i>x<\/i>/)
  assert.equal(await row.locator('i').count(), 0)
  await row.locator('button:text-is("Output")').click()
  await until(async () => /tick-3 <i>x<\/i>/.test(await page.locator('pre.logs').textContent()), 'followed output')
  await row.locator('button:text-is("Kill")').click()
  await page.click('dialog button[type=submit]')
  await row.waitFor({ state: 'detached' })
  const r = await cmd.wait().catch((e) => e)
  assert.notEqual(r.exitCode, 0)
})

test('overview: CPU and memory charts from the sampler, a listening port with its URL', async () => {
  await sbx.commands.run('python3 -m http.server 8123 >/dev/null 2>&1', { background: true })
  await page.click('[role=tab]:text-is("Overview")')
  await page.waitForSelector('figure.chart svg polyline')
  assert.equal(await page.locator('figure.chart').count(), 2)
  const link = page.locator(`a[href*="8123-${sbx.sandboxId}."]`)
  await link.waitFor({ timeout: 20000 })
  assert.equal(await link.getAttribute('target'), '_blank')
})

test('kill from the list: the row leaves and the SDK sees it gone', async () => {
  await page.click('a:text-is("← Sandboxes")')
  const row = page.locator(`tr[data-id="${sbx.sandboxId}"]`)
  await row.waitFor()
  await row.locator('button:text-is("Kill")').click()
  await page.click('dialog button[type=submit]')
  await row.waitFor({ state: 'detached', timeout: 10000 })
  assert.equal(await sbx.isRunning(), false)
  sbx = null
})

test('templates: a build through the SDK, its log followed live, then deleted', async () => {
  const name = 'console-tpl'
  const tpl = Template().fromTemplate('base').runCmd('sleep 1; echo console-build-$((6*7))')
  const building = Template.build(tpl, name)
  await page.click('nav a:text-is("Templates")')
  await page.waitForSelector('tbody tr[data-name="base"]')
  await until(async () => (await fetch(`${BASE}/templates/aliases/${name}`, { headers: { 'X-API-KEY': KEY } })).ok, 'the build record')
  await page.goto(`${BASE}/ui/#/templates/${name}`)
  await page.waitForSelector('pre.logs:text("console-build-42")', { timeout: 60000 })
  await building
  await page.waitForSelector('tbody .badge.ready', { timeout: 10000 })
  await page.waitForSelector('.logs-state:text("ready")', { timeout: 10000 })
  await page.click('a:text-is("← Templates")')
  const row = page.locator(`tbody tr[data-name="${name}"]`)
  await row.waitFor()
  assert.match(await row.textContent(), /built/)
  await row.locator('button:text-is("Delete")').click()
  await page.click('dialog button[type=submit]')
  await row.waitFor({ state: 'detached' })
  const left = await fetch(`${BASE}/v1/templates`, { headers: { Authorization: `Bearer ${KEY}` } }).then((r) => r.json())
  assert.ok(!left.templates.some((t) => t.name === name))
})

test('keyboard and screen readers: every control has a name, focus is visible', async () => {
  for (const hash of ['#/sandboxes', '#/templates', '#/volumes', '#/images']) {
    await page.goto(`${BASE}/ui/${hash}`)
    await page.waitForSelector('main h1')
    const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, a[href]')]
      .filter((el) => !el.closest('[hidden]') && el.offsetParent !== null)
      .filter((el) => {
        const label = el.getAttribute('aria-label') || el.textContent.trim() || el.getAttribute('title') ||
          (el.id && document.querySelector(`label[for="${el.id}"]`)?.textContent.trim()) || el.closest('label')?.textContent.trim()
        return !label
      }).map((el) => el.outerHTML.slice(0, 80)))
    assert.deepEqual(unnamed, [], hash)
  }
  // Tab reaches the controls, and the focused one shows an outline
  await page.goto(`${BASE}/ui/#/sandboxes`)
  await page.waitForSelector('#create')
  await page.keyboard.press('Tab')
  await page.keyboard.press('Tab')
  const focus = await page.evaluate(() => {
    const el = document.activeElement
    const cs = getComputedStyle(el)
    return { tag: el.tagName, outline: cs.outlineStyle, width: parseFloat(cs.outlineWidth) }
  })
  assert.notEqual(focus.tag, 'BODY')
  assert.notEqual(focus.outline, 'none', JSON.stringify(focus))
  assert.ok(focus.width >= 2, JSON.stringify(focus))
})

test('sign-out forgets the key', async () => {
  await page.click('#signout')
  await page.waitForSelector('#apikey')
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sbx.apiKey')), null)
  await page.reload()
  await page.waitForSelector('#apikey')
})

test('nothing went wrong in the page: no script error, no CSP refusal, no dialog', () => {
  assert.deepEqual(page.problems, [])
})
