// Templates: every template sbxd can start (GET /v1/templates), the builds of those built
// through the template API with their logs, followed live while a build runs; delete.
import { templates, images } from './api.js'
import { h, replace, toast, confirmDialog, every } from './dom.js'

const LOGS_MS = 1000
const LOG_LINES_MAX = 20000

export function mount (main, params) {
  if (params[0]) return detail(main, params[0])
  const body = h('tbody', {})
  const err = h('p', { class: 'error', role: 'alert' })
  replace(main, h('h1', {}, 'Templates'), err, h('div', { class: 'table-wrap' },
    h('table', { 'aria-label': 'Templates' }, h('thead', {}, h('tr', {},
      ['Name', 'Kind', 'CPUs', 'Memory', 'Disk', 'Layers'].map((c) => h('th', { scope: 'col' }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))), body)))

  async function refresh () {
    try {
      const list = (await templates.all()).templates || []
      replace(body, list.length ? list.map(row) : h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No template is built yet.')))
    } catch (e) {
      err.textContent = `Listing templates: ${e.message}`
    }
  }

  function row (t) {
    const name = t.kind === 'built'
      ? h('a', { href: `#/templates/${encodeURIComponent(t.name)}` }, t.name)
      : h('span', {}, t.name)
    return h('tr', { 'data-name': t.name },
      h('td', { class: 'mono' }, name), h('td', {}, t.kind), h('td', {}, String(t.cpuCount)),
      h('td', {}, `${t.memoryMB} MiB`), h('td', {}, `${t.diskSizeMB} MiB`), h('td', {}, String(t.layers)),
      h('td', { class: 'actions' }, t.kind === 'builtin' ? null
        : h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${t.name}`, onclick: () => remove(t) }, 'Delete')))
  }

  async function remove (t) {
    if (!(await confirmDialog(`Delete template ${t.name}? Running sandboxes keep their files; new ones cannot start from it.`))) return
    try {
      if (t.kind === 'image') await images.remove(t.name)
      else await templates.remove(t.name)
      toast(`Deleted ${t.name}`)
    } catch (e) {
      toast(`Deleting ${t.name}: ${e.message}`, 'error')
    }
    refresh()
  }

  return every(5000, refresh)
}

// One template built through the template API: its builds, and a build's log.
function detail (main, name) {
  const builds = h('tbody', {})
  const logs = h('div', {})
  const err = h('p', { class: 'error', role: 'alert' })
  let stopLogs = null
  replace(main, h('p', {}, h('a', { href: '#/templates' }, '← Templates')), h('h1', { class: 'mono' }, name), err,
    h('div', { class: 'table-wrap' }, h('table', { 'aria-label': 'Builds' }, h('thead', {}, h('tr', {},
      ['Build', 'Status', 'Created', 'Finished'].map((c) => h('th', { scope: 'col' }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))), builds)), logs)

  async function load () {
    try {
      const t = await templates.get(name)
      const list = (t.builds || []).slice().reverse()
      replace(builds, list.map((b) => h('tr', {},
        h('td', { class: 'mono' }, b.buildID), h('td', {}, h('span', { class: `badge ${b.status}` }, b.status)),
        h('td', {}, b.createdAt || ''), h('td', {}, b.finishedAt || ''),
        h('td', { class: 'actions' }, h('button', { type: 'button', class: 'small', 'aria-label': `Logs of build ${b.buildID}`, onclick: () => showLogs(t.templateID, b.buildID) }, 'Logs')))))
      if (list.length && !stopLogs) showLogs(t.templateID, list[0].buildID)
    } catch (e) {
      err.textContent = `Loading ${name}: ${e.message}`
    }
  }

  function showLogs (tid, build) {
    if (stopLogs) stopLogs()
    const pre = h('pre', { class: 'logs', tabindex: '0', 'aria-label': `Log of build ${build}` })
    const state = h('span', { class: 'muted logs-state', role: 'status' })
    replace(logs, h('div', { class: 'panel' }, h('div', { class: 'row' }, h('h2', { class: 'grow mono' }, `Build ${build}`), state), pre))
    let offset = 0
    let lines = 0
    let done = false
    const stop = every(LOGS_MS, async () => {
      if (done) return
      const st = await templates.buildStatus(tid, build, offset)
      const entries = st.logEntries || []
      offset += entries.length
      const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4
      for (const e of entries) {
        if (lines++ > LOG_LINES_MAX) pre.firstChild && pre.firstChild.remove()
        pre.append(document.createTextNode(`${e.timestamp || ''} ${e.level || ''} ${e.message}\n`))
      }
      if (stick) pre.scrollTop = pre.scrollHeight
      state.textContent = st.status + (st.reason && st.reason.message ? `: ${st.reason.message}` : '')
      if (st.status !== 'building' && st.status !== 'waiting' && entries.length === 0) done = true
    })
    stopLogs = stop
  }

  const stopLoad = every(5000, load)
  return () => { stopLoad(); if (stopLogs) stopLogs() }
}
