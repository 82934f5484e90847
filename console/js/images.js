// Images: the OCI images imported as templates (GET /v1/images), delete; pulling from a
// registry appears when this sbxd answers POST /v1/images/pull.
import { images } from './api.js'
import { h, replace, fmtBytes, toast, confirmDialog, formDialog, every } from './dom.js'

export function mount (main) {
  const body = h('tbody', {})
  const err = h('p', { class: 'error', role: 'alert' })
  const pullBtn = h('button', { type: 'button', class: 'primary', hidden: true, onclick: pull }, 'Pull image')
  replace(main, h('div', { class: 'row' }, h('h1', { class: 'grow' }, 'Images'), pullBtn),
    h('p', { class: 'muted' }, 'Import an archive with: sbx image import NAME[:TAG] FILE (docker save or an OCI layout).'),
    err, h('div', { class: 'table-wrap' }, h('table', { 'aria-label': 'Images' }, h('thead', {}, h('tr', {},
      ['Template', 'Image', 'Digest', 'Layers', 'Written', 'Imported'].map((c) => h('th', { scope: 'col' }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))), body)))

  async function refresh () {
    try {
      const list = (await images.list()).images || []
      replace(body, list.length ? list.map(row) : h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No image imported yet.')))
    } catch (e) {
      err.textContent = `Listing images: ${e.message}`
    }
  }

  function row (i) {
    const id = i.template || i.name
    return h('tr', {},
      h('td', { class: 'mono' }, String(id)), h('td', { class: 'mono' }, `${i.name}:${i.tag || 'latest'} (${i.format || '?'})`),
      h('td', { class: 'mono', title: i.digest || '' }, String(i.digest || '').slice(0, 19)),
      h('td', {}, String(Array.isArray(i.layers) ? i.layers.length : '')),
      h('td', {}, i.writtenBytes === undefined ? '' : fmtBytes(i.writtenBytes)), h('td', {}, String(i.importedAt || '')),
      h('td', { class: 'actions' }, h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete image ${id}`, onclick: () => remove(id) }, 'Delete')))
  }

  async function remove (id) {
    if (!(await confirmDialog(`Delete image ${id}? Its template goes; its layers go once no sandbox uses them.`))) return
    try {
      await images.remove(id)
      toast(`Deleted ${id}`)
    } catch (e) {
      toast(`Deleting ${id}: ${e.message}`, 'error')
    }
    refresh()
  }

  async function pull () {
    const v = await formDialog({ title: 'Pull an image', submit: 'Pull', fields: [
      { name: 'ref', label: 'Image reference (registry/name:tag or @sha256:…)', required: true },
      { name: 'name', label: 'Template name (empty: from the reference)' }] })
    if (!v) return
    try {
      const body = { ref: v.ref.trim() }
      if (v.name.trim()) body.name = v.name.trim()
      await images.pull(body)
      toast(`Pulled ${v.ref}`)
    } catch (e) {
      toast(`Pulling ${v.ref}: ${e.message}`, 'error')
    }
    refresh()
  }

  images.canPull().then((yes) => { pullBtn.hidden = !yes })
  return every(5000, refresh)
}
