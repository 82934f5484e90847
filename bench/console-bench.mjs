// The web console in headless Chromium against a running sbxd: how long until a signed-in
// user sees the sandbox list, how long a keystroke takes to come back through the terminal,
// and how long a lost terminal connection takes to get its shell back. Prints figures only.
//   E2B_API_URL=http://127.0.0.1:3000 E2B_API_KEY=e2b_… node bench/console-bench.mjs [N]
// (after `npm ci` in tests/, whose node_modules hold playwright-core and e2b)
import { launch, newPage, signIn, terminalText, blipRelay } from '../tests/console/browser.mjs'
const { Sandbox } = await import('../tests/node_modules/e2b/dist/index.mjs')

const BASE = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const N = Number(process.argv[2] || 20)
const pct = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))].toFixed(1)
const waitText = async (page, re, ms = 30_000) => {
  const end = Date.now() + ms
  while (!re.test(await terminalText(page))) {
    if (Date.now() > end) throw new Error(`${re} not on the terminal after ${ms} ms`)
    await new Promise((r) => setTimeout(r, 2))
  }
}

const sbx = await Sandbox.create('base', { timeoutMs: 600_000 })
const browser = await launch()
try {
  // 1. a fresh tab: sign-in page → list with the sandbox's row
  const loads = []
  for (let i = 0; i < Math.min(N, 10); i++) {
    const ctx = await browser.newContext()
    const page = await ctx.newPage()
    const t0 = performance.now()
    await signIn(page, BASE, KEY)
    await page.waitForSelector(`tr[data-id="${sbx.sandboxId}"]`)
    loads.push(performance.now() - t0)
    await ctx.close()
  }
  console.log(`sign-in to the list shown (fresh tab, n=${loads.length}): p50 ${pct(loads, 0.5)} ms, max ${pct(loads, 1)} ms`)

  // 2. keystroke echo through the terminal (xterm → WebSocket → agent pty → back → screen)
  const page = await newPage(browser)
  await signIn(page, BASE, KEY)
  await page.goto(`${BASE}/ui/#/sandboxes/${sbx.sandboxId}/terminal`)
  await page.waitForSelector('.term-status:text-is("Connected.")')
  await page.click('.term-wrap')
  const echo = []
  for (let i = 0; i < N; i++) {
    const word = `k${i}x${Math.random().toString(36).slice(2, 6)}`
    const t0 = performance.now()
    await page.keyboard.type(word)
    await waitText(page, new RegExp(word))
    echo.push(performance.now() - t0)
    await page.keyboard.press('Control+U')
  }
  console.log(`a word typed (8 keys over DevTools) to its echo on the screen (n=${N}): p50 ${pct(echo, 0.5)} ms, p90 ${pct(echo, 0.9)} ms`)

  // 3. a blip: every connection through a TCP relay cut; time until the same shell answers
  const relay = await blipRelay(Number(new URL(BASE).port))
  const via = relay.url
  const p2 = await newPage(browser)
  await signIn(p2, via, KEY)
  await p2.goto(`${via}/ui/#/sandboxes/${sbx.sandboxId}/terminal`)
  await p2.waitForSelector('.term-status:text-is("Connected.")')
  const back = []
  for (let i = 0; i < Math.min(N, 5); i++) {
    relay.cut()
    const t0 = performance.now()
    // the cut seen first: the status still says "Reconnected" from the round before
    await p2.waitForSelector('.term-status:text("reconnecting")')
    await p2.waitForSelector('.term-status:text-is("Reconnected to the same shell.")')
    back.push(performance.now() - t0)
    await p2.click('.term-wrap')
    await p2.keyboard.type(`echo back-${i}\n`)
    await waitText(p2, new RegExp(`^back-${i}\\s*$`, 'm'))
  }
  console.log(`connection cut to the same shell again (n=${back.length}, first retry after 500 ms): p50 ${pct(back, 0.5)} ms`)
  relay.server.close()
} finally {
  await browser.close()
  await sbx.kill()
}
