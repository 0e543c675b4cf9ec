# SPDX-License-Identifier: MIT
"""JIT ("Interpreter Mode"): load one script and call one function of it.

The function is called as fn(request_data, context), or fn(request_data)
when it takes a single parameter. A dict with an integer statusCode becomes
an httpResponse; bytes bodies travel base64-encoded.

binascii rather than base64, and no linecache until something needs it: both import re (and
enum, collections, functools, tokenize behind it), ~10 ms of a one-shot interpreter's start.
"""
import binascii
import sys
import types

from sandboxd_runtime import errors

# Sources registered for tracebacks while linecache is not imported: given to it as it is.
_PENDING = {}


class _LinecacheFiller:
    """A meta path finder that only watches for the import of linecache (a traceback, a
    warning, inspect): it lets the other finders find it and, once it has run, fills its cache
    with the sources registered so far."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "linecache":
            return None
        sys.meta_path.remove(cls)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None and spec.loader is not None:
                spec.loader = _FillingLoader(spec.loader)
                return spec
        return None


class _FillingLoader:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        module.cache.update(_PENDING)
        _PENDING.clear()


def remember_source(path, source):
    """Keep source under path for tracebacks, although the file never exists on disk."""
    entry = (len(source), None, source.splitlines(True), path)
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        linecache.cache[path] = entry
        return
    if _LinecacheFiller not in sys.meta_path:
        sys.meta_path.insert(0, _LinecacheFiller)
    _PENDING[path] = entry


def b64decode(data):
    """base64.b64decode(data, validate=True), without importing base64 (and re)."""
    if isinstance(data, str):
        data = data.encode("ascii")
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except TypeError:  # before Python 3.11: no strict mode
        import base64

        return base64.b64decode(data, validate=True)


def load_module(source, path, name):
    """Compile and execute source as module `name`; exceptions propagate."""
    code = compile(source, path, "exec", dont_inherit=True)
    module = types.ModuleType(name)
    module.__file__ = path
    remember_source(path, source)
    sys.modules[name] = module
    exec(code, module.__dict__)
    return module


def positional_arity(fn):
    """How many positional arguments fn accepts (2 means 'two or more')."""
    code = getattr(fn, "__code__", None)
    if code is not None and not isinstance(fn, type):
        bound = 1 if getattr(fn, "__self__", None) is not None else 0
        if code.co_flags & 0x04:  # *args
            return 2
        return max(code.co_argcount - bound, 0)
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    n = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return 2
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def call(fn, args):
    result = fn(*args)
    if isinstance(result, types.CoroutineType):
        import asyncio

        result = asyncio.run(result)
    return result


def shape(value):
    """The final frame for a successful return value."""
    if (
        isinstance(value, dict)
        and "statusCode" in value
        and isinstance(value["statusCode"], int)
        and not isinstance(value["statusCode"], bool)
    ):
        status = value["statusCode"]
        if not 100 <= status <= 599:
            return errors.invalid_result(value, "statusCode %d is not an HTTP status" % status)
        headers = value.get("headers") or {}
        if not isinstance(headers, dict):
            return errors.invalid_result(value, "headers must be an object")
        body = value.get("body")
        encoding = "utf-8"
        if isinstance(body, (bytes, bytearray, memoryview)):
            body = binascii.b2a_base64(bytes(body), newline=False).decode("ascii")
            encoding = "base64"
        data = {"statusCode": status, "headers": headers, "body": body, "bodyEncoding": encoding}
        return {"type": "result", "resultType": "httpResponse", "data": data}
    return {"type": "result", "resultType": "generic", "data": value}


def module_name(path):
    stem = path.rsplit("/", 1)[-1]
    if stem.endswith(".py"):
        stem = stem[:-3]
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in stem) or "script"
    return "sandbox_" + name


# Warm reuse: the module a reuse job loaded, kept for the next job of this process, as
# (path, source, module). The host sends a process only jobs of one app, script and
# definition; the source is compared all the same.
_kept = None


def run(job):
    global _kept
    path = job["path"]
    reuse = job.get("reuse") is True
    if reuse and _kept is not None and _kept[0] == path and _kept[1] == job["source"]:
        return call_function(job, path, _kept[2])
    try:
        source = b64decode(job["source"])
    except (binascii.Error, ValueError, TypeError):
        return errors.error(
            "MCP_ERROR", "the definition of %s is not valid base64" % path, {"path": path}
        )
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        return errors.error(
            "APPLICATION_ERROR",
            "%s is not UTF-8 text: %s" % (path, exc),
            {"type": "UnicodeDecodeError", "message": str(exc), "traceback": ""},
        )
    try:
        module = load_module(text, path, module_name(path))
    except BaseException as exc:
        return errors.from_exception(exc)
    if reuse:
        _kept = (path, job["source"], module)
    return call_function(job, path, module)


def call_function(job, path, module):
    name = job["function"]
    fn = module.__dict__.get(name)
    if fn is None or not callable(fn):
        found = sorted(
            k for k, v in module.__dict__.items() if callable(v) and not k.startswith("_")
        )
        return errors.error(
            "FUNCTION_NOT_FOUND",
            "%s has no function %r" % (path, name),
            {"function": name, "available": found[:50]},
        )
    arity = positional_arity(fn)
    args = (job.get("requestData"), job.get("context"))[: min(arity, 2)] if arity else ()
    try:
        value = call(fn, args)
    except BaseException as exc:
        return errors.from_exception(exc)
    return shape(value)
