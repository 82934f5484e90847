"""The client against the OpenAPI document and itself: every /v1 operation of the spec has a
call with the same method, path and retry rule, every call is used by the sync and the async
client, and the async client has every public method of the sync one."""

import ast
import inspect
import os

import yaml

from conftest import TOP
import sbx
from sbx import _calls

SPEC = os.path.join(TOP, "api", "openapi", "sbx-v1.yaml")
PKG = os.path.join(TOP, "clients", "python", "sbx")


def spec_operations():
    with open(SPEC) as f:
        doc = yaml.safe_load(f)
    ops = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "delete", "patch") and path.startswith("/v1/"):
                ops[op["operationId"]] = (method.upper(), path, bool(op.get("x-sbx-idempotent")))
    return ops


def test_every_spec_operation_is_implemented():
    spec = spec_operations()
    missing = sorted(set(spec) - set(_calls.OPERATIONS))
    assert not missing, f"operations of the spec the client lacks: {missing}"
    extra = sorted(set(_calls.OPERATIONS) - set(spec))
    assert not extra, f"client operations not in the spec: {extra}"
    for op, want in spec.items():
        assert _calls.OPERATIONS[op] == want, op


def _names_used(filename):
    with open(os.path.join(PKG, filename)) as f:
        tree = ast.parse(f.read())
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "C"}


def _builders():
    """operationId → the _calls function that builds its Call."""
    with open(os.path.join(PKG, "_calls.py")) as f:
        tree = ast.parse(f.read())
    out = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            for n in ast.walk(fn):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                        and n.func.id == "Call" and n.args and isinstance(n.args[0], ast.Constant)):
                    out[n.args[0].value] = fn.name
    return out


def test_every_operation_is_called_by_both_clients():
    builders = _builders()
    assert set(builders) == set(_calls.OPERATIONS), set(_calls.OPERATIONS) ^ set(builders)
    sync, aio = _names_used("sandbox.py"), _names_used("asandbox.py")
    for op, fn in builders.items():
        name = "terminal_path" if op == "terminal" else fn
        assert name in sync, f"{op} ({name}) is not used by the sync client"
        assert name in aio, f"{op} ({name}) is not used by the async client"


def _public(cls):
    return {n for n, _ in inspect.getmembers(cls) if not n.startswith("_")}


def test_async_mirrors_sync_method_for_method():
    pairs = [(sbx.Sbx, sbx.AsyncSbx), (sbx.Files, sbx.AsyncFiles),
             (sbx.Processes, sbx.AsyncProcesses), (sbx.Process, sbx.AsyncProcess),
             (sbx.Images, sbx.AsyncImages), (sbx.Templates, sbx.AsyncTemplates),
             (sbx.Storage, sbx.AsyncStorage), (sbx.Terminal, sbx.AsyncTerminal),
             (sbx.PullStream, sbx.AsyncPullStream)]
    for s, a in pairs:
        missing = _public(s) - _public(a)
        assert not missing, f"{a.__name__} lacks {sorted(missing)}"
        for name in _public(s):
            sm, am = getattr(s, name), getattr(a, name)
            if inspect.isfunction(sm) or inspect.ismethod(sm):
                sp = [p for p in inspect.signature(sm).parameters]
                ap = [p for p in inspect.signature(am).parameters]
                assert sp == ap, f"{a.__name__}.{name}{ap} differs from {s.__name__}.{name}{sp}"


def test_public_methods_have_docstrings():
    for cls in (sbx.Sbx, sbx.Files, sbx.Processes, sbx.Process, sbx.Images, sbx.Templates,
                sbx.Storage, sbx.Terminal, sbx.PullStream):
        for name in _public(cls):
            m = getattr(cls, name)
            if callable(m):
                assert inspect.getdoc(m), f"{cls.__name__}.{name} has no docstring"
