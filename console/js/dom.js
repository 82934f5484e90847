// DOM helpers. Every string from a sandbox or a user reaches the page as a text node or an
// attribute value set through the DOM: nothing here (or anywhere in the console) parses HTML.

// h('button', {class: 'x', onclick: fn, 'aria-label': 'y'}, 'text', childNode, ...)
export function h (tag, props, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v)
    else if (k === 'class') el.className = v
    else if (k === 'text') el.textContent = String(v)
    else if (k === 'value') el.value = v
    else if (k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected' ||
             k === 'multiple' || k === 'required') el[k] = !!v
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  append(el, children)
  return el
}

function append (el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
}

export function clear (el) {
  while (el.firstChild) el.firstChild.remove()
  return el
}

export function replace (el, ...children) {
  clear(el)
  append(el, children)
  return el
}

export function fmtBytes (n) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–'
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++ }
  return `${n < 10 && i ? n.toFixed(1) : Math.round(n)} ${u[i]}`
}

export function fmtDuration (s) {
  if (s === undefined || s === null || Number.isNaN(s)) return '–'
  s = Math.max(0, Math.round(s))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`
}

export function since (iso) {
  const t = Date.parse(iso)
  return Number.isNaN(t) ? '–' : fmtDuration((Date.now() - t) / 1000)
}

export function until (iso) {
  const t = Date.parse(iso)
  return Number.isNaN(t) ? '–' : fmtDuration((t - Date.now()) / 1000)
}

export function toast (message, kind = 'info') {
  const box = document.getElementById('toasts')
  const t = h('div', { class: `toast ${kind}` }, String(message))
  box.append(t)
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000)
}

// A modal <dialog> (keyboard: Tab stays inside, Escape cancels, focus returns to the opener).
// fields: [{name, label, type, value, placeholder, rows, options, required}] → the values, or
// null when cancelled.
export function formDialog ({ title, fields = [], submit = 'OK', danger = false, text }) {
  return new Promise((resolve) => {
    const opener = document.activeElement
    const inputs = {}
    const rows = fields.map((f) => {
      const id = `f-${Math.random().toString(36).slice(2)}`
      let input
      if (f.type === 'textarea') {
        input = h('textarea', { id, rows: f.rows || 4, placeholder: f.placeholder })
        input.value = f.value || ''
      } else if (f.type === 'select') {
        input = h('select', { id }, f.options.map((o) =>
          h('option', { value: o.value, selected: o.value === f.value }, o.label)))
      } else if (f.type === 'checkbox') {
        input = h('input', { id, type: 'checkbox', checked: !!f.value })
        inputs[f.name] = input
        return h('label', { for: id }, input, f.label)
      } else {
        input = h('input', { id, type: f.type || 'text', value: f.value ?? '', placeholder: f.placeholder,
          required: f.required, min: f.min, max: f.max, list: f.list, autocomplete: 'off' })
      }
      inputs[f.name] = input
      return h('label', { class: 'block', for: id }, h('span', {}, f.label), input)
    })
    const err = h('p', { class: 'error', role: 'alert' })
    const dlg = h('dialog', { 'aria-label': title })
    const form = h('form', { method: 'dialog' },
      h('h2', {}, title), text ? h('p', {}, text) : null, rows, err,
      h('div', { class: 'row end' },
        h('button', { type: 'button', onclick: () => dlg.close('cancel') }, 'Cancel'),
        h('button', { type: 'submit', class: danger ? 'danger solid' : 'primary', value: 'ok' }, submit)))
    dlg.append(form)
    document.body.append(dlg)
    dlg.addEventListener('close', () => {
      const ok = dlg.returnValue === 'ok'
      const out = {}
      for (const [k, el] of Object.entries(inputs)) out[k] = el.type === 'checkbox' ? el.checked : el.value
      dlg.remove()
      if (opener && opener.focus) opener.focus()
      resolve(ok ? out : null)
    })
    dlg.showModal()
    const first = form.querySelector('input, textarea, select')
    if (first) first.focus()
  })
}

export function confirmDialog (text, submit = 'Delete') {
  return formDialog({ title: 'Are you sure?', text, submit, danger: true }).then((v) => v !== null)
}

// A tab list (WAI-ARIA tabs: arrow keys move between tabs). tabs: [{id, label}]; onselect(id).
export function tabList (tabs, selected, onselect, label) {
  const list = h('div', { class: 'tabs', role: 'tablist', 'aria-label': label })
  const buttons = tabs.map((t, i) => h('button', {
    type: 'button',
    role: 'tab',
    id: `tab-${t.id}`,
    'aria-selected': t.id === selected ? 'true' : 'false',
    tabindex: t.id === selected ? '0' : '-1',
    onclick: () => onselect(t.id),
    onkeydown: (e) => {
      const d = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0
      if (!d) return
      const next = buttons[(i + d + buttons.length) % buttons.length]
      next.focus()
      onselect(tabs[(i + d + buttons.length) % buttons.length].id)
    }
  }, t.label))
  list.append(...buttons)
  return list
}

// Run fn now and every ms while the page shows; returns a stop function.
export function every (ms, fn) {
  let stopped = false
  let timer
  const tick = async () => {
    if (stopped) return
    try { await fn() } catch (e) { /* the view shows its own errors */ }
    if (!stopped) timer = setTimeout(tick, ms)
  }
  tick()
  return () => { stopped = true; clearTimeout(timer) }
}

// Save a Blob under a file name (an object URL, revoked once the click is handled).
export function saveBlob (blob, name) {
  const url = URL.createObjectURL(blob)
  const a = h('a', { href: url, download: name || 'download' })
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10000)
}
