# SPDX-License-Identifier: Apache-2.0
"""sbx Python kernel: one persistent namespace, driven by sbx-agent over a unix socket.

Protocol (guest-agent/README.md, "Code interpreter"):
  agent -> kernel  one JSON object per line: {"code": str, "env": {k: v}?, "genv": {k: v}?}
  kernel -> agent  lines starting with a tag byte:
                     Y            ready (after the preload list was imported)
                     R<json>      a line to forward verbatim to the client (result / error)
                     D            the execution is over
User output goes to fd 1 / fd 2 (pipes the agent reads and timestamps); it is flushed before
every R or D line so the agent sees it first.
"""
import ast
import asyncio
import builtins
import inspect
import io
import json
import linecache
import os
import re
import signal
import socket
import sys
import threading
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
_INDENT = re.compile(r"^[ \t]+")


def clean_cell(code):
    """IPython's clean-up of a cell before anything else sees it: leading blank lines go, and
    when the first line is indented, that indentation is removed from every line that starts
    with it (code written inside an indented string or template literal runs as written)."""
    lines = code.splitlines(True)
    for i, line in enumerate(lines):
        if line and not line.isspace():
            lines = lines[i:]
            break
    else:
        return code
    m = _INDENT.match(lines[0])
    if not m:
        return "".join(lines)
    ws = m.group(0)
    return "".join(line[len(ws):] if line.startswith(ws) else line for line in lines)


class Kernel:
    def __init__(self, sock):
        self.sock = sock
        self.rfile = sock.makefile("rb")
        self.count = 0
        self.running = False
        self.loop = None
        self.genv = {}
        self.lock = threading.Lock()
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        self.ns = main.__dict__

    # ---- wire ----
    def send(self, tag, obj=None):
        line = tag.encode()
        if obj is not None:
            line += json.dumps(obj, default=str).encode()
        # One whole line per message: other threads print too, and an interrupt must not
        # cut a line in half.
        with self.lock:
            if not self.running:
                self.sock.sendall(line + b"\n")
                return
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                self.sock.sendall(line + b"\n")
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def on_sigint(self, signum, frame):
        if self.running:
            raise KeyboardInterrupt

    # ---- environment ----
    def apply_genv(self, genv):
        for k in self.genv:
            if k not in genv and os.environ.get(k) == self.genv[k]:
                os.environ.pop(k, None)
        for k, v in genv.items():
            os.environ[k] = v
        self.genv = dict(genv)

    # ---- execution ----
    def parse(self, code, fname):
        try:
            return ast.parse(code, fname, "exec")
        except SyntaxError:
            import sbx_magics

            alt = sbx_magics.transform(code)
            if alt == code:
                raise
            try:
                return ast.parse(alt, fname, "exec")
            except SyntaxError:
                pass
            raise

    def run_code(self, codeobj):
        if codeobj.co_flags & inspect.CO_COROUTINE:
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
                asyncio.set_event_loop(self.loop)
            return self.loop.run_until_complete(eval(codeobj, self.ns))
        return eval(codeobj, self.ns)

    def execute(self, code):
        import sbx_display

        self.count += 1
        code = clean_cell(code)
        fname = "<cell-%d>" % self.count
        linecache.cache[fname] = (len(code), None, code.splitlines(True), fname)
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        self.running = True
        main = None
        try:
            tree = self.parse(code, fname)
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                if not code.rstrip().endswith(";"):
                    last = ast.Expression(tree.body.pop().value)
            body = compile(tree, fname, "exec", flags=flags, dont_inherit=True)
            self.run_code(body)
            if last is not None:
                value = self.run_code(compile(last, fname, "eval", flags=flags, dont_inherit=True))
                if value is not None:
                    self.ns["___"] = self.ns.get("__")
                    self.ns["__"] = self.ns.get("_")
                    self.ns["_"] = value
                    main = sbx_display.result_line(sbx_display.mime_bundle(value), True)
                    if sbx_display.open_figures():
                        # Figures shown after the cell come after the main result, as in
                        # Jupyter; only then is the result not kept for the D line.
                        self.send("R", main)
                        main = None
            sbx_display.flush_figures()
        except BaseException as e:  # noqa: B036 - SystemExit/KeyboardInterrupt are user errors here
            self.running = False
            sbx_display.flush_figures(close_only=True)
            return "R" + json.dumps(error_line(e), default=str) + "\n"
        finally:
            self.running = False
        # The main result goes out with the D line: one write, one wake-up of the agent.
        return "R" + json.dumps(main, default=str) + "\n" if main is not None else ""

    def handle(self, req):
        saved = {}
        tail = ""
        try:
            if "genv" in req:
                self.apply_genv(req["genv"])
            for k, v in (req.get("env") or {}).items():
                saved.setdefault(k, os.environ.get(k))
                os.environ[k] = v
            tail = self.execute(req.get("code", ""))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            self.send(tail + "D")

    def serve(self):
        while True:
            try:
                line = self.rfile.readline()
            except KeyboardInterrupt:
                continue
            if not line:
                return
            try:
                req = json.loads(line)
            except ValueError:
                continue
            try:
                self.handle(req)
            except KeyboardInterrupt:
                # An interrupt that landed between user code and the D line.
                self.send("D")


