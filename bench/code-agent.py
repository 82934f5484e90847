#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""runCode('1+1') round trips at the agent: frames (api/frames.md) straight on a sandbox's
agent.sock, no HTTP and no sbxd in the path. bench/code-bench.mjs runs it against a real
sandbox; by hand (root, the socket is 0600):
    /usr/bin/python3 bench/code-agent.py <state>/sandboxes/<id>/agent.sock [N] [code]
Prints p50/p90/p99 in ms. Nothing here asserts a time."""
import json
import socket
import struct
import sys
import time


def s16(b):
    return struct.pack(">H", len(b)) + b


def frame(t, payload=b""):
    return struct.pack(">IB", len(payload), t) + payload


def request(path, body):
    head = struct.pack(">H", 49999) + s16(b"POST") + s16(b"/execute") + s16(b"") + struct.pack(">H", 0)
    return frame(1, head) + frame(3, body) + frame(4)


def call(path, msg):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(msg)
    buf, out = b"", []
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("agent closed early")
        buf += chunk
        while len(buf) >= 5:
            n, t = struct.unpack(">IB", buf[:5])
            if len(buf) < 5 + n:
                break
            if t == 3:
                out.append(buf[5:5 + n])
            buf = buf[5 + n:]
            if t == 4:
                s.close()
                return b"".join(out)


def main():
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    code = sys.argv[3] if len(sys.argv) > 3 else "1+1"
    msg = request(path, json.dumps({"code": code}).encode())
    for _ in range(50):
        call(path, msg)
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = call(path, msg)
        ts.append((time.perf_counter() - t0) * 1e3)
    assert b'"end_of_execution"' in out, out
    ts.sort()
    print("p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  (n=%d)" % (ts[n // 2], ts[n * 9 // 10], ts[n * 99 // 100], n))


if __name__ == "__main__":
    main()
