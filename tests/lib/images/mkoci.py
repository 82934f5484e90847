#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write an OCI image layout from root file system trees or tarballs, as a registry or
`docker save` would carry them.

mkoci.py OUT --layer PATH [--layer PATH ...] [--compress gzip|zstd|none]
         [--env K=V ...] [--cmd JSON] [--entrypoint JSON] [--workdir DIR] [--user USER]
         [--tag TAG]

Each --layer is a directory (packed as a tar: sorted, numeric owners, fixed mtimes, hard links
kept) or an existing .tar; layers are listed bottom first. OUT becomes an OCI image layout
(oci-layout, index.json, blobs/sha256/...) with one manifest for linux/amd64, tagged TAG
(default "latest"): skopeo copies it on with `oci:OUT:TAG`.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile

MTIME = 1700000000


def tar_dir(root, out):
    """Pack the tree under root into the file out, deterministically (sorted, parents first)."""
    seen = {}
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir != ".":
                add(tar, root, rel_dir, seen)
            # Symbolic links to directories are listed with the directories and not walked.
            links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
            for n in sorted(filenames + links):
                add(tar, root, os.path.normpath(os.path.join(rel_dir, n)), seen)


def add(tar, root, rel, seen):
    full = os.path.join(root, rel)
    st = os.lstat(full)
    ti = tar.gettarinfo(full, arcname=rel)
    ti.mtime = MTIME
    ti.uname = ti.gname = ""
    key = (st.st_dev, st.st_ino)
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        if key in seen:
            ti.type = tarfile.LNKTYPE
            ti.linkname = seen[key]
            ti.size = 0
            tar.addfile(ti)
            return
        seen[key] = rel
    if ti.isreg():
        with open(full, "rb") as f:
            tar.addfile(ti, f)
    else:
        tar.addfile(ti)


class Layout:
    def __init__(self, out):
        self.out = out
        os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)

    def blob_file(self, path):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
        dest = os.path.join(self.out, "blobs", "sha256", digest)
        shutil.move(path, dest)
        return "sha256:" + digest, os.path.getsize(dest)

    def blob_bytes(self, data):
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(self.out, "blobs", "sha256", digest), "wb") as f:
            f.write(data)
        return "sha256:" + digest, len(data)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layer", action="append", required=True)
    ap.add_argument("--compress", choices=["gzip", "zstd", "none"], default="gzip")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--cmd")
    ap.add_argument("--entrypoint")
    ap.add_argument("--workdir")
    ap.add_argument("--user")
    ap.add_argument("--tag", default="latest")
    a = ap.parse_args()

    lay = Layout(a.out)
    tmp = tempfile.mkdtemp(dir=a.out)
    layers, diff_ids = [], []
    media = {
        "gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
        "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
        "none": "application/vnd.oci.image.layer.v1.tar",
    }[a.compress]
    for i, src in enumerate(a.layer):
        raw = os.path.join(tmp, f"layer{i}.tar")
        if os.path.isdir(src):
            tar_dir(src, raw)
        else:
            shutil.copyfile(src, raw)
        diff_ids.append(sha256_file(raw))
        if a.compress == "gzip":
            packed = raw + ".gz"
            with open(raw, "rb") as fi, open(packed, "wb") as fo:
                with gzip.GzipFile(fileobj=fo, mode="wb", mtime=0) as gz:
                    shutil.copyfileobj(fi, gz, 1 << 20)
        elif a.compress == "zstd":
            packed = raw + ".zst"
            subprocess.run(["zstd", "-q", "-3", "-o", packed, raw], check=True)
        else:
            packed = raw
        digest, size = lay.blob_file(packed)
        layers.append({"mediaType": media, "digest": digest, "size": size})
    shutil.rmtree(tmp)

    cfg = {"Env": a.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if a.cmd:
        cfg["Cmd"] = json.loads(a.cmd)
    if a.entrypoint:
        cfg["Entrypoint"] = json.loads(a.entrypoint)
    if a.workdir:
        cfg["WorkingDir"] = a.workdir
    if a.user:
        cfg["User"] = a.user
    config = {
        "created": "2023-11-14T22:13:20Z",
        "architecture": "amd64",
        "os": "linux",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": "2023-11-14T22:13:20Z", "created_by": "mkoci.py"}
                    for _ in diff_ids],
    }
    cdigest, csize = lay.blob_bytes(json.dumps(config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": cdigest, "size": csize},
        "layers": layers,
    }
    mdigest, msize = lay.blob_bytes(json.dumps(manifest, sort_keys=True).encode())
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": mdigest, "size": msize,
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {"org.opencontainers.image.ref.name": a.tag},
        }],
    }
    with open(os.path.join(a.out, "index.json"), "w") as f:
        json.dump(index, f)
    with open(os.path.join(a.out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


if __name__ == "__main__":
    main()
