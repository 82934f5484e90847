#!/usr/bin/env python3
"""Offline checks of the deploy files (no cluster, no nomad binary needed here).

Kubernetes (deploy/kubernetes/*.yaml): parsed with python3-yaml; every document has
apiVersion, kind and metadata.name; a DaemonSet's selector matches its pod labels, every
volumeMount names a volume, every env valueFrom names a ConfigMap/Secret of the file; a
Service's selector matches a workload's pod labels and its targetPort names a container port.
Nomad (deploy/nomad/*.nomad): HCL is not parsed by any validator available offline here; the
check is structural: balanced braces, brackets and quotes, a job of type "system", and each
var.NAME used declared as a variable. The Containerfile (deploy/Containerfile): a Debian base,
the package copied in from a build argument and installed with apt-get (its dependencies from
the archive), sbxd with the package's config file as the entry point. Exit 1 when any file has
problems. Whether the paths these files name are in the package is the package suite's check
(tests/package/run.sh)."""
import glob
import os
import re
import sys

import yaml

here = os.path.dirname(os.path.abspath(__file__))
problems = []


def k8s(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    names = {(d.get("kind"), (d.get("metadata") or {}).get("name")) for d in docs}
    pod_labels = []
    for d in docs:
        for f in ("apiVersion", "kind"):
            if f not in d:
                problems.append(f"{path}: a document without {f}")
        if not (d.get("metadata") or {}).get("name"):
            problems.append(f"{path}: {d.get('kind')} without metadata.name")
        if d.get("kind") in ("DaemonSet", "Deployment", "StatefulSet"):
            spec = d["spec"]
            labels = spec["template"]["metadata"]["labels"]
            pod_labels.append((labels, spec["template"]["spec"]))
            for k, v in spec["selector"]["matchLabels"].items():
                if labels.get(k) != v:
                    problems.append(f"{path}: selector {k}={v} does not match the pod labels")
            pod = spec["template"]["spec"]
            vols = {v["name"] for v in pod.get("volumes", [])}
            for c in pod.get("containers", []) + pod.get("initContainers", []):
                for m in c.get("volumeMounts", []):
                    if m["name"] not in vols:
                        problems.append(f"{path}: {c['name']} mounts unknown volume {m['name']}")
                for e in c.get("env", []):
                    vf = e.get("valueFrom") or {}
                    for ref, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                        if ref in vf and (kind, vf[ref]["name"]) not in names:
                            problems.append(f"{path}: {e['name']} names unknown {kind}")
            for v in pod.get("volumes", []):
                if "secret" in v and ("Secret", v["secret"]["secretName"]) not in names:
                    problems.append(f"{path}: volume {v['name']} names an unknown Secret")
    for d in docs:
        if d.get("kind") != "Service":
            continue
        sel = d["spec"]["selector"]
        match = [p for labels, p in pod_labels if all(labels.get(k) == v for k, v in sel.items())]
        if not match:
            problems.append(f"{path}: Service {d['metadata']['name']} selects no pods")
            continue
        ports = {p.get("name") for c in match[0]["containers"] for p in c.get("ports", [])}
        for p in d["spec"]["ports"]:
            t = p.get("targetPort")
            if isinstance(t, str) and t not in ports:
                problems.append(f"{path}: targetPort {t} is no container port")


def nomad(path):
    text = open(path).read()
    body = re.sub(r"#.*", "", re.sub(r'"(\\.|[^"\\])*"', '""', text))
    if text.count('"') % 2:
        problems.append(f"{path}: unbalanced quotes")
    for o, c in ("{}", "[]", "()"):
        depth = 0
        for ch in body:
            depth += ch == o
            depth -= ch == c
            if depth < 0:
                break
        if depth != 0:
            problems.append(f"{path}: unbalanced {o}{c}")
    if not re.search(r'^job\s+"[^"]+"\s*{', text, re.M):
        problems.append(f"{path}: no job block")
    if not re.search(r'type\s*=\s*"system"', text):
        problems.append(f"{path}: not a system job")
    declared = set(re.findall(r'^variable\s+"([^"]+)"', text, re.M))
    for v in set(re.findall(r"var\.([A-Za-z_][A-Za-z0-9_]*)", text)):
        if v not in declared:
            problems.append(f"{path}: var.{v} is not declared")


def containerfile(path):
    text = open(path).read()
    lines = [l.strip() for l in re.sub(r"\\\n", " ", text).splitlines()
             if l.strip() and not l.lstrip().startswith("#")]
    verbs = [l.split()[0].upper() for l in lines]
    if not lines or verbs[0] != "FROM" or not re.match(r"FROM\s+debian:", lines[0]):
        problems.append(f"{path}: does not start FROM a Debian image")
    arg = next((l.split()[1] for l in lines if l.upper().startswith("ARG ")), None)
    copy = next((l for l in lines if l.upper().startswith("COPY ")), "")
    if not arg or "${%s}" % arg not in copy:
        problems.append(f"{path}: the package is not copied in from a build argument")
    dest = copy.split()[-1] if copy else None
    run = " ".join(l for l in lines if l.upper().startswith("RUN "))
    if not dest or not re.search(r"apt-get install [^&]*" + re.escape(dest), run):
        problems.append(f"{path}: the copied package is not installed with apt-get")
    entry = next((l for l in lines if l.upper().startswith("ENTRYPOINT ")), "")
    if '"/usr/sbin/sbxd"' not in entry or '"/etc/sbx/sbxd.conf"' not in entry:
        problems.append(f"{path}: the entry point is not sbxd with the package's config")


files = sorted(glob.glob(os.path.join(here, "kubernetes", "*.yaml")))
for f in files:
    k8s(f)
nfiles = sorted(glob.glob(os.path.join(here, "nomad", "*.nomad")))
for f in nfiles:
    nomad(f)
containerfile(os.path.join(here, "Containerfile"))
if not files or not nfiles:
    problems.append("no deploy files found")
for p in problems:
    print("deploy/check: " + p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"deploy/check: {len(files)} Kubernetes file(s), {len(nfiles)} Nomad file(s), "
      "the Containerfile: ok")
