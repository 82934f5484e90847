// Sandboxes: the live list (every 3 s; each visible row's latest metrics every 5 s), filters,
// create, and each row's pause / resume / timeout / kill.
import { listSandboxes, sandboxes, templates } from './api.js'
import { h, replace, since, until, fmtBytes, toast, formDialog, confirmDialog, every } from './dom.js'

const LIST_MS = 3000
const METRICS_MS = 5000
const METRICS_PARALLEL = 6 // metric requests in flight at once
const ROWS_MAX = 1000 // sandboxes fetched for the list (10 pages of 100)

export function mount (main) {
  const stops = []
  const rows = new Map() // sandboxID → {tr, cells, data}
  const metrics = new Map() // sandboxID → latest SandboxMetric
  let last = []
  let showNode = false

  const q = h('input', { id: 'f-text', type: 'search', placeholder: 'id, template or metadata', 'aria-label': 'Filter by text' })
  const stateSel = h('select', { id: 'f-state', 'aria-label': 'Filter by state' },
    h('option', { value: 'running,paused' }, 'Running and paused'),
    h('option', { value: 'running' }, 'Running'),
    h('option', { value: 'paused' }, 'Paused'))
  const meta = h('input', { id: 'f-meta', type: 'search', placeholder: 'key=value&key2=value2', 'aria-label': 'Filter by metadata (server side)' })
  const count = h('span', { class: 'muted', 'aria-live': 'polite' })
  const err = h('p', { class: 'error', role: 'alert' })
  const head = h('tr', {})
  const body = h('tbody', {})
  const table = h('table', { 'aria-label': 'Sandboxes' }, h('thead', {}, head), body)
  const empty = h('div', { class: 'empty', hidden: true }, 'No sandbox matches.')

  replace(main,
    h('div', { class: 'row' }, h('h1', { class: 'grow' }, 'Sandboxes'),
      h('button', { type: 'button', class: 'primary', id: 'create', onclick: create }, 'New sandbox')),
    h('div', { class: 'panel row', role: 'search' },
      h('label', { for: 'f-text' }, 'Filter'), q,
      h('label', { for: 'f-state' }, 'State'), stateSel,
      h('label', { for: 'f-meta' }, 'Metadata'), meta, count),
    err,
    h('div', { class: 'table-wrap' }, table, empty))

  const columns = () => [
    ['ID'], ['Template'], ['State'], ['Age'], ['Ends in'], ['CPU', 'num'], ['Memory', 'num'],
    ['Disk', 'num'], ['Metadata'], ...(showNode ? [['Node']] : []), [h('span', { class: 'sr-only' }, 'Actions')]]
  function renderHead () {
    replace(head, columns().map(([label, cls]) => h('th', { scope: 'col', class: cls }, label)))
  }
  renderHead()

  function matches (s) {
    const t = q.value.trim().toLowerCase()
    if (!t) return true
    const hay = [s.sandboxID, s.templateID, s.alias, s.node,
      ...Object.entries(s.metadata || {}).map(([k, v]) => `${k}=${v}`)].join('\n').toLowerCase()
    return hay.includes(t)
  }

  function metricCells (s) {
    const m = metrics.get(s.sandboxID)
    if (!m) return ['–', `${s.memoryMB} MiB`, `${s.diskSizeMB} MiB`]
    const pct = (a, b) => (b ? Math.min(100, (100 * a) / b) : 0)
    const meter = (p) => h('span', { class: 'meter', 'aria-hidden': 'true' }, h('span', { style: null, 'data-pct': p.toFixed(0) }))
    return [
      [`${m.cpuUsedPct.toFixed(1)}% of ${m.cpuCount}`, meter(m.cpuUsedPct)],
      [`${fmtBytes(m.memUsed)} / ${fmtBytes(m.memTotal)}`, meter(pct(m.memUsed, m.memTotal))],
      [`${fmtBytes(m.diskUsed)} / ${fmtBytes(m.diskTotal)}`, meter(pct(m.diskUsed, m.diskTotal))]
    ]
  }

  function fillRow (r, s) {
    const paused = s.state === 'paused'
    const link = h('a', { href: `#/sandboxes/${encodeURIComponent(s.sandboxID)}` }, s.sandboxID)
    const [cpu, mem, disk] = metricCells(s)
    const cells = [
      h('td', { class: 'id' }, link),
      h('td', {}, s.alias || s.templateID),
      h('td', {}, h('span', { class: `badge ${s.state}` }, s.state)),
      h('td', { title: s.startedAt }, since(s.startedAt)),
      h('td', { title: s.endAt }, paused ? '–' : until(s.endAt)),
      h('td', { class: 'num' }, cpu), h('td', { class: 'num' }, mem), h('td', { class: 'num' }, disk),
      h('td', {}, Object.entries(s.metadata || {}).map(([k, v]) => h('span', { class: 'chip', title: `${k}=${v}` }, `${k}=${v}`))),
      ...(showNode ? [h('td', {}, s.node || '–')] : []),
      h('td', { class: 'actions' },
        paused
          ? h('button', { type: 'button', class: 'small', 'aria-label': `Resume ${s.sandboxID}`, onclick: () => act('resume', s) }, 'Resume')
          : h('button', { type: 'button', class: 'small', 'aria-label': `Pause ${s.sandboxID}`, onclick: () => act('pause', s) }, 'Pause'),
        ' ',
        h('button', { type: 'button', class: 'small', disabled: paused, 'aria-label': `Set the timeout of ${s.sandboxID}`, onclick: () => act('timeout', s) }, 'Timeout'),
        ' ',
        h('button', { type: 'button', class: 'small danger', 'aria-label': `Kill ${s.sandboxID}`, onclick: () => act('kill', s) }, 'Kill'))
    ]
    // Keep the focused control's place: replace cells one by one, leaving an unchanged one.
    const focused = r.tr.contains(document.activeElement) ? document.activeElement.getAttribute('aria-label') : null
    replace(r.tr, cells)
    r.tr.dataset.id = s.sandboxID
    r.tr.dataset.state = s.state
    for (const bar of r.tr.querySelectorAll('.meter > span')) bar.style.width = `${bar.dataset.pct}%`
    if (focused) {
      const again = [...r.tr.querySelectorAll('button')].find((b) => b.getAttribute('aria-label') === focused)
      if (again) again.focus()
    }
  }

  function render () {
    const wanted = last.filter(matches)
    const nodeNow = last.some((s) => s.node)
    if (nodeNow !== showNode) { showNode = nodeNow; renderHead() }
    const seen = new Set()
    let prev = null
    for (const s of wanted) {
      seen.add(s.sandboxID)
      let r = rows.get(s.sandboxID)
      if (!r) { r = { tr: h('tr', {}) }; rows.set(s.sandboxID, r) }
      r.data = s
      fillRow(r, s)
      const at = prev ? prev.nextSibling : body.firstChild
      if (at !== r.tr) body.insertBefore(r.tr, at)
      prev = r.tr
    }
    for (const [id, r] of rows) if (!seen.has(id)) { r.tr.remove(); rows.delete(id) }
    empty.hidden = wanted.length > 0
    count.textContent = `${wanted.length} of ${last.length}`
  }

  async function refresh () {
    try {
      const { sandboxes: list, more } = await listSandboxes({ state: stateSel.value, metadata: meta.value.trim() || undefined, max: ROWS_MAX })
      last = list
      err.textContent = more ? `Showing the newest ${list.length} sandboxes.` : ''
      render()
    } catch (e) {
      err.textContent = `Listing sandboxes: ${e.message}`
    }
  }

  // The latest sample of each running row shown, a few requests at a time.
  async function refreshMetrics () {
    const ids = [...rows.values()].filter((r) => r.data.state === 'running').map((r) => r.data.sandboxID)
    const start = Math.floor(Date.now() / 1000) - 30
    let i = 0
    const worker = async () => {
      while (i < ids.length) {
        const id = ids[i++]
        try {
          const arr = await sandboxes.metrics(id, start)
          if (arr && arr.length) metrics.set(id, arr[arr.length - 1])
        } catch (e) { metrics.delete(id) }
      }
    }
    await Promise.all(Array.from({ length: METRICS_PARALLEL }, worker))
    for (const id of [...metrics.keys()]) if (!rows.has(id)) metrics.delete(id)
    render()
  }

  async function act (what, s) {
    const id = s.sandboxID
    try {
      if (what === 'kill') {
        if (!(await confirmDialog(`Kill sandbox ${id}? Its processes and files are gone for good.`, 'Kill'))) return
        await sandboxes.kill(id)
        toast(`Killed ${id}`)
      } else if (what === 'pause') {
        await sandboxes.pause(id)
        toast(`Paused ${id}`)
      } else if (what === 'resume') {
        await sandboxes.resume(id, 300)
        toast(`Resumed ${id}`)
      } else if (what === 'timeout') {
        const v = await timeoutDialog(id)
        if (!v) return
        await sandboxes.setTimeout(id, v)
        toast(`${id} now ends in ${v} s`)
      }
    } catch (e) {
      toast(`${what} ${id}: ${e.message}`, 'error')
    }
    refresh()
  }

  async function create () {
    let names = []
    try { names = ((await templates.all()).templates || []).map((t) => t.name) } catch (e) { /* typed by hand */ }
    const list = h('datalist', { id: 'template-names' }, names.map((n) => h('option', { value: n })))
    document.body.append(list)
    const v = await formDialog({
      title: 'New sandbox',
      submit: 'Create',
      fields: [
        { name: 'template', label: 'Template', value: names.includes('base') ? 'base' : (names[0] || 'base'), list: 'template-names', required: true },
        { name: 'timeout', label: 'Timeout (seconds, 1–86400)', type: 'number', value: '300', min: 1, max: 86400, required: true },
        { name: 'metadata', label: 'Metadata (one key=value a line)', type: 'textarea', rows: 3 },
        { name: 'autoPause', label: 'Pause instead of kill at the timeout', type: 'checkbox' }
      ]
    })
    list.remove()
    if (!v) return
    const metadata = {}
    for (const line of v.metadata.split('\n')) {
      const i = line.indexOf('=')
      if (line.trim() && i > 0) metadata[line.slice(0, i).trim()] = line.slice(i + 1).trim()
    }
    try {
      const s = await sandboxes.create({ templateID: v.template.trim(), timeout: Number(v.timeout), metadata, autoPause: v.autoPause })
      toast(`Created ${s.sandboxID}`)
      refresh()
    } catch (e) {
      toast(`Creating a sandbox: ${e.message}`, 'error')
    }
  }

  q.addEventListener('input', render)
  stateSel.addEventListener('change', refresh)
  meta.addEventListener('change', refresh)
  stops.push(every(LIST_MS, refresh))
  stops.push(every(METRICS_MS, refreshMetrics))
  return () => stops.forEach((s) => s())
}

export async function timeoutDialog (id) {
  const v = await formDialog({
    title: `Timeout of ${id}`,
    text: 'The sandbox ends this many seconds from now (it may shorten its life).',
    submit: 'Set',
    fields: [{ name: 'timeout', label: 'Seconds (1–86400)', type: 'number', value: '300', min: 1, max: 86400, required: true }]
  })
  return v ? Number(v.timeout) : null
}