def error_line(e):
    tb = e.__traceback__
    # Drop the kernel's own frames: the traceback starts at the cell.
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
        tb = tb.tb_next
    if isinstance(e, SyntaxError):
        tb = None
    text = "".join(traceback.format_exception(type(e), e, tb))
    return {"type": "error", "name": type(e).__name__, "value": str(e), "traceback": text}


class Stream(io.TextIOBase):
    """sys.stdout / sys.stderr: every write is a message on the socket, so output and results
    reach the client in the order they were produced. fileno() is the real pipe (for
    subprocesses and C code, whose output the agent reads there)."""

    def __init__(self, kernel, tag, fd):
        super().__init__()
        self.kernel, self.tag, self.fd = kernel, tag, fd

    encoding = "utf-8"
    errors = "strict"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self.fd

    @property
    def buffer(self):
        return _Bytes(self)

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if s:
            self.kernel.send(self.tag, s)
        return len(s)


class _Bytes:
    """sys.stdout.buffer: bytes written there are decoded (invalid UTF-8 replaced)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, b):
        self.stream.write(bytes(b).decode("utf-8", "replace"))
        return len(b)

    def flush(self):
        pass


def stdio(kernel):
    sys.stdout = Stream(kernel, "1", 1)
    sys.stderr = Stream(kernel, "2", 2)


def preload(path):
    """Import the template's preload list (SBX_KERNEL_PRELOAD names it)."""
    try:
        names = open(path).read().split()
    except OSError:
        return
    import sbx_display

    sbx_display.seed_mpl_cache(os.path.join(os.path.dirname(path), "mpl-cache"))
    for name in names:
        try:
            __import__(name)
        except Exception as e:  # a broken optional module must not stop the kernel
            print("sbx kernel: preload %s: %s" % (name, e), file=sys.__stderr__)


def main():
    if sys.version_info < (3, 9):
        sys.exit("sbx kernel: the code interpreter needs Python 3.9 or newer, this image's "
                 "python3 is %d.%d" % sys.version_info[:2])
    sys.path.append(HERE)
    name = os.environ.pop("SBX_KERNEL_SOCKET", "")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(name)
    kernel = Kernel(sock)
    signal.signal(signal.SIGINT, kernel.on_sigint)
    stdio(kernel)
    import sbx_display

    sbx_display.install(kernel)
    preload_list = os.environ.pop("SBX_KERNEL_PRELOAD", "")
    if preload_list:
        preload(preload_list)
    kernel.send("Y")
    kernel.serve()


if __name__ == "__main__":
    main()
