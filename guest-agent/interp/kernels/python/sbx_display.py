# SPDX-License-Identifier: Apache-2.0
"""Rich display for the sbx Python kernel: MIME bundles in the E2B result shape.

IPython conventions (text/plain from IPython's pretty printer, _repr_mimebundle_,
_repr_html_, ...), pandas DataFrames (html + data),
matplotlib figures (png + structured chart, on plt.show() or left open at the end of a cell),
PIL images (png; Image.show() and Image.save(path) display, as the E2B template does).
"""
import base64
import builtins
import glob
import importlib.abc
import io
import math
import os
import shutil
import sys

_kernel = None
_shown = set()  # ids of figures displayed during the current cell

# MIME type -> field of the E2B result line (docs/e2b-wire.md §4.1).
FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "e2b/data": "data",
    "e2b/chart": "chart",
}
REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("application/pdf", "_repr_pdf_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
)
BINARY = ("image/png", "image/jpeg", "application/pdf")


def clean(v):
    """JSON-safe copy: NaN/inf -> None, numpy scalars -> Python, timestamps -> ISO strings."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if hasattr(v, "isoformat"):
        try:
            return v.isoformat()
        except Exception:
            pass
    if hasattr(v, "item"):
        try:
            return clean(v.item())
        except Exception:
            pass
    if hasattr(v, "tolist"):
        try:
            return clean(v.tolist())
        except Exception:
            pass
    return str(v)


# Types whose text IPython gives as their repr, whatever their size: no pretty printer needed.
PLAIN_REPR = (str, bytes, bytearray, int, float, complex, bool, type(None))


def plain_text(obj):
    """The text/plain IPython gives obj: its pretty printer (IPython.lib.pretty, as Jupyter's
    PlainTextFormatter uses it: 79 columns, sequences cut after 1000 items, _repr_pretty_
    honoured). Without IPython in the sandbox, repr()."""
    if type(obj) in PLAIN_REPR:
        return repr(obj)
    try:
        from IPython.lib import pretty
    except Exception:
        return repr(obj)
    return pretty.pretty(obj, max_width=79, newline="\n", max_seq_length=1000)


def _method(obj, name):
    # Only real methods of the class: objects with a catch-all __getattr__ (mocks, proxies)
    # must not look like they had every repr.
    if isinstance(obj, type) or getattr(type(obj), name, None) is None:
        return None
    m = getattr(obj, name, None)
    return m if callable(m) else None


def _figure_bundle(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    data = {"image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": repr(fig)}
    try:
        import sbx_charts

        chart = sbx_charts.figure_to_chart(fig)
        if chart:
            data["e2b/chart"] = clean(chart)
    except Exception:
        pass
    return data


def mime_bundle(obj):
    mods = sys.modules
    fig_mod = mods.get("matplotlib.figure")
    if fig_mod is not None and isinstance(obj, fig_mod.Figure):
        _shown.add(id(obj))
        return _figure_bundle(obj)
    data = {}
    m = _method(obj, "_repr_mimebundle_")
    if m is not None:
        try:
            r = m(include=None, exclude=None)
        except TypeError:
            r = m()
        if isinstance(r, tuple):
            r = r[0]
        if isinstance(r, dict):
            data.update(r)
    for mime, name in REPR_METHODS:
        if mime in data:
            continue
        m = _method(obj, name)
        if m is None:
            continue
        try:
            v = m()
        except Exception:
            continue
        if isinstance(v, tuple):
            v = v[0]
        if v is None:
            continue
        if mime in BINARY and isinstance(v, (bytes, bytearray)):
            v = base64.b64encode(v).decode()
        data[mime] = v
    pd = mods.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        data["e2b/data"] = clean(obj.to_dict(orient="list"))
    if "text/plain" not in data:
        data["text/plain"] = plain_text(obj)
    return data


def result_line(data, main):
    out = {"type": "result"}
    extra = {}
    for mime, v in data.items():
        field = FIELDS.get(mime)
        if field is None:
            extra[mime] = clean(v)
            continue
        if field == "text" and isinstance(v, str) and len(v) >= 2 and v[0] == v[-1] == "'":
            # E2B's code interpreter drops the single quotes around a text/plain (a string's
            # repr): runCode('"abc"').text is abc, and os.getcwd() is /home/user in E2B's own
            # tests (Jupyter itself shows 'abc'); a repr in double quotes ("it's") keeps them
            v = v[1:-1]
        if field in ("json", "data", "chart"):
            v = clean(v)
        elif not isinstance(v, str):
            v = str(v)
        out[field] = v
    if extra:
        out["extra"] = extra
    out["is_main_result"] = main
    return out


def publish(obj, main=False):
    _kernel.send("R", result_line(mime_bundle(obj), main))


def display(*objs, raw=False, **kwargs):
    """IPython's display(): every object becomes a (non-main) result."""
    for obj in objs:
        if raw and isinstance(obj, dict):
            _kernel.send("R", result_line(obj, False))
        else:
            publish(obj)


def open_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    return bool(plt is not None and plt.get_fignums())


def flush_figures(close_only=False):
    """After a cell (and on plt.show()): display every open figure not shown yet, close all."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        if not close_only:
            for num in plt.get_fignums():
                fig = plt.figure(num)
                if id(fig) not in _shown:
                    publish(fig)
        plt.close("all")
    finally:
        _shown.clear()


def seed_mpl_cache(cache_dir):
    """Copy the template's prebuilt matplotlib font list into the user's cache (saves ~0.4 s)."""
    src = glob.glob(os.path.join(cache_dir, "fontlist-*.json"))
    if not src:
        return
    dst = os.path.join(os.path.expanduser("~"), ".cache", "matplotlib")
    try:
        os.makedirs(dst, exist_ok=True)
        for f in src:
            target = os.path.join(dst, os.path.basename(f))
            if not os.path.exists(target):
                shutil.copyfile(f, target)
    except OSError:
        pass


# ---- post-import patches ----


def _patch_matplotlib(mod):
    mod.rcParams["backend"] = "module://sbx_mpl_backend"


def _patch_pil(mod):
    def show(self, *args, **kwargs):
        display(self)

    orig_save = mod.Image.save

    def save(self, fp, format=None, **params):
        if isinstance(fp, (str, os.PathLike)):
            display(self)
        return orig_save(self, fp, format, **params)

    mod.Image.show = show
    mod.Image.save = save


def _patch_ipython_display(mod):
    if hasattr(mod, "display"):
        mod.display = display


PATCHES = {
    "matplotlib": _patch_matplotlib,
    "PIL.Image": _patch_pil,
    "IPython.core.display_functions": _patch_ipython_display,
    "IPython.display": _patch_ipython_display,
    "IPython.core.display": _patch_ipython_display,
}


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, patch):
        self.inner, self.patch = inner, patch

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        self.patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader, patch)
                return spec
        return None


def install(kernel):
    global _kernel
    _kernel = kernel
    builtins.display = display
    sys.meta_path.insert(0, _Finder())
    for name, patch in PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
