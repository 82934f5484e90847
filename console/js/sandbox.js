// One sandbox: overview (facts, CPU and memory charts, network policy, listening ports), a
// terminal, its files and its processes. The tab is part of the URL (#/sandboxes/<id>/<tab>),
// changed with replaceState so switching tabs keeps the terminal's session.
import { sandboxes, execIn } from './api.js'
import { h, replace, since, until, fmtBytes, toast, confirmDialog, formDialog, tabList, every } from './dom.js'
import { timeoutDialog } from './sandboxes.js'
import { lineChart } from './charts.js'
import { mountTerminal } from './terminal.js'
import { mountFiles } from './files.js'
import { mountProcesses } from './processes.js'

const TABS = [{ id: 'overview', label: 'Overview' }, { id: 'terminal', label: 'Terminal' },
  { id: 'files', label: 'Files' }, { id: 'processes', label: 'Processes' }]
const DETAIL_MS = 5000

export function mount (main, params) {
  const id = params[0]
  let tab = TABS.some((t) => t.id === params[1]) ? params[1] : 'overview'
  const panels = {} // tab → {el, stop}
  let detail = null
  const stops = []

  const title = h('h1', { class: 'grow mono' }, id)
  const state = h('span', { class: 'badge' })
  const actions = h('div', { class: 'row' })
  const err = h('p', { class: 'error', role: 'alert' })
  const tabsEl = h('div', {})
  const content = h('div', {})
  replace(main,
    h('p', {}, h('a', { href: '#/sandboxes' }, '← Sandboxes')),
    h('div', { class: 'row' }, title, state, actions), err, tabsEl, content)

  function renderActions () {
    const paused = detail && detail.state === 'paused'
    replace(actions,
      paused ? h('button', { type: 'button', onclick: () => act('resume') }, 'Resume')
        : h('button', { type: 'button', onclick: () => act('pause') }, 'Pause'),
      h('button', { type: 'button', disabled: paused, onclick: () => act('timeout') }, 'Set timeout'),
      h('button', { type: 'button', class: 'danger', onclick: () => act('kill') }, 'Kill'))
  }

  async function act (what) {
    try {
      if (what === 'kill') {
        if (!(await confirmDialog(`Kill sandbox ${id}? Its processes and files are gone for good.`, 'Kill'))) return
        await sandboxes.kill(id)
        toast(`Killed ${id}`)
        location.hash = '#/sandboxes'
        return
      }
      if (what === 'pause') await sandboxes.pause(id)
      if (what === 'resume') await sandboxes.resume(id, 300)
      if (what === 'timeout') {
        const v = await timeoutDialog(id)
        if (!v) return
        await sandboxes.setTimeout(id, v)
      }
      toast(`${what}: done`)
      await loadDetail()
    } catch (e) {
      toast(`${what} ${id}: ${e.message}`, 'error')
    }
  }

  async function loadDetail () {
    try {
      detail = await sandboxes.get(id)
      err.textContent = ''
      state.textContent = detail.state
      state.className = `badge ${detail.state}`
      renderActions()
      if (panels.overview && panels.overview.update) panels.overview.update(detail)
    } catch (e) {
      err.textContent = e.status === 404 ? `Sandbox ${id} does not exist (any more).` : `Loading ${id}: ${e.message}`
    }
  }

  function select (t) {
    tab = t
    replace(tabsEl, tabList(TABS, tab, select, 'Sandbox views'))
    history.replaceState(null, '', `#/sandboxes/${encodeURIComponent(id)}/${tab}`)
    for (const [k, p] of Object.entries(panels)) p.el.hidden = k !== tab
    if (!panels[tab]) {
      const el = h('div', { role: 'tabpanel', 'aria-labelledby': `tab-${tab}` })
      content.append(el)
      const p = { el }
      if (tab === 'overview') Object.assign(p, overview(el, id, () => detail))
      if (tab === 'terminal') p.stop = mountTerminal(el, id)
      if (tab === 'files') p.stop = mountFiles(el, id)
      if (tab === 'processes') p.stop = mountProcesses(el, id, () => detail)
      panels[tab] = p
      if (p.update && detail) p.update(detail)
    }
    if (panels[tab].shown) panels[tab].shown()
  }

  renderActions()
  select(tab)
  stops.push(every(DETAIL_MS, loadDetail))
  return () => {
    stops.forEach((s) => s())
    for (const p of Object.values(panels)) if (p.stop) p.stop()
  }
}

// ---- overview ----

