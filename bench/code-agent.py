#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Code-interpreter round trips at the agent: frames (api/frames.md) straight on a sandbox's
agent.sock, no HTTP and no sbxd in the path. bench/code-bench.mjs runs it against a real
sandbox; by hand (root, the socket is 0600):
    /usr/bin/python3 bench/code-agent.py SOCK [N] [CODE] [LANGUAGE]
        N /execute round trips of CODE (default 1+1) on LANGUAGE's default context (python)
    /usr/bin/python3 bench/code-agent.py --create SOCK LANGUAGE [N]
        N cold contexts: POST /contexts (which answers once the kernel is ready), then DELETE
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


def request(method, path, body):
    head = struct.pack(">H", 49999) + s16(method) + s16(path) + s16(b"") + struct.pack(">H", 0)
    return frame(1, head) + (frame(3, body) if body else b"") + frame(4)


def call(path, msg):
    """The answer's status and body."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(msg)
    buf, out, status = b"", [], None
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("agent closed early")
        buf += chunk
        while len(buf) >= 5:
            n, t = struct.unpack(">IB", buf[:5])
            if len(buf) < 5 + n:
                break
            if t == 2 and status is None:
                status = struct.unpack(">H", buf[5:7])[0]
            if t == 3:
                out.append(buf[5:5 + n])
            buf = buf[5 + n:]
            if t == 4:
                s.close()
                return status, b"".join(out)


def report(ts):
    n = len(ts)
    ts.sort()
    print("p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  (n=%d)" % (ts[n // 2], ts[n * 9 // 10], ts[n * 99 // 100], n))


def executes(path, n, code, language):
    body = {"code": code}
    if language:
        body["language"] = language
    msg = request(b"POST", b"/execute", json.dumps(body).encode())
    for _ in range(50):
        call(path, msg)
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        _, out = call(path, msg)
        ts.append((time.perf_counter() - t0) * 1e3)
    assert b'"end_of_execution"' in out and b'"error"' not in out, out
    report(ts)


def creates(path, language, n):
    msg = request(b"POST", b"/contexts", json.dumps({"language": language}).encode())
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        status, out = call(path, msg)
        ts.append((time.perf_counter() - t0) * 1e3)
        assert status == 200, (status, out)
        ctx = json.loads(out)["id"]
        call(path, request(b"DELETE", b"/contexts/" + ctx.encode(), b""))
    report(ts)


def main():
    if sys.argv[1] == "--create":
        creates(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 5)
        return
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    code = sys.argv[3] if len(sys.argv) > 3 else "1+1"
    language = sys.argv[4] if len(sys.argv) > 4 else None
    executes(path, n, code, language)


if __name__ == "__main__":
    main()
