// A sandbox's files (native /v1, as the sandbox's user): list a directory, open a text file,
// upload (button or drop), download, make a directory, delete.
import { files } from './api.js'
import { h, replace, fmtBytes, toast, confirmDialog, formDialog, saveBlob } from './dom.js'

const VIEW_MAX = 2 * 1024 * 1024 // bytes shown in the viewer; larger files are downloaded

export function mountFiles (el, id, start = '/home/user') {
  let cwd = start
  const crumbs = h('nav', { class: 'crumbs row', 'aria-label': 'Path' })
  const pathInput = h('input', { id: 'files-path', class: 'mono grow', value: cwd, 'aria-label': 'Directory path' })
  const upload = h('input', { id: 'files-upload', type: 'file', multiple: true, class: 'sr-only' })
  const body = h('tbody', {})
  const viewer = h('div', {})
  const err = h('p', { class: 'error', role: 'alert' })
  const zone = h('div', { class: 'table-wrap dropzone' },
    h('table', { 'aria-label': 'Files' },
      h('thead', {}, h('tr', {}, ['Name', 'Type', 'Size', 'Mode', 'Modified'].map((c) =>
        h('th', { scope: 'col', class: c === 'Size' ? 'num' : undefined }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))), body))
  el.append(
    h('form', { class: 'panel row', onsubmit: (e) => { e.preventDefault(); go(pathInput.value.trim() || '/') } },
      pathInput, h('button', { type: 'submit' }, 'Open'),
      h('button', { type: 'button', onclick: () => go(parent(cwd)), 'aria-label': 'Up one directory' }, 'Up'),
      h('button', { type: 'button', onclick: mkdir }, 'New folder'),
      h('label', { for: 'files-upload', class: 'button', tabindex: '0', role: 'button',
        onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); upload.click() } } }, 'Upload…'),
      upload),
    crumbs, err, zone, viewer)

  const join = (dir, name) => (dir.endsWith('/') ? dir : `${dir}/`) + name
  function parent (p) {
    const i = p.replace(/\/+$/, '').lastIndexOf('/')
    return i <= 0 ? '/' : p.slice(0, i)
  }

  function renderCrumbs () {
    const parts = cwd.split('/').filter(Boolean)
    const btns = [h('button', { type: 'button', class: 'small', onclick: () => go('/') }, '/')]
    parts.forEach((p, i) => {
      const to = `/${parts.slice(0, i + 1).join('/')}`
      btns.push(h('button', { type: 'button', class: 'small', onclick: () => go(to) }, p))
    })
    replace(crumbs, btns)
  }

  async function go (path) {
    err.textContent = ''
    try {
      const r = await files.list(id, path)
      cwd = path
      pathInput.value = cwd
      renderCrumbs()
      const entries = (r.entries || []).sort((a, b) => (a.type === 'dir') === (b.type === 'dir')
        ? a.name.localeCompare(b.name) : a.type === 'dir' ? -1 : 1)
      replace(body, entries.length ? entries.map(row) : h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'Empty directory')))
      if (r.truncated) err.textContent = 'The directory has more entries than one listing returns.'
    } catch (e) {
      err.textContent = `${path}: ${e.message}`
    }
  }

  function row (e) {
    const isDir = e.type === 'dir'
    const name = isDir
      ? h('button', { type: 'button', class: 'small mono', onclick: () => go(e.path) }, `${e.name}/`)
      : h('span', { class: 'mono' }, e.name)
    return h('tr', { 'data-name': e.name },
      h('td', {}, name), h('td', {}, e.type), h('td', { class: 'num' }, isDir ? '' : fmtBytes(e.size)),
      h('td', { class: 'mono' }, e.mode || ''), h('td', {}, e.mtime ? new Date(e.mtime * 1000).toLocaleString() : ''),
      h('td', { class: 'actions' },
        isDir ? null : h('button', { type: 'button', class: 'small', 'aria-label': `Open ${e.name}`, onclick: () => open(e) }, 'Open'),
        ' ',
        isDir ? null : h('button', { type: 'button', class: 'small', 'aria-label': `Download ${e.name}`, onclick: () => download(e) }, 'Download'),
        ' ',
        h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${e.name}`, onclick: () => remove(e) }, 'Delete')))
  }

  async function open (e) {
    if (e.size > VIEW_MAX) { toast(`${e.name} is ${fmtBytes(e.size)}: download it instead`); return }
    try {
      const buf = await (await files.read(id, e.path)).arrayBuffer()
      let text
      try { text = new TextDecoder('utf-8', { fatal: true }).decode(buf) } catch (x) { text = null }
      replace(viewer, h('div', { class: 'panel' },
        h('div', { class: 'row' }, h('h2', { class: 'grow mono' }, e.path),
          h('button', { type: 'button', onclick: () => replace(viewer) }, 'Close')),
        text === null
          ? h('p', { class: 'muted' }, `A binary file (${fmtBytes(buf.byteLength)}): download it to look inside.`)
          : h('pre', { class: 'viewer', tabindex: '0', 'aria-label': `Contents of ${e.name}` }, text)))
      viewer.querySelector('h2').scrollIntoView({ block: 'nearest' })
    } catch (x) {
      toast(`Opening ${e.path}: ${x.message}`, 'error')
    }
  }

  async function download (e) {
    try {
      saveBlob(await (await files.read(id, e.path)).blob(), e.name)
    } catch (x) {
      toast(`Downloading ${e.path}: ${x.message}`, 'error')
    }
  }

  async function remove (e) {
    const dir = e.type === 'dir'
    if (!(await confirmDialog(`Delete ${e.path}${dir ? ' and everything in it' : ''}?`))) return
    try {
      await files.remove(id, e.path, dir)
      toast(`Deleted ${e.path}`)
    } catch (x) {
      toast(`Deleting ${e.path}: ${x.message}`, 'error')
    }
    go(cwd)
  }

  async function mkdir () {
    const v = await formDialog({ title: 'New folder', submit: 'Create', fields: [{ name: 'name', label: `Name (in ${cwd})`, required: true }] })
    if (!v) return
    try {
      await files.mkdir(id, join(cwd, v.name.trim()))
    } catch (x) {
      toast(`New folder: ${x.message}`, 'error')
    }
    go(cwd)
  }

  async function uploadFiles (list) {
    for (const f of list) {
      try {
        await files.write(id, join(cwd, f.name), f)
        toast(`Uploaded ${f.name}`)
      } catch (x) {
        toast(`Uploading ${f.name}: ${x.message}`, 'error')
      }
    }
    go(cwd)
  }

  upload.addEventListener('change', () => { uploadFiles([...upload.files]); upload.value = '' })
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over') })
  zone.addEventListener('dragleave', () => zone.classList.remove('over'))
  zone.addEventListener('drop', (e) => {
    e.preventDefault()
    zone.classList.remove('over')
    uploadFiles([...e.dataTransfer.files])
  })
  go(cwd)
  return () => {}
}
