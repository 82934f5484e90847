#!/usr/bin/env python3
"""Development client for sbx-agent: speaks the agent-channel frames (api/frames.md).

Library use:  from agent_client import Agent;  a = Agent.start(binary)  ...  a.request(...)
Not a test by itself; the manual checks in the README of guest-agent use it.
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
from frames import (DATA, END, REQ_HEAD, RESP_HEAD, frame,  # noqa: E402  (tests/lib)
                    parse_resp_head, read_frame, req_head)


def envelopes(data):
    """Split a Connect stream body into (flags, json bytes)."""
    out, off = [], 0
    while off + 5 <= len(data):
        f, n = struct.unpack(">BI", data[off:off + 5])
        out.append((f, data[off + 5:off + 5 + n]))
        off += 5 + n
    return out


def envelope(msg, flags=0):
    return struct.pack(">BI", flags, len(msg)) + msg


class Agent:
    def __init__(self, proc, path, tmp):
        self.proc, self.path, self.tmp = proc, path, tmp

    @classmethod
    def start(cls, binary, wrapper=(), env=None):
        tmp = tempfile.mkdtemp(prefix="sbx-agent-")
        path = os.path.join(tmp, "agent.sock")
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(path)
        ls.listen(512)
        fd = ls.fileno()

        def pre():
            os.dup2(fd, 3)
        e = dict(os.environ if env is None else env)
        e["SBX_AGENT_LISTEN_FD"] = "3"
        proc = subprocess.Popen(list(wrapper) + [binary], preexec_fn=pre, pass_fds=(fd,),
                                env=e)
        ls.close()
        return cls(proc, path, tmp)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        return s

    def send_request(self, port, method, path, query="", headers=(), body=b"", chunk=65536):
        s = self.connect()
        if isinstance(body, (bytes, bytearray)):
            body = [body[i:i + chunk] for i in range(0, len(body), chunk)] if body else []
        try:
            s.sendall(frame(REQ_HEAD, req_head(port, method, path, query, headers)))
            for c in body:
                if c:
                    s.sendall(frame(DATA, bytes(c)))
            s.sendall(frame(END))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent answered early (e.g. 503, 401) and closed: read its answer
        return s

    def request(self, port, method, path, query="", headers=(), body=b"", chunk=65536):
        s = self.send_request(port, method, path, query, headers, body, chunk)
        t, p = read_frame(s)
        assert t == RESP_HEAD, t
        status, hs = parse_resp_head(p)
        data = []
        while True:
            t, p = read_frame(s)
            if t == END:
                break
            assert t == DATA
            data.append(p)
        s.close()
        return status, dict(hs), b"".join(data)

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(10)
