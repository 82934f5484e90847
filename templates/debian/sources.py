#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Print the host's Debian apt sources for its own release as one-line sources.list entries.

templates/debian/sources.py [--uris]

Reads /etc/apt/sources.list and /etc/apt/sources.list.d/*.list and *.sources (deb822), keeps
the "deb" entries whose suite is the host's release (VERSION_CODENAME of /etc/os-release) or its
-updates / -security suites, and prints them as "deb [signed-by=...] URI SUITE COMPONENTS"
(what mmdebstrap takes as a sources.list). Third-party repositories (other suites, or files
that name no Debian suite of this release) are left out: their keys are not in the rootfs.
With --uris: one "URI SUITE" per line instead (the reachability check). Exits 1 when nothing
is left.
"""
import glob
import os
import sys

ROOT = os.environ.get("SBX_APT_ROOT", "/")


def codename():
    with open(os.path.join(ROOT, "etc/os-release")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k == "VERSION_CODENAME":
                return v.strip('"')
    return ""


def one_line(path):
    for raw in open(path, errors="replace"):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if words[0] != "deb":
            continue
        words = words[1:]
        opts = ""
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                opts += words.pop(0) + " "
            opts += words.pop(0) if words else ""
        if len(words) < 2:
            continue
        yield opts.strip("[] "), words[0], [words[1]], words[2:]


def deb822(path):
    stanzas, cur = [], {}
    key = None
    for raw in open(path, errors="replace"):
        line = raw.rstrip("\n")
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                stanzas.append(cur)
            cur, key = {}, None
            continue
        if line[0] in " \t" and key:
            cur[key] += " " + line.strip()
            continue
        key, _, v = line.partition(":")
        key = key.strip().lower()
        cur[key] = v.strip()
    if cur:
        stanzas.append(cur)
    for s in stanzas:
        if "deb" not in s.get("types", "").split() or s.get("enabled", "yes") == "no":
            continue
        opts = ""
        if s.get("signed-by") and "\n" not in s["signed-by"] and s["signed-by"].startswith("/"):
            opts = "signed-by=" + s["signed-by"]
        for uri in s.get("uris", "").split():
            yield opts, uri, s.get("suites", "").split(), s.get("components", "").split()


def main():
    release = codename()
    if not release:
        print("sources.py: no VERSION_CODENAME in /etc/os-release", file=sys.stderr)
        return 1
    wanted = {release, release + "-updates", release + "-security"}
    files = [os.path.join(ROOT, "etc/apt/sources.list")]
    files += sorted(glob.glob(os.path.join(ROOT, "etc/apt/sources.list.d/*.list")))
    files += sorted(glob.glob(os.path.join(ROOT, "etc/apt/sources.list.d/*.sources")))
    out = []
    for f in files:
        if not os.path.isfile(f):
            continue
        entries = deb822(f) if f.endswith(".sources") else one_line(f)
        for opts, uri, suites, comps in entries:
            for suite in suites:
                if suite in wanted and comps:
                    out.append((opts, uri.rstrip("/"), suite, comps))
    if not out:
        print("sources.py: no apt source of Debian %s on this host" % release, file=sys.stderr)
        return 1
    seen = set()
    for opts, uri, suite, comps in out:
        if (uri, suite) in seen:
            continue
        seen.add((uri, suite))
        if "--uris" in sys.argv[1:]:
            print(uri, suite)
        else:
            print("deb %s%s %s %s" % ("[%s] " % opts if opts else "", uri, suite, " ".join(comps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
