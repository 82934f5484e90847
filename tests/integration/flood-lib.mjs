// Hostile HTTP clients for http-flood.test.mjs and bench/http-flood.mjs: raw exchanges,
// trickling connections, and a flood of slow or idle connections kept open.
import net from 'node:net'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// One raw exchange: what came back until the server closed (or `wait` ms passed).
export function raw(addr, data, { wait = 10_000 } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(addr)
    let out = ''
    const t0 = Date.now()
    const done = (closed) => { clearTimeout(timer); s.destroy(); resolve({ out, closed, ms: Date.now() - t0 }) }
    const timer = setTimeout(() => done(false), wait)
    s.on('connect', () => s.write(data))
    s.on('data', (d) => { out += d })
    s.on('end', () => done(true))
    s.on('error', () => done(true))
  })
}
export const statusOf = (out) => Number((/^HTTP\/1\.1 (\d{3})/.exec(out) || [])[1])
export const bodyOf = (out) => JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4))

// A connection that sends part of a request and then `chunk` every `every` ms; resolves
// when the server closes it (or after `wait` ms) with what came back.
export function trickle(addr, start, { every = 1000, wait = 30_000, chunk = 'a' } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(addr)
    let out = ''
    const t0 = Date.now()
    const iv = setInterval(() => s.write(chunk), every)
    const done = (closed) => {
      clearInterval(iv); clearTimeout(timer); s.destroy()
      resolve({ out, closed, ms: Date.now() - t0 })
    }
    const timer = setTimeout(() => done(false), wait)
    s.on('connect', () => s.write(start))
    s.on('data', (d) => { out += d })
    s.on('end', () => done(true))
    s.on('error', () => done(true))
  })
}

export const PARTIAL_HEAD = 'GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-Slow: '
export const SLOW_BODY = 'POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
  'Content-Length: 100000\r\n\r\n{'

// n connections kept open (one closed is opened again after a second): kinds 0 idle (nothing
// sent), 1 trickling a request head, 2 trickling a body after a whole head; by default a third
// of each.
export function flood(addr, n, { kinds = [0, 1, 2] } = {}) {
  const socks = new Set()
  let stopped = false
  let opened = 0
  const open = (kind) => {
    if (stopped) return
    const s = net.connect(addr)
    s.kind = kind
    opened++
    s.on('connect', () => {
      s.up = true
      if (kind === 1) s.write(PARTIAL_HEAD)
      if (kind === 2) s.write(SLOW_BODY)
    })
    s.on('data', () => {})
    s.on('error', () => {})
    s.on('close', () => { socks.delete(s); if (!stopped) setTimeout(() => open(kind), 1000) })
    socks.add(s)
  }
  const iv = setInterval(() => { for (const s of socks) if (s.up && s.kind && s.writable) s.write('a') }, 2000)
  return {
    // open all n; settle: then wait (up to 10 s) until 95% are connected
    async start({ settle = true } = {}) {
      for (let i = 0; i < n; i++) {
        open(kinds[i % kinds.length])
        if (i % 200 === 199) await sleep(50)
      }
      for (let i = 0; settle && i < 100 && [...socks].filter((s) => s.up).length < n * 0.95; i++) await sleep(100)
    },
    open: () => [...socks].filter((s) => s.up).length,
    opened: () => opened,
    stop() { stopped = true; clearInterval(iv); for (const s of socks) s.destroy() },
  }
}
