#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The docs suite: what docs/ and the READMEs name must exist.

Checks every tracked Markdown file (docs/, the READMEs, api/*.md):
  - files:     every `path/with/slash.ext` or `folder/` in backticks exists, read from the
               repository root, the document's folder or one of its parents, or a component's
               folder; a bare `name.c` (a source file: .c .h .mjs .py .sh ...) exists somewhere
               in the tree. Runtime paths (with <...>, *, $, ..., absolute) are not files of
               the tree and are left alone.
  - functions: every `name()` in backticks is a name the sources use (defined or called), so a
               renamed or removed function shows up here.
  - steps:     the jailer's numbered steps in jailer/README.md are the STEPS() list of
               jailer/jail-run.c, in order; every `step_x()` (N) in the docs carries its number.
  - listings:  a folder's README names each of the folder's .c files.
Prints each finding as FILE:LINE: message and exits 1 when there is one.
"""
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_EXT = (".c", ".h", ".mjs", ".js", ".ts", ".py", ".sh", ".R", ".java", ".mts")
PATH_EXT = SOURCE_EXT + (".md", ".yaml", ".yml", ".json", ".conf", ".txt", ".build",
                         ".service", ".css", ".html", ".toml", ".in", ".dict")
COMPONENTS = ["server", "guest-agent", "jailer", "api", "common", "cli", "mcp", "templates",
              "tests", "bench", "scripts", "docs", "deploy", "clients", "console", "debian"]
SKIP_DOCS = ("tests/fuzz/corpus/", "node_modules/")
# Files of other projects that the docs name as their sources (E2B's API spec and SDK, the
# Linux kernel), and folders that builds make: not files of this tree.
ELSEWHERE = {"spec/openapi.yml", "src/volume/", "signature.ts", "kernel/ucount.c",
             "packages/envd", "tests/fuzz/crashers/", "build-fuzz/"}

findings = []


def tracked():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=TOP,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if os.path.exists(os.path.join(TOP, f))]


FILES = tracked()
FILESET = set(FILES)
DIRSET = {os.path.dirname(f) for f in FILES}
for d in list(DIRSET):
    while d:
        d = os.path.dirname(d)
        DIRSET.add(d)
BASENAMES = {os.path.basename(f) for f in FILES}


def source_text():
    chunks = []
    for f in FILES:
        if f.endswith(SOURCE_EXT) and not f.startswith("tests/fuzz/corpus/"):
            try:
                with open(os.path.join(TOP, f), encoding="utf-8", errors="replace") as fh:
                    chunks.append(fh.read())
            except OSError:
                pass
    return "\n".join(chunks)


SOURCES = source_text()
IDENTS = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", SOURCES))


def say(doc, line, msg):
    findings.append(f"{doc}:{line}: {msg}")


def exists(doc, token):
    token = token.rstrip("/")
    if not token:
        return True
    bases = [""]
    d = os.path.dirname(doc)
    while True:
        bases.append(d)
        if not d:
            break
        d = os.path.dirname(d)
    bases += COMPONENTS
    for b in bases:
        p = os.path.normpath(os.path.join(b, token)) if b else os.path.normpath(token)
        if p in FILESET or p in DIRSET:
            return True
    return False


PATHISH = re.compile(r"^[A-Za-z0-9_.\-/+]+$")
FUNC = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(\)$")
STEP_REF = re.compile(r"`step_([a-z_]+)\(\)`\s*\((\d+)")


def check_inline(doc, lineno, span):
    m = FUNC.match(span)
    if m:
        if m.group(1) not in IDENTS:
            say(doc, lineno, f"`{span}`: no source file names {m.group(1)}")
        return
    if not PATHISH.match(span) or span.startswith(("/", ".", "-", "+")) or ".." in span:
        return
    if "//" in span or re.match(r"^\d", span) or span in ELSEWHERE:
        return
    # Placeholders (templates/NAME/, DEST/x) and single folder names (runtime dirs, cgroups).
    parts = span.rstrip("/").split("/")
    if any(re.fullmatch(r"[A-Z][A-Z_]{2,}", p) for p in parts):
        return
    if span.endswith("/") and len(parts) == 1:
        return
    if "/" in span:
        last = span.rstrip("/").rsplit("/", 1)[-1]
        is_dir = span.endswith("/")
        if not is_dir and not last.endswith(PATH_EXT):
            return
        # A route or URL path rather than a file: /v1/..., http://, .../{id}
        if span.startswith(("v1/", "v2/", "http")):
            return
        # An example or runtime path (d/n/f.txt, sandboxes/ID/…): its first folder is none of
        # the tree's, from wherever the document could mean it.
        if not exists(doc, parts[0] + "/"):
            return
        if not exists(doc, span):
            say(doc, lineno, f"`{span}`: no such file or folder")
    elif span.endswith(SOURCE_EXT):
        if span not in BASENAMES:
            say(doc, lineno, f"`{span}`: no such file in the tree")


def check_doc(doc):
    with open(os.path.join(TOP, doc), encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    fenced = False
    for i, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for span in re.findall(r"`([^`\n]+)`", line):
            check_inline(doc, i, span.strip())


def jailer_steps():
    src = open(os.path.join(TOP, "jailer/jail-run.c"), encoding="utf-8").read()
    code = [name for _, name in re.findall(r'X\(([A-Z_]+), "([a-z-]+)"\)', src)]
    readme = open(os.path.join(TOP, "jailer/README.md"), encoding="utf-8").read().split("\n")
    listed = []
    for i, line in enumerate(readme, 1):
        m = re.match(r"^(\d+)\. \*\*([a-z-]+)\*\*", line)
        if m and (not listed or int(m.group(1)) == listed[-1][0] + 1):
            listed.append((int(m.group(1)), m.group(2), i))
        if listed and len(listed) == len(code):
            break
    for idx, name in enumerate(code, 1):
        hit = [x for x in listed if x[0] == idx]
        if not hit or hit[0][1] != name:
            where = hit[0][2] if hit else 1
            say("jailer/README.md", where,
                f"step {idx} is '{name}' in jail-run.c's STEPS(), the README says "
                f"'{hit[0][1] if hit else 'nothing'}'")
    number = {name.replace("-", "_"): idx for idx, name in enumerate(code, 1)}
    for doc in FILES:
        if not doc.endswith(".md") or doc.startswith(SKIP_DOCS):
            continue
        text = open(os.path.join(TOP, doc), encoding="utf-8").read()
        for m in STEP_REF.finditer(text):
            name, n = m.group(1), int(m.group(2))
            line = text.count("\n", 0, m.start()) + 1
            if name not in number:
                say(doc, line, f"`step_{name}()`: the jailer has no step '{name}'")
            elif number[name] != n:
                say(doc, line, f"`step_{name}()` is step {number[name]}, not {n}")


def listings():
    """A folder's README names its C files, and its subfolders that have no README."""
    by_dir = {}
    for f in FILES:
        d = os.path.dirname(f)
        if f.endswith(".c") and (not f.startswith("tests/") or d == "tests/fuzz"):
            by_dir.setdefault(d, set()).add(os.path.basename(f)[:-2])
        parent = os.path.dirname(d)
        if d and not f.startswith(("tests/", "bench/")) and f.endswith(SOURCE_EXT) and \
                os.path.join(d, "README.md") not in FILESET:
            # A subfolder without a README of its own: its parent's README names it.
            while parent and os.path.join(parent, "README.md") not in FILESET:
                d, parent = parent, os.path.dirname(parent)
            if parent:
                rel = os.path.relpath(os.path.dirname(f), parent)
                for i in range(1, rel.count("/") + 2):
                    by_dir.setdefault(parent, set()).add("/".join(rel.split("/")[:i]) + "/")
    for d, names in sorted(by_dir.items()):
        readme = os.path.join(d, "README.md")
        if readme not in FILESET:
            continue
        text = open(os.path.join(TOP, readme), encoding="utf-8").read()
        for n in sorted(names):
            if n.endswith("/"):
                ok = re.search(r"(?<![A-Za-z0-9_-])" + re.escape(n.rstrip("/")) + r"(/|`)", text)
            elif d == "tests/fuzz" and n.startswith("fuzz-"):
                # the harness table names each by what follows "fuzz-"
                ok = re.search(r"`" + re.escape(n[5:]) + r"`", text) or n == "fuzz-replay"
            else:
                ok = re.search(r"(?<![A-Za-z0-9_-])" + re.escape(n) + r"(\.c|\.h|\b)", text)
            if not ok:
                what = "subfolder" if n.endswith("/") else "file " + n + ".c"
                say(readme, 1, f"{d}/ has the {what}{n if n.endswith('/') else ''} "
                               "but its README does not name it")


def main():
    for doc in FILES:
        if doc.endswith(".md") and not doc.startswith(SKIP_DOCS):
            check_doc(doc)
    jailer_steps()
    listings()
    for f in findings:
        print(f)
    print(f"check-docs: {len(findings)} finding(s)", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
