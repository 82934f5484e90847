// The console behind sbxd --tls-cert: served over https://, its terminal over wss://, and the
// buttons a user drives by hand: create from a template, pause, resume, set the timeout, kill.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, existsSync, rmdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSbxd, realTemplates, REAL } from '../integration/sbxd.mjs'
import { launch, newPage, signIn, terminalText } from './browser.mjs'

let d, dir, browser, page, base
const CGROUP = `sbx-console-tls-${process.pid}` // a cgroup parent of its own (server/README.md)

function makeCert (at) {
  const ossl = (...a) => execFileSync('openssl', a, { cwd: at, stdio: ['ignore', 'ignore', 'pipe'] })
  ossl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '2', '-subj', '/CN=sbx.localhost',
    '-addext', 'subjectAltName=DNS:sbx.localhost,DNS:*.sbx.localhost,IP:127.0.0.1')
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sbx-console-tls-'))
  makeCert(dir)
  d = await startSbxd({
    jailer: REAL.jailer, agent: REAL.agent, prepare: realTemplates,
    args: ['--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem'), '--cgroup-parent', CGROUP]
  })
  base = `https://127.0.0.1:${d.port}`
  browser = await launch()
  // the test's self-signed certificate: what an operator's own CA does for real users
  page = await newPage(browser, { ignoreHTTPSErrors: true })
})
after(async () => {
  await browser?.close()
  if (d) {
    // stop() cleans up over http://: kill what the test left through the console's own API
    const ids = await page?.evaluate(async () => {
      const r = await fetch('/v2/sandboxes', { headers: { 'X-API-KEY': sessionStorage.getItem('sbx.apiKey') } })
      return r.ok ? (await r.json()).map((s) => s.sandboxID) : []
    }).catch(() => [])
    for (const id of ids || []) {
      await page.evaluate((i) => fetch(`/sandboxes/${i}`, { method: 'DELETE', headers: { 'X-API-KEY': sessionStorage.getItem('sbx.apiKey') } }), id).catch(() => {})
    }
    await d.stop()
  }
  if (dir) rmSync(dir, { recursive: true, force: true })
  // the cgroup parent, in every hierarchy, once the kernel is done with the sandboxes below it
  const left = () => readdirSync('/sys/fs/cgroup').map((h) => `/sys/fs/cgroup/${h}/${CGROUP}`).filter((c) => existsSync(c))
  for (let k = 0; k < 30 && left().length; k++) {
    for (const c of left()) try { rmdirSync(c) } catch {}
    if (left().length) await new Promise((r) => setTimeout(r, 100))
  }
})

test('https: sign in, create from a template, terminal over wss, pause, resume, timeout, kill', async () => {
  await signIn(page, base, d.key)
  assert.equal(new URL(page.url()).protocol, 'https:')
  const headers = await page.evaluate(async () => Object.fromEntries((await fetch('/ui/')).headers))
  assert.equal(headers['cross-origin-opener-policy'], 'same-origin')
  assert.match(headers['content-security-policy'], /connect-src 'self'/)

  await page.click('#create')
  await page.fill('dialog input[list="template-names"]', 'base')
  await page.fill('dialog textarea', 'made-by=console\nteam=<script>x</script>')
  await page.click('dialog button[type=submit]')
  const row = page.locator('tbody tr[data-id]')
  await row.first().waitFor({ timeout: 20000 })
  const id = await row.first().getAttribute('data-id')
  assert.ok((await row.first().textContent()).includes('team=<script>x</script>'))

  await page.click(`tr[data-id="${id}"] a`)
  await page.click('[role=tab]:text-is("Terminal")')
  await page.waitForSelector('.term-status:text-is("Connected.")')
  await page.click('.term-wrap')
  await page.keyboard.type('echo tls-$((40+2))\n')
  await page.waitForFunction(() => /^tls-42\s*$/m.test([...document.querySelectorAll('.xterm-accessibility-tree > *')].map((r) => r.textContent).join('\n')))

  // the shell exits: the console says so and offers a new session rather than reconnecting
  await page.keyboard.type('exit 3\n')
  await page.waitForSelector('.term-status:text("exited with code 3")')
  await page.click('button:text-is("New session")')
  await page.waitForSelector('.term-status:text-is("Connected.")')
  await page.click('.term-wrap')
  await page.keyboard.type('echo again-$((1+1))\n')
  await page.waitForFunction(() => /^again-2\s*$/m.test([...document.querySelectorAll('.xterm-accessibility-tree > *')].map((r) => r.textContent).join('\n')))
  assert.match(await terminalText(page), /again-2/)

  // the API as the page reaches it (https, same origin, the signed-in key)
  const state = () => page.evaluate(async (i) => {
    const r = await fetch(`/sandboxes/${i}`, { headers: { 'X-API-KEY': sessionStorage.getItem('sbx.apiKey') } })
    return r.ok ? (await r.json()) : { status: r.status }
  }, id)

  await page.click('main button:text-is("Pause")')
  await page.waitForSelector('main .badge.paused')
  assert.equal((await state()).state, 'paused')
  await page.click('main button:text-is("Resume")')
  await page.waitForSelector('main .badge.running')
  assert.equal((await state()).state, 'running')

  await page.click('main button:text-is("Set timeout")')
  await page.fill('dialog input[type=number]', '4000')
  await page.click('dialog button[type=submit]')
  await page.waitForSelector('.toast:text("timeout: done")')
  const left = (Date.parse((await state()).endAt) - Date.now()) / 1000
  assert.ok(left > 3900 && left <= 4000, `ends in ${left} s`)

  await page.click('main button.danger:text-is("Kill")')
  await page.click('dialog button[type=submit]')
  await page.waitForSelector('h1:text-is("Sandboxes")')
  assert.equal((await state()).status, 404)
  assert.deepEqual(page.problems, [])
})
