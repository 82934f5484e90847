// A sandbox's processes: every process the agent runs for a client (the SDK's commands, the
// native API's, terminals), listed through envd's process service with the sandbox's access
// token; kill one, or follow its output (the retained output first, then what follows).
import { processes, sandboxes } from './api.js'
import { h, replace, toast, confirmDialog, every } from './dom.js'

const LIST_MS = 3000
const OUTPUT_MAX = 512 * 1024 // characters kept in the output view

export function mountProcesses (el, id, getDetail) {
  const body = h('tbody', {})
  const err = h('p', { class: 'error', role: 'alert' })
  const out = h('div', {})
  el.append(err, h('div', { class: 'table-wrap' }, h('table', { 'aria-label': 'Processes' },
    h('thead', {}, h('tr', {}, ['PID', 'Command', 'Tag', 'Directory'].map((c) => h('th', { scope: 'col' }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))), body)), out)
  let following = null // AbortController of the followed process

  async function token () {
    const d = getDetail() || await sandboxes.get(id)
    return d.envdAccessToken
  }

  async function refresh () {
    const d = getDetail()
    if (d && d.state === 'paused') { err.textContent = 'The sandbox is paused: resume it to see its processes.'; return }
    try {
      const r = await processes.list(id, await token())
      err.textContent = ''
      const list = (r.processes || []).sort((a, b) => a.pid - b.pid)
      replace(body, list.length ? list.map(row) : h('tr', {}, h('td', { colspan: 5, class: 'empty' }, 'No process runs.')))
    } catch (e) {
      err.textContent = `Listing processes: ${e.message}`
    }
  }

  function row (p) {
    const c = p.config || {}
    const cmd = [c.cmd, ...(c.args || [])].join(' ')
    return h('tr', { 'data-pid': String(p.pid) },
      h('td', { class: 'mono' }, String(p.pid)), h('td', { class: 'mono' }, cmd),
      h('td', { class: 'mono' }, p.tag || ''), h('td', { class: 'mono' }, c.cwd || ''),
      h('td', { class: 'actions' },
        h('button', { type: 'button', class: 'small', 'aria-label': `Follow the output of ${p.pid}`, onclick: () => follow(p.pid, cmd) }, 'Output'),
        ' ',
        h('button', { type: 'button', class: 'small danger', 'aria-label': `Kill ${p.pid}`, onclick: () => kill(p.pid, cmd) }, 'Kill')))
  }

  async function kill (pid, cmd) {
    if (!(await confirmDialog(`Kill process ${pid} (${cmd})?`, 'Kill'))) return
    try {
      await processes.signal(id, await token(), pid, 'SIGNAL_SIGKILL')
      toast(`Killed ${pid}`)
    } catch (e) {
      toast(`Killing ${pid}: ${e.message}`, 'error')
    }
    refresh()
  }

  async function follow (pid, cmd) {
    if (following) following.abort()
    const ac = new AbortController()
    following = ac
    const pre = h('pre', { class: 'logs', tabindex: '0', 'aria-label': `Output of process ${pid}`, 'aria-live': 'off' })
    const state = h('span', { class: 'muted', role: 'status' }, 'following…')
    replace(out, h('div', { class: 'panel' },
      h('div', { class: 'row' }, h('h2', { class: 'grow mono' }, `${pid}: ${cmd}`), state,
        h('button', { type: 'button', onclick: () => { ac.abort(); replace(out) } }, 'Close')), pre))
    const dec = { stdout: new TextDecoder(), stderr: new TextDecoder(), pty: new TextDecoder() }
    const b64 = (s) => Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0))
    try {
      await processes.follow(id, await token(), pid, (ev) => {
        if (ev.data) {
          for (const k of ['stdout', 'stderr', 'pty']) {
            if (!ev.data[k]) continue
            const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4
            pre.textContent = (pre.textContent + dec[k].decode(b64(ev.data[k]), { stream: true })).slice(-OUTPUT_MAX)
            if (stick) pre.scrollTop = pre.scrollHeight
          }
        }
        if (ev.end) state.textContent = `ended: ${ev.end.status || `exit ${ev.end.exitCode}`}`
      }, ac.signal)
      if (!state.textContent.startsWith('ended')) state.textContent = 'stream closed'
    } catch (e) {
      if (!ac.signal.aborted) state.textContent = `error: ${e.message}`
    }
  }

  const stop = every(LIST_MS, refresh)
  return () => { stop(); if (following) following.abort() }
}
