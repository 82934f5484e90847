# SPDX-License-Identifier: Apache-2.0
"""The IPython syntax the sbx Python kernel accepts: `!cmd`, `x = !cmd`, `%magic args` and the
cell magics `%%bash`/`%%sh`, `%%writefile`, `%%time`. Only applied to a cell that is not valid
Python as it stands, so ordinary code (and strings that merely contain `!`) is never rewritten."""
import os
import re
import shlex
import string
import subprocess
import sys
import time

_LINE_SHELL = re.compile(r"^(\s*)!(.*)$")
_ASSIGN_SHELL = re.compile(r"^(\s*)([A-Za-z_][\w.]*)\s*=\s*!(.*)$")
_LINE_MAGIC = re.compile(r"^(\s*)%(\w+)(.*)$")


def transform(code):
    lines = code.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        name, _, args = first[2:].partition(" ")
        body = "\n".join(lines[1:])
        return "__import__('sbx_magics').cell_magic(%r, %r, %r)" % (name, args.strip(), body)
    out = []
    for line in lines:
        m = _ASSIGN_SHELL.match(line)
        if m:
            out.append("%s%s = __import__('sbx_magics').getoutput(%r)" % (m[1], m[2], m[3]))
            continue
        m = _LINE_SHELL.match(line)
        if m:
            out.append("%s__import__('sbx_magics').system(%r)" % (m[1], m[2]))
            continue
        m = _LINE_MAGIC.match(line)
        if m:
            out.append("%s__import__('sbx_magics').line_magic(%r, %r)" % (m[1], m[2], m[3].strip()))
            continue
        out.append(line)
    return "\n".join(out)


def _expand(cmd):
    """IPython's {expr} expansion from the user's namespace; left as is when it fails."""
    ns = sys.modules["__main__"].__dict__
    try:
        return string.Formatter().vformat(cmd, (), _Namespace(ns))
    except Exception:
        return cmd


class _Namespace(dict):
    def __init__(self, ns):
        super().__init__()
        self.ns = ns

    def __missing__(self, key):
        return eval(key, self.ns)


def _flush():
    sys.stdout.flush()
    sys.stderr.flush()


def system(cmd):
    _flush()
    subprocess.run(_expand(cmd), shell=True, executable="/bin/bash")


def getoutput(cmd):
    _flush()
    r = subprocess.run(_expand(cmd), shell=True, executable="/bin/bash", capture_output=True)
    return r.stdout.decode(errors="replace").splitlines()


class UsageError(Exception):
    pass


def line_magic(name, args):
    args = _expand(args)
    if name in ("pip", "conda"):
        return system("%s -m pip %s" % (shlex.quote(sys.executable), args))
    if name == "cd":
        os.chdir(os.path.expanduser(args or "~"))
        print(os.getcwd())
        return None
    if name == "pwd":
        return os.getcwd()
    if name == "env":
        if not args:
            return dict(os.environ)
        k, sep, v = args.partition("=") if "=" in args else args.partition(" ")
        if sep:
            os.environ[k.strip()] = v.strip()
            return None
        return os.environ.get(k.strip())
    if name in ("matplotlib", "load_ext", "config"):
        return None
    if name == "time":
        t0 = time.perf_counter()
        ns = sys.modules["__main__"].__dict__
        try:
            return eval(compile(args, "<time>", "eval"), ns)
        except SyntaxError:
            exec(compile(args, "<time>", "exec"), ns)
        finally:
            print("Wall time: %.2f ms" % ((time.perf_counter() - t0) * 1e3))
        return None
    raise UsageError("Line magic function `%%%s` not found." % name)


def cell_magic(name, args, body):
    if name in ("bash", "sh"):
        _flush()
        subprocess.run(["/bin/bash" if name == "bash" else "/bin/sh", "-c", body])
        return None
    if name == "writefile":
        path = os.path.expanduser(args.split()[-1])
        mode = "a" if "-a" in args.split() else "w"
        with open(path, mode) as f:
            f.write(body + ("\n" if body and not body.endswith("\n") else ""))
        print("Writing %s" % path)
        return None
    if name == "time":
        t0 = time.perf_counter()
        try:
            exec(compile(body, "<time>", "exec"), sys.modules["__main__"].__dict__)
        finally:
            print("Wall time: %.2f ms" % ((time.perf_counter() - t0) * 1e3))
        return None
    raise UsageError("Cell magic `%%%%%s` not found." % name)
