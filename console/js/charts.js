// A small SVG line chart over time (built with the DOM: no HTML strings, no inline style).
import { h } from './dom.js'

const NS = 'http://www.w3.org/2000/svg'
const W = 600
const H = 160
const PAD = { l: 56, r: 8, t: 8, b: 20 }

function s (tag, attrs, text) {
  const el = document.createElementNS(NS, tag)
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v))
  if (text !== undefined) el.textContent = text
  return el
}

// points: [[unix seconds, value]], oldest first. max: the y axis' top (0: the data's).
export function lineChart ({ title, points, max, fmt = String, cls = '', summary }) {
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': `${title}: ${summary}` })
  const top = Math.max(max || 0, ...points.map((p) => p[1]), 1e-9)
  const t1 = points.length ? points[points.length - 1][0] : Date.now() / 1000
  const t0 = Math.min(points.length ? points[0][0] : t1, t1 - 600)
  const x = (t) => PAD.l + ((t - t0) / Math.max(1, t1 - t0)) * (W - PAD.l - PAD.r)
  const y = (v) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b)
  for (const f of [0, 0.5, 1]) {
    svg.append(s('line', { class: 'grid', x1: PAD.l, x2: W - PAD.r, y1: y(top * f), y2: y(top * f) }))
    svg.append(s('text', { x: PAD.l - 4, y: y(top * f) + 3, 'text-anchor': 'end' }, fmt(top * f)))
  }
  svg.append(s('text', { x: PAD.l, y: H - 4 }, `${Math.round((t1 - t0) / 60)} min ago`))
  svg.append(s('text', { x: W - PAD.r, y: H - 4, 'text-anchor': 'end' }, 'now'))
  if (points.length) {
    const line = points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ')
    svg.append(s('polygon', { class: 'area', points: `${x(points[0][0])},${y(0)} ${line} ${x(t1)},${y(0)}` }))
    svg.append(s('polyline', { class: `line ${cls}`, points: line }))
  }
  return h('figure', { class: 'chart' }, h('figcaption', {}, h('strong', {}, title), ' · ', summary), svg)
}
