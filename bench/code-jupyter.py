#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Jupyter side of bench/code-bench.mjs: Debian's ipykernel driven by jupyter_client on the
same machine (no sandbox, no HTTP: the most favourable setting for Jupyter). Prints kernel start
time, the first execution importing pandas + matplotlib in a new kernel, execute('1+1') round
trips on a warm kernel, and the kernel's idle memory. Nothing here asserts a time.
    /usr/bin/python3 bench/code-jupyter.py [N]"""
import os
import sys
import time

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
from jupyter_client.manager import start_new_kernel  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
IMPORT = 'import pandas as pd\nimport matplotlib.pyplot as plt\npd.DataFrame({"a": [1, 2]}).shape'


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def fmt(xs):
    return "p50 %.2f ms  p99 %.2f ms  (n=%d)" % (pct(xs, 50), pct(xs, 99), len(xs))


def run(kc, code):
    out = {}

    def hook(msg):
        if msg["msg_type"] == "execute_result":
            out["text"] = msg["content"]["data"].get("text/plain")

    kc.execute_interactive(code, output_hook=hook, timeout=60)
    return out.get("text")


def memory(pid):
    status = open("/proc/%d/status" % pid).read()
    rss = int(status.split("VmRSS:")[1].split()[0])
    pss = int(open("/proc/%d/smaps_rollup" % pid).read().split("Pss:")[1].split()[0])
    return rss / 1024, pss / 1024


starts, firsts = [], []
for _ in range(5):
    t0 = time.perf_counter()
    km, kc = start_new_kernel(kernel_name="python3")
    t1 = time.perf_counter()
    assert run(kc, IMPORT) == "(2, 1)"
    t2 = time.perf_counter()
    starts.append((t1 - t0) * 1e3)
    firsts.append((t2 - t1) * 1e3)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
print("jupyter: kernel start (until ready) %s" % fmt(starts))
print("jupyter: first execute importing pandas+matplotlib in a new kernel %s" % fmt(firsts))
print("jupyter: start + first execute p50 %.1f ms" % (pct(starts, 50) + pct(firsts, 50)))

km, kc = start_new_kernel(kernel_name="python3")
try:
    pid = km.provisioner.process.pid if km.provisioner else km.kernel.pid
    time.sleep(1)
    rss, pss = memory(pid)
    print("jupyter: idle kernel memory rss %.1f MiB pss %.1f MiB" % (rss, pss))
    run(kc, IMPORT)
    time.sleep(1)
    rss, pss = memory(pid)
    print("jupyter: idle kernel with pandas+matplotlib imported rss %.1f MiB pss %.1f MiB" % (rss, pss))
    for _ in range(50):
        run(kc, "1+1")
    ts = []
    for _ in range(N):
        t0 = time.perf_counter()
        assert run(kc, "1+1") == "2"
        ts.append((time.perf_counter() - t0) * 1e3)
    print("jupyter: execute('1+1') warm, jupyter_client in-process %s" % fmt(ts))
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
