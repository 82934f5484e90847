// Volumes: list, create, delete, and browse one volume's files through the content API (on the
// host, no sandbox needed): open a directory, download a file, delete a path.
import { volumes } from './api.js'
import { h, replace, fmtBytes, toast, confirmDialog, formDialog, saveBlob, every } from './dom.js'

export function mount (main, params) {
  if (params[0]) return browse(main, params[0])
  const body = h('tbody', {})
  const err = h('p', { class: 'error', role: 'alert' })
  replace(main, h('div', { class: 'row' }, h('h1', { class: 'grow' }, 'Volumes'),
    h('button', { type: 'button', class: 'primary', onclick: create }, 'New volume')), err,
  h('div', { class: 'table-wrap' }, h('table', { 'aria-label': 'Volumes' }, h('thead', {}, h('tr', {},
    ['Name', 'ID'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))), body)))

  async function refresh () {
    try {
      const list = await volumes.list()
      replace(body, list.length ? list.map((v) => h('tr', {},
        h('td', {}, h('a', { href: `#/volumes/${encodeURIComponent(v.volumeID)}` }, v.name)), h('td', { class: 'mono' }, v.volumeID),
        h('td', { class: 'actions' }, h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete volume ${v.name}`, onclick: () => remove(v) }, 'Delete'))))
        : h('tr', {}, h('td', { colspan: 3, class: 'empty' }, 'No volume yet.')))
    } catch (e) {
      err.textContent = `Listing volumes: ${e.message}`
    }
  }

  async function create () {
    const v = await formDialog({ title: 'New volume', submit: 'Create', fields: [
      { name: 'name', label: 'Name ([A-Za-z0-9_-], at most 63)', required: true },
      { name: 'size', label: 'Size in MiB (empty: the default)', type: 'number', min: 16 }] })
    if (!v) return
    try {
      await volumes.create(v.name.trim(), v.size ? Number(v.size) : undefined)
      toast(`Created volume ${v.name}`)
    } catch (e) {
      toast(`Creating a volume: ${e.message}`, 'error')
    }
    refresh()
  }

  async function remove (v) {
    if (!(await confirmDialog(`Delete volume ${v.name} and all its files?`))) return
    try {
      await volumes.remove(v.volumeID)
      toast(`Deleted ${v.name}`)
    } catch (e) {
      toast(`Deleting ${v.name}: ${e.message}`, 'error')
    }
    refresh()
  }

  return every(5000, refresh)
}

function browse (main, id) {
  let cwd = '/'
  const title = h('h1', { class: 'mono' }, id)
  const where = h('p', { class: 'mono' })
  const body = h('tbody', {})
  const err = h('p', { class: 'error', role: 'alert' })
  replace(main, h('p', {}, h('a', { href: '#/volumes' }, '← Volumes')), title, err,
    h('div', { class: 'row' }, where, h('span', { class: 'grow' }),
      h('button', { type: 'button', onclick: () => go(parentOf(cwd)), 'aria-label': 'Up one directory' }, 'Up')),
    h('div', { class: 'table-wrap' }, h('table', { 'aria-label': 'Volume files' }, h('thead', {}, h('tr', {},
      ['Name', 'Type', 'Size', 'Owner', 'Modified'].map((c) => h('th', { scope: 'col' }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))), body)))
  const parentOf = (p) => (p.lastIndexOf('/') <= 0 ? '/' : p.slice(0, p.lastIndexOf('/')))

  async function go (path) {
    try {
      const list = await volumes.dir(id, path)
      cwd = path
      where.textContent = cwd
      err.textContent = ''
      replace(body, list.length ? list.map((e) => h('tr', {},
        h('td', {}, e.type === 'directory' ? h('button', { type: 'button', class: 'small mono', onclick: () => go(e.path) }, `${e.name}/`) : h('span', { class: 'mono' }, e.name)),
        h('td', {}, e.type), h('td', {}, e.type === 'file' ? fmtBytes(e.size) : ''), h('td', {}, `${e.uid}:${e.gid}`),
        h('td', {}, e.mtime ? new Date(e.mtime).toLocaleString() : ''),
        h('td', { class: 'actions' },
          e.type === 'file' ? h('button', { type: 'button', class: 'small', 'aria-label': `Download ${e.name}`, onclick: () => download(e) }, 'Download') : null, ' ',
          h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${e.name}`, onclick: () => remove(e) }, 'Delete'))))
        : h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'Empty directory')))
    } catch (e) {
      err.textContent = `${path}: ${e.message}`
    }
  }

  async function download (e) {
    try { saveBlob(await (await volumes.read(id, e.path)).blob(), e.name) } catch (x) { toast(`Downloading ${e.path}: ${x.message}`, 'error') }
  }

  async function remove (e) {
    if (!(await confirmDialog(`Delete ${e.path}${e.type === 'directory' ? ' and everything in it' : ''}?`))) return
    try { await volumes.removePath(id, e.path) } catch (x) { toast(`Deleting ${e.path}: ${x.message}`, 'error') }
    go(cwd)
  }

  volumes.get(id).then((v) => { title.textContent = `${v.name} (${v.sizeMB} MiB)` }, (e) => { err.textContent = e.message })
  go('/')
  return () => {}
}
