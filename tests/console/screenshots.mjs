// The screenshots of docs/ (console-*.png), taken with the same headless Chromium as the suite,
// against a running sbxd with a few sandboxes made for the occasion (killed at the end):
//   E2B_API_URL=http://127.0.0.1:3000 E2B_API_KEY=e2b_… node tests/console/screenshots.mjs [DIR]
import { Sandbox } from 'e2b'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { launch, newPage, signIn } from './browser.mjs'

const BASE = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const OUT = resolve(process.argv[2] || join(dirname(fileURLToPath(import.meta.url)), '../../docs'))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const made = []
try {
  for (const [tpl, meta] of [['base', { team: 'search', job: 'crawler-7' }], ['base', { team: 'ml', job: 'eval-run-12' }],
    ['code-interpreter-v1', { team: 'ml', notebook: 'churn.ipynb' }]]) {
    made.push(await Sandbox.create(tpl, { metadata: meta, timeoutMs: 900_000 }))
  }
  const s = made[1]
  await s.commands.run('python3 -c "import time\nx=[0]*20_000_000\nt=time.time()\nwhile time.time()-t<40: pass" >/dev/null 2>&1', { background: true })
  await s.commands.run('python3 -m http.server 8000 >/dev/null 2>&1', { background: true })
  await s.commands.run('while true; do date +"%T tick"; sleep 2; done', { background: true })
  await s.files.write('/home/user/report.md', '# Weekly report\n\nAll green.\n')
  await s.files.write('/home/user/data/train.csv', 'id,label\n1,0\n2,1\n')
  await sleep(30000) // a few samples for the charts

  const browser = await launch()
  const page = await newPage(browser)
  await page.goto(`${BASE}/ui/`)
  await page.waitForSelector('#apikey')
  await page.screenshot({ path: join(OUT, 'console-signin.png') })
  await signIn(page, BASE, KEY)
  await page.waitForFunction(() => [...document.querySelectorAll('tbody td.num')].some((td) => td.textContent.includes('%')))
  await page.screenshot({ path: join(OUT, 'console-sandboxes.png') })
  await page.click(`tr[data-id="${s.sandboxId}"] a`)
  await page.waitForSelector('figure.chart svg polyline')
  await page.waitForSelector(`a[href*="8000-${s.sandboxId}."]`, { timeout: 20000 })
  await page.screenshot({ path: join(OUT, 'console-sandbox.png'), fullPage: true })
  await page.click('[role=tab]:text-is("Terminal")')
  await page.waitForSelector('.term-status:text-is("Connected.")')
  await page.click('.term-wrap')
  await page.keyboard.type('uname -sr; ls -la ~; top -bn1 | head -12\n')
  await sleep(1500)
  await page.screenshot({ path: join(OUT, 'console-terminal.png') })
  await page.click('[role=tab]:text-is("Files")')
  await page.waitForSelector('tr[data-name="report.md"]')
  await page.click('button[aria-label="Open report.md"]')
  await page.waitForSelector('pre.viewer')
  await page.screenshot({ path: join(OUT, 'console-files.png') })
  await page.click('[role=tab]:text-is("Processes")')
  await page.waitForSelector('tbody tr[data-pid]')
  await page.locator('tbody tr[data-pid]').filter({ hasText: 'tick' }).locator('button:text-is("Output")').click()
  await sleep(2500)
  await page.screenshot({ path: join(OUT, 'console-processes.png') })
  await page.click('nav a:text-is("Templates")')
  await page.waitForSelector('tbody tr[data-name]')
  await page.screenshot({ path: join(OUT, 'console-templates.png') })
  await browser.close()
  console.log(`screenshots in ${OUT}`)
} finally {
  for (const s of made) await s.kill().catch(() => {})
}
