// Requests through the egress services, one figure each (server/egress/README.md "Egress",
// server/template-build/README.md "Egress"; the HTTPS proxy's are transform-bench.mjs'). Starts its own
// sbxd (SBX_BUILD, default build/) and the egress tests' outside namespace
// (tests/integration/egress-net.mjs), then prints:
//   - DNS: N queries one after another from inside a sandbox to its resolver (python, one UDP
//     socket, the query built by hand, the round trip timed): a name its allowOut lists (sent
//     upstream, the answer's addresses pinned before it is passed on), any name from a sandbox
//     with the internet (sent upstream, nothing pinned), a name refused (answered at once);
//   - the build proxy: a template build step that makes N plain HTTP requests one after another
//     through it (curl's time_total, a new connection each) to the outside's server, and a
//     100 MB download, best of 3.
// Usage (root): node bench/egress-path-bench.mjs [N=200]
import { OUT, e2b, fmt, withEgressSbxd } from './egress-lib.mjs'

const N = Number(process.argv[2] || 200)

// N queries for name, each its own id; time of each round trip in ms (0: no answer within 2 s)
const dnsScript = (name) => `
import random, socket, struct, time
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
q = b"".join(bytes([len(p)]) + p.encode() for p in "${name}".split(".")) + b"\\0"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for _ in range(${N}):
    qid = random.randrange(65536)
    t0 = time.perf_counter()
    s.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", 1, 1), (ns, 53))
    try:
        while struct.unpack(">H", s.recv(4096)[:2])[0] != qid:
            pass
        print("%.3f" % ((time.perf_counter() - t0) * 1000))
    except socket.timeout:
        print(0)
`
async function dns(s, name) {
  const r = await s.commands.run(`python3 -c '${dnsScript(name)}'`, { timeoutMs: 600000 })
  const xs = r.stdout.trim().split('\n').map(Number)
  const lost = xs.filter((x) => x === 0).length
  return `${fmt(xs.filter((x) => x > 0))}${lost ? `, ${lost} unanswered` : ''}`
}

// The build proxy reaches only the hosts SBX_BUILD_EGRESS_HOSTS names: here the outside's.
process.env.SBX_BUILD_EGRESS_HOSTS = OUT.a4
await withEgressSbxd([], async (d, opts) => {
  const listed = await e2b.Sandbox.create('base', { ...opts, network: { allowOut: ['www.allowed.test'] } })
  const open = await e2b.Sandbox.create('base', { ...opts, allowInternetAccess: true })
  await dns(listed, 'www.allowed.test') // warm-up
  console.log(`DNS, a listed name (pinned):     ${await dns(listed, 'www.allowed.test')}`)
  console.log(`DNS, any name, internet:         ${await dns(open, 'other.test')}`)
  console.log(`DNS, a name refused:             ${await dns(listed, 'other.test')}`)
  await listed.kill()
  await open.kill()

  const logs = []
  const token = `${process.pid}-${Date.now()}` // never from the cache
  const tpl = e2b.Template().fromTemplate('base')
    .runCmd(`echo ${token}; for i in $(seq ${N}); do curl -s -o /dev/null -w 'rtt %{time_total}\\n' http://${OUT.a4}/; done; ` +
      `for i in 1 2 3; do curl -s -o /dev/null -w 'speed %{speed_download}\\n' http://${OUT.a4}/bytes/100000000; done`)
  await e2b.Template.build(tpl, `egress-path-${token}`, { ...opts, onBuildLogs: (e) => logs.push(e.message) })
  const rtt = logs.flatMap((l) => [...l.matchAll(/rtt ([\d.]+)/g)].map((m) => Number(m[1]) * 1000))
  const speed = logs.flatMap((l) => [...l.matchAll(/speed ([\d.]+)/g)].map((m) => Number(m[1]) / 1e6))
  console.log(`build proxy, plain HTTP GET:     ${fmt(rtt)}`)
  console.log(`build proxy, 100 MB:             best ${Math.max(...speed).toFixed(0)} MB/s (${speed.map((x) => x.toFixed(0)).join(', ')})`)
}, { timeoutMs: 600000 })
