// Headless Chromium (Debian's /usr/bin/chromium) driven over the DevTools protocol by
// playwright-core (pinned in tests/package.json; it downloads no browser). The flags keep it off
// the network: without them Chromium reaches for Google's services and stalls on a closed one.
import { chromium } from 'playwright-core'
import { existsSync } from 'node:fs'
import net from 'node:net'

export const CHROMIUM = process.env.SBX_CHROMIUM || '/usr/bin/chromium'

export async function launch () {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (scripts/deps.txt)`)
  // playwright gives each launch a fresh profile (--user-data-dir in a new temp dir)
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
}

// A page that records what must never happen: script errors, CSP refusals, alert()s.
export async function newPage (browser, opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true, ...opts })
  const page = await ctx.newPage()
  const problems = []
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console error: ${m.text()}`)
  })
  page.on('dialog', (d) => { problems.push(`dialog: ${d.type()} ${d.message()}`); d.dismiss() })
  page.problems = problems
  return page
}

export async function signIn (page, base, key) {
  await page.goto(`${base}/ui/`)
  await page.fill('#apikey', key)
  await page.click('form.signin button[type=submit]')
  await page.waitForSelector('h1:text-is("Sandboxes")')
}

// The terminal's text as a screen reader gets it (xterm's accessibility tree).
export function terminalText (page) {
  return page.evaluate(() => {
    const t = document.querySelector('.xterm-accessibility-tree')
    return t ? [...t.children].map((r) => r.textContent).join('\n') : ''
  })
}

// A TCP relay to sbxd on 127.0.0.1:port that stands for the network between the browser and
// sbxd: cut() drops every connection through it with no close frame, as a blip does. url is
// the console's base through the relay; server is the listener (close it to refuse new ones).
export async function blipRelay (port) {
  const conns = new Set()
  const server = net.createServer((c) => {
    const u = net.connect(port, '127.0.0.1')
    conns.add(c).add(u)
    c.pipe(u).on('error', () => {})
    u.pipe(c).on('error', () => {})
    const gone = () => { c.destroy(); u.destroy(); conns.delete(c); conns.delete(u) }
    c.on('close', gone).on('error', gone)
    u.on('close', gone).on('error', gone)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const cut = () => { for (const c of conns) c.destroy() }
  return { server, cut, url: `http://127.0.0.1:${server.address().port}` }
}