function overview (el, id, getDetail) {
  const facts = h('dl', { class: 'facts' })
  const cpu = h('div', { class: 'chart panel' })
  const mem = h('div', { class: 'chart panel' })
  const net = h('div', { class: 'panel' })
  const ports = h('div', { class: 'panel' })
  el.append(h('div', { class: 'panel' }, facts), h('h2', {}, 'Usage (last 10 minutes)'),
    h('div', { class: 'charts' }, cpu, mem), h('h2', {}, 'Network'), net, h('h2', {}, 'Listening ports'), ports)

  function update (d) {
    const rows = [['Template', d.alias || d.templateID], ['State', d.state], ['Started', `${d.startedAt} (${since(d.startedAt)} ago)`],
      ['Ends', d.state === 'paused' ? '– (paused)' : `${d.endAt} (in ${until(d.endAt)})`],
      ['CPUs', d.cpuCount], ['Memory', `${d.memoryMB} MiB`], ['Disk', `${d.diskSizeMB} MiB`],
      ['envd', d.envdVersion], ['Domain', d.domain || '–'], ...(d.node ? [['Node', d.node]] : []),
      ['On timeout', d.lifecycle ? d.lifecycle.onTimeout : '–']]
    for (const [k, v] of Object.entries(d.metadata || {})) rows.push([`metadata ${k}`, v])
    replace(facts, rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v ?? '–'))]))
    renderNetwork(net, id, d)
  }

  async function loadMetrics () {
    const arr = await sandboxes.metrics(id)
    const pts = (f) => arr.map((m) => [m.timestampUnix, f(m)])
    const lastM = arr[arr.length - 1]
    replace(cpu, lineChart({ title: 'CPU', unit: '%', points: pts((m) => m.cpuUsedPct), max: 100,
      fmt: (v) => `${v.toFixed(1)}%`, summary: lastM ? `${lastM.cpuUsedPct.toFixed(1)}% of ${lastM.cpuCount} CPUs now` : 'no sample yet' }))
    replace(mem, lineChart({ title: 'Memory', points: pts((m) => m.memUsed), max: lastM ? lastM.memTotal : 0,
      fmt: fmtBytes, cls: 'mem', summary: lastM ? `${fmtBytes(lastM.memUsed)} of ${fmtBytes(lastM.memTotal)} now` : 'no sample yet' }))
  }

  async function loadPorts () {
    const d = getDetail()
    if (!d || d.state !== 'running') { replace(ports, h('p', { class: 'muted' }, 'Ports are read from a running sandbox.')); return }
    // The files API keeps out of /proc: the kernel's socket table is read by a process.
    const found = new Map()
    try {
      const r = await execIn(id, ['cat', '/proc/net/tcp', '/proc/net/tcp6'])
      for (const p of listeningPorts(r.stdout || '')) found.set(p.port, p)
    } catch (e) {
      replace(ports, h('p', { class: 'muted' }, `Reading the sandbox's sockets: ${e.message}`))
      return
    }
    const proto = location.protocol
    const list = [...found.values()].sort((a, b) => a.port - b.port)
    if (!list.length) { replace(ports, h('p', { class: 'muted' }, 'Nothing listens on a TCP port.')); return }
    const priv = d.network && d.network.allowPublicTraffic === false
    replace(ports,
      priv ? h('p', { class: 'muted' }, 'This sandbox\'s ports need its traffic access token (e2b-traffic-access-token): a browser tab cannot send it.') : null,
      h('table', { 'aria-label': 'Listening ports' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Port'), h('th', { scope: 'col' }, 'Address'), h('th', { scope: 'col' }, 'URL'))),
        h('tbody', {}, list.map((p) => {
          const url = `${proto}//${p.port}-${id}.${d.domain}/`
          return h('tr', {}, h('td', { class: 'mono' }, String(p.port)), h('td', { class: 'mono' }, p.addr),
            h('td', {}, h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, url)))
        }))))
  }

  const stops = [every(5000, loadMetrics), every(10000, loadPorts)]
  return { update, stop: () => stops.forEach((s) => s()) }
}

// /proc/net/tcp{,6}: the local address (hex ip:port) of each socket in state 0A (LISTEN).
export function listeningPorts (text) {
  const out = []
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/)
    if (f.length < 4 || f[3] !== '0A') continue
    const [ipHex, portHex] = f[1].split(':')
    const port = parseInt(portHex, 16)
    let addr = ipHex
    if (ipHex.length === 8) addr = ipHex.match(/../g).reverse().map((b) => parseInt(b, 16)).join('.')
    else if (/^0+$/.test(ipHex)) addr = '::'
    else if (ipHex === '00000000000000000000000001000000') addr = '::1'
    out.push({ port, addr })
  }
  return out
}

function renderNetwork (el, id, d) {
  const n = d.network || {}
  const list = (a) => (a && a.length ? a.join(', ') : '–')
  replace(el,
    h('dl', { class: 'facts' },
      h('dt', {}, 'Internet access'), h('dd', {}, d.allowInternetAccess ? 'allowed' : 'denied'),
      h('dt', {}, 'Allowed out'), h('dd', {}, list(n.allowOut)),
      h('dt', {}, 'Denied out'), h('dd', {}, list(n.denyOut)),
      h('dt', {}, 'Public ports'), h('dd', {}, n.allowPublicTraffic === false ? 'no: a traffic token is needed' : 'yes'),
      ...(n.maskRequestHost ? [h('dt', {}, 'Mask request host'), h('dd', {}, n.maskRequestHost)] : [])),
    h('div', { class: 'row end' }, h('button', { type: 'button', onclick: () => editNetwork(id, d) }, 'Change egress')))
}

async function editNetwork (id, d) {
  const n = d.network || {}
  const v = await formDialog({
    title: `Egress of ${id}`,
    text: 'Addresses, CIDRs or domain names (*.example.com) the sandbox may reach; deny rules take addresses and CIDRs. sbxd\'s --egress-max still caps what it gets.',
    submit: 'Apply',
    fields: [
      { name: 'internet', label: 'Allow the internet', type: 'checkbox', value: d.allowInternetAccess },
      { name: 'allowOut', label: 'Allow out (one a line)', type: 'textarea', rows: 3, value: (n.allowOut || []).join('\n') },
      { name: 'denyOut', label: 'Deny out (one a line)', type: 'textarea', rows: 3, value: (n.denyOut || []).join('\n') }
    ]
  })
  if (!v) return
  const lines = (s) => s.split('\n').map((x) => x.trim()).filter(Boolean)
  try {
    await sandboxes.setNetwork(id, { allow_internet_access: v.internet, allowOut: lines(v.allowOut), denyOut: lines(v.denyOut) })
    toast('Egress updated')
  } catch (e) {
    toast(`Egress: ${e.message}`, 'error')
  }
}
