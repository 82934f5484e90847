// The console's shell: sign-in, the section links, and a hash router (#/sandboxes,
// #/sandboxes/<id>/<tab>, #/templates, #/templates/<id>, #/volumes, #/volumes/<id>, #/images).
// Each view's mount(container, params) returns a function that stops its timers and sockets.
import { key, call, ApiError } from './api.js'
import { h, replace } from './dom.js'
import * as sandboxesView from './sandboxes.js'
import * as sandboxView from './sandbox.js'
import * as templatesView from './templates.js'
import * as volumesView from './volumes.js'
import * as imagesView from './images.js'

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const signoutBtn = document.getElementById('signout')
let unmount = null

function signIn () {
  nav.hidden = true
  signoutBtn.hidden = true
  const input = h('input', { id: 'apikey', type: 'password', autocomplete: 'off', spellcheck: 'false',
    required: true, placeholder: 'e2b_…', 'aria-describedby': 'apikey-help' })
  const err = h('p', { class: 'error', role: 'alert', id: 'signin-error' })
  const form = h('form', {
    class: 'panel signin',
    onsubmit: async (e) => {
      e.preventDefault()
      const k = input.value.trim()
      err.textContent = ''
      key.set(k)
      try {
        await call('GET', '/v1/sandboxes', { native: true, noSignOut: true })
        if (!location.hash || location.hash === '#/signin') location.hash = '#/sandboxes'
        route()
      } catch (ex) {
        key.clear()
        err.textContent = ex instanceof ApiError && ex.status === 401
          ? 'That key is not one of this server\'s API keys.'
          : `Could not reach sbxd: ${ex.message}`
        input.focus()
      }
    }
  },
  h('h1', {}, 'Sign in to sbx'),
  h('label', { class: 'block', for: 'apikey' }, h('span', {}, 'API key'), input),
  h('p', { class: 'muted', id: 'apikey-help' },
    'The key sbxd printed as E2B_API_KEY (or any line of its state dir\'s keys file). ',
    'It is kept in this tab only and sent as a header with each request.'),
  err,
  h('div', { class: 'row end' }, h('button', { type: 'submit', class: 'primary' }, 'Sign in')))
  replace(main, form)
  input.focus()
}

function signOut () {
  key.clear()
  if (unmount) { unmount(); unmount = null }
  location.hash = '#/signin'
  signIn()
}

function route () {
  if (unmount) { unmount(); unmount = null }
  if (!key.get()) { signIn(); return }
  nav.hidden = false
  signoutBtn.hidden = false
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent)
  const section = parts[0] || 'sandboxes'
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.section === section) a.setAttribute('aria-current', 'page')
    else a.removeAttribute('aria-current')
  }
  clearMain()
  const views = { sandboxes: parts[1] ? sandboxView : sandboxesView, templates: templatesView,
    volumes: volumesView, images: imagesView }
  const view = views[section]
  if (!view) { location.hash = '#/sandboxes'; return }
  unmount = view.mount(main, parts.slice(1)) || null
  document.title = `${section[0].toUpperCase()}${section.slice(1)} · sbx console`
}

function clearMain () { replace(main) }

signoutBtn.addEventListener('click', signOut)
window.addEventListener('hashchange', () => { route(); main.focus() })
window.addEventListener('sbx-unauthorized', () => { if (key.get()) signOut() })
document.getElementById('server').textContent = location.host
route()
