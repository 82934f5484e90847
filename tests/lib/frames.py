"""The agent channel's frames (api/frames.md), both sides, for the test tools written in Python:
the stand-in agent of tests/integration/fixtures/fake-jailer.py and the development client
tests/unit/agent/agent_client.py.

A frame is a 4-byte big-endian payload length, a type byte and the payload. A request head is
port, method, path, query and headers; a response head is status and headers; strings are a
2-byte big-endian length and the bytes.
"""
import struct

REQ_HEAD, RESP_HEAD, DATA, END = 1, 2, 3, 4


def enc_str(x):
    x = x.encode() if isinstance(x, str) else x
    return struct.pack(">H", len(x)) + x


def _dec_str(b, o):
    (n,) = struct.unpack_from(">H", b, o)
    return b[o + 2:o + 2 + n].decode(), o + 2 + n


def _dec_headers(b, o):
    (n,) = struct.unpack_from(">H", b, o)
    o += 2
    hs = []
    for _ in range(n):
        k, o = _dec_str(b, o)
        v, o = _dec_str(b, o)
        hs.append((k, v))
    return hs


def frame(t, payload=b""):
    return struct.pack(">IB", len(payload), t) + payload


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        c = sock.recv(n - len(buf))
        if not c:
            raise EOFError("eof after %d of %d bytes" % (len(buf), n))
        buf += c
    return buf


def read_frame(sock):
    """The next frame on sock: (type, payload)."""
    n, t = struct.unpack(">IB", recv_exact(sock, 5))
    return t, recv_exact(sock, n) if n else b""


def req_head(port, method, path, query="", headers=()):
    out = struct.pack(">H", port) + enc_str(method) + enc_str(path) + enc_str(query)
    out += struct.pack(">H", len(headers))
    for k, v in headers:
        out += enc_str(k) + enc_str(v)
    return out


def parse_req_head(p):
    """A request head's payload: {port, method, path, query, headers: [(name, value)]}."""
    (port,) = struct.unpack_from(">H", p, 0)
    method, o = _dec_str(p, 2)
    path, o = _dec_str(p, o)
    query, o = _dec_str(p, o)
    return dict(port=port, method=method, path=path, query=query, headers=_dec_headers(p, o))


def resp_head(status, headers):
    return struct.pack(">HH", status, len(headers)) + b"".join(
        enc_str(k) + enc_str(v) for k, v in headers)


def parse_resp_head(p):
    """A response head's payload: (status, [(name, value)])."""
    (status,) = struct.unpack_from(">H", p, 0)
    return status, _dec_headers(p, 2)
