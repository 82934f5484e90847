// The sandbox's terminal: xterm.js (Debian's node-xterm, served by sbxd) on the native
// WebSocket terminal (/v1/sandboxes/{id}/terminal). Binary messages carry the pty's bytes both
// ways; {"type":"resize","cols","rows"} follows the window; {"type":"exit","exit_code"} ends the
// shell. The first message, {"type":"session","id"}, names the shell: a connection that drops
// without an exit (a network blip) is reconnected with a growing delay and ?session=<id>, which
// takes the same shell over (sbxd keeps it a minute); its output so far is replayed onto a reset
// screen. When the shell is gone by then, a new one starts, and the status line says so.
import { terminalUrl, call, ApiError } from './api.js'
import { h } from './dom.js'

const RECONNECT_MS = [500, 1000, 2000, 4000, 8000] // then every 8 s

export function mountTerminal (el, id) {
  const status = h('p', { class: 'term-status muted', role: 'status', 'aria-live': 'polite' }, 'Connecting…')
  const box = h('div', { class: 'term-wrap' })
  const restart = h('button', { type: 'button', hidden: true, onclick: () => { restart.hidden = true; connect(true) } }, 'New session')
  const paste = h('button', { type: 'button', onclick: pasteClipboard, title: 'Paste the clipboard into the terminal (Ctrl+Shift+V works too)' }, 'Paste')
  el.append(h('div', { class: 'row' }, status, h('span', { class: 'grow' }), paste, restart), box)

  const term = new window.Terminal({
    cursorBlink: true,
    fontFamily: 'DejaVu Sans Mono, Liberation Mono, monospace',
    fontSize: 14,
    scrollback: 5000,
    // A text copy of the rows for screen readers (xterm's accessibility tree); the canvas
    // renderer needs no inline style sheet, which the CSP refuses.
    screenReaderMode: true
  })
  term.open(box)
  term.fit()
  const textarea = box.querySelector('textarea')
  if (textarea) textarea.setAttribute('aria-label', `Terminal of sandbox ${id}`)

  let ws = null
  let session = null // the shell's id, for taking it over after a lost connection
  let attempt = 0
  let closed = false
  let exited = false
  let timer = null
  const enc = new TextEncoder()
  let dec = new TextDecoder()

  const send = (data) => { if (ws && ws.readyState === WebSocket.OPEN) ws.send(data) }
  term.on('data', (d) => send(enc.encode(d)))
  term.on('resize', ({ cols, rows }) => send(JSON.stringify({ type: 'resize', cols, rows })))

  function connect (fresh = false) {
    exited = false
    dec = new TextDecoder()
    const resume = fresh ? null : session
    const sock = new WebSocket(terminalUrl(id, term.cols, term.rows, resume))
    let opened = false
    sock.binaryType = 'arraybuffer'
    ws = sock
    sock.onopen = () => {
      opened = true
      status.textContent = resume ? 'Reconnected to the same shell.' : attempt ? 'Reconnected: the previous shell had ended, this is a new one.' : 'Connected.'
      attempt = 0
      term.focus()
    }
    sock.onmessage = (ev) => {
      if (typeof ev.data !== 'string') { term.write(dec.decode(new Uint8Array(ev.data), { stream: true })); return }
      let msg = null
      try { msg = JSON.parse(ev.data) } catch (e) { return }
      if (msg && msg.type === 'session') {
        if (resume) term.reset() // the shell's output so far follows: the screen is redrawn
        session = msg.id
      } else if (msg && msg.type === 'exit') {
        exited = true
        session = null
        status.textContent = `The shell exited with code ${msg.exit_code}.`
        term.write(`\r\n[exited with code ${msg.exit_code}]\r\n`)
        restart.hidden = false
      }
    }
    sock.onclose = () => {
      if (ws !== sock || closed) return
      ws = null
      if (exited) return
      if (resume && !opened) { // refused, or the network is still down: sbxd says which
        call('GET', `/v1/sandboxes/${encodeURIComponent(id)}`, { native: true, noSignOut: true }).then(() => {
          if (closed || ws) return
          session = null // sbxd answers but the shell is gone: a new one at once
          connect(true)
        }, (e) => {
          if (closed || ws) return
          if (e instanceof ApiError && e.status === 404) { status.textContent = 'The sandbox is gone.'; return }
          retry()
        })
        return
      }
      retry()
    }
  }

  function retry () {
    const delay = RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]
    attempt++
    status.textContent = `Disconnected; reconnecting in ${Math.round(delay / 100) / 10} s…`
    timer = setTimeout(connect, delay)
  }

  async function pasteClipboard () {
    try {
      const text = await navigator.clipboard.readText()
      if (text) send(enc.encode(text))
      term.focus()
    } catch (e) {
      status.textContent = 'The browser did not hand over the clipboard: use Ctrl+Shift+V in the terminal.'
    }
  }

  const onResize = () => term.fit()
  window.addEventListener('resize', onResize)
  connect()
  const stop = () => {
    closed = true
    clearTimeout(timer)
    window.removeEventListener('resize', onResize)
    if (ws) ws.close()
    term.destroy()
  }
  stop.shown = () => { term.fit(); term.focus() }
  return stop
}
