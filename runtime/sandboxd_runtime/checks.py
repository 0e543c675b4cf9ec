# SPDX-License-Identifier: MIT
"""The checks a tool call's arguments pass before the call leaves the sandbox (docs/SESSIONS.md,
"Tool stubs"): each value against the tool's inputSchema, with the path of what is wrong and,
for a misspelt name, the closest one; then the arguments as they go on the wire, NOT_SENT and
the None of an optional parameter that may not be null left out. stubs.py builds the typed
functions that call wire_arguments(); preflight.py checks the calls a cell's code makes before
it runs. Nothing here imports stubs.py.
"""
import difflib

MAX_CHECK_DEPTH = 64  # nesting a value is checked to


class _NotSent:
    """The default of an optional parameter without a schema default: the argument is not
    sent (nor is None for an optional parameter whose schema does not allow null)."""
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "NOT_SENT"

    def __bool__(self):
        return False

    def __reduce__(self):
        return "NOT_SENT"


NOT_SENT = _NotSent()
NOT_SENT.__class__.__module__ = "mcp.runtime"


def _resolve(root, ref):
    """The schema a local JSON pointer ("#", "#/$defs/Node") names in root, or None."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node = root
    if ref in ("#", "#/"):
        return node
    if not ref.startswith("#/"):
        return None
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


# ---- checks before a call leaves --------------------------------------------------------------

def _kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _is(value, t):
    k = _kind(value)
    if t == "number":
        return k in ("integer", "number")
    if t == "integer":
        return k == "integer" or (k == "number" and float(value).is_integer())
    return k == t


_PY = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None",
       "array": "list", "object": "dict"}


def _suggest(name, names):
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close:
        low = {n.lower(): n for n in names}
        close = [low[name.lower()]] if name.lower() in low else []
    return " (did you mean %r?)" % close[0] if close else ""


def check_value(schema, value, where, root, depth=0):
    """Raise TypeError (a wrong type) or ValueError (a value out of range, not allowed) when
    value does not fit schema. Conservative: what it does not know (pattern, format) passes."""
    if not isinstance(schema, dict) or depth > MAX_CHECK_DEPTH:
        return
    if "$ref" in schema:
        target = _resolve(root, schema["$ref"])
        if isinstance(target, dict):
            check_value(target, value, where, root, depth + 1)
        return
    for sub in schema.get("allOf") or []:
        check_value(sub, value, where, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            errors = []
            for sub in branches:
                try:
                    check_value(sub, value, where, root, depth + 1)
                    break
                except (TypeError, ValueError) as exc:
                    errors.append(exc)
            else:
                kinds = {type(e) for e in errors}
                cls = TypeError if kinds == {TypeError} else ValueError
                raise cls("%s: %s fits none of the allowed forms (%s)" % (
                    where, _short(value), "; ".join(str(e).split(": ", 1)[-1]
                                                    for e in errors[:4])))
    t = schema.get("type")
    types = [x for x in t if isinstance(x, str)] if isinstance(t, list) else \
        [t] if isinstance(t, str) else []
    if value is None and schema.get("nullable") is True:
        return
    if types and not any(_is(value, x) for x in types):
        raise TypeError("%s must be %s, not %s" % (
            where, " or ".join(_PY.get(x, x) for x in types), type(value).__name__))
    if "enum" in schema and isinstance(schema["enum"], list):
        if not any(_same(value, v) for v in schema["enum"]):
            raise ValueError("%s must be one of %s, not %s" % (
                where, ", ".join(repr(v) for v in schema["enum"][:20]), _short(value)))
    if "const" in schema and not _same(value, schema["const"]):
        raise ValueError("%s must be %r, not %s" % (where, schema["const"], _short(value)))
    k = _kind(value)
    if k in ("integer", "number"):
        for key, ok, word in (("minimum", lambda v, b: v >= b, ">="),
                              ("maximum", lambda v, b: v <= b, "<="),
                              ("exclusiveMinimum", lambda v, b: v > b, ">"),
                              ("exclusiveMaximum", lambda v, b: v < b, "<")):
            b = schema.get(key)
            if isinstance(b, (int, float)) and not isinstance(b, bool) and not ok(value, b):
                raise ValueError("%s must be %s %r, not %r" % (where, word, b, value))
    elif k == "string":
        for key, ok, word in (("minLength", lambda n, b: n >= b, "at least"),
                              ("maxLength", lambda n, b: n <= b, "at most")):
            b = schema.get(key)
            if isinstance(b, int) and not isinstance(b, bool) and not ok(len(value), b):
                raise ValueError("%s must have %s %d characters, not %d" % (
                    where, word, b, len(value)))
    elif k == "array":
        for key, ok, word in (("minItems", lambda n, b: n >= b, "at least"),
                              ("maxItems", lambda n, b: n <= b, "at most")):
            b = schema.get(key)
            if isinstance(b, int) and not isinstance(b, bool) and not ok(len(value), b):
                raise ValueError("%s must have %s %d items, not %d" % (where, word, b,
                                                                         len(value)))
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems")
        if isinstance(prefix, list):
            for i, (sub, v) in enumerate(zip(prefix, value)):
                check_value(sub, v, "%s[%d]" % (where, i), root, depth + 1)
        if isinstance(items, dict):
            start = len(prefix) if isinstance(prefix, list) else 0
            for i in range(start, len(value)):
                check_value(items, value[i], "%s[%d]" % (where, i), root, depth + 1)
    elif k == "object":
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for key in schema.get("required") or []:
            if isinstance(key, str) and key not in value:
                raise TypeError("%s is missing the required key %r" % (where, key))
        extra = schema.get("additionalProperties")
        for key, v in value.items():
            if key in props:
                check_value(props[key], v, "%s[%r]" % (where, key), root, depth + 1)
            elif extra is False and props:
                raise TypeError("%s has the unknown key %r%s (keys: %s)" % (
                    where, key, _suggest(str(key), list(props)), ", ".join(props)))
            elif isinstance(extra, dict):
                check_value(extra, v, "%s[%r]" % (where, key), root, depth + 1)


def _same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) in (type(b), int, float) and type(b) in (type(a), int, float)


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Unknown:
    """A value not known before the code runs (the pre-flight's): present, not checked."""


UNKNOWN = Unknown()


def wire_arguments(spec, kwargs, positional=()):
    """The arguments to send for a call of spec with kwargs: Python names mapped to wire names,
    NOT_SENT and None (for an optional parameter whose schema does not allow null) left out.
    Raises TypeError or ValueError, naming the signature, when the arguments do not fit. A
    value that is UNKNOWN counts as given and is not checked."""
    call = "mcp_%s.%s()" % (spec.server_alias, spec.alias)
    try:
        return _wire(spec, kwargs, positional, call)
    except (TypeError, ValueError) as exc:
        raise type(exc)("%s\nsignature: %s" % (exc, spec.signature_text())) from None


def _wire(spec, kwargs, positional, call):
    if positional:
        raise TypeError("%s takes keyword arguments only (%d positional given)" % (
            call, len(positional)))
    out = {}
    for name, value in kwargs.items():
        p = spec.by_name.get(name) or spec.by_wire.get(name)
        if p is None:
            if spec.extra is None:
                names = [q.name for q in spec.params]
                raise TypeError("%s got an unknown argument %r%s (arguments: %s)" % (
                    call, name, _suggest(str(name), names + [q.wire for q in spec.params]),
                    ", ".join(names) or "none"))
            if value is not NOT_SENT:
                if value is not UNKNOWN:
                    check_value(spec.extra, value, "argument %r" % name, spec.root)
                out[name] = value
            continue
        if p.wire in out:
            raise TypeError("%s got argument %r twice (as %r and %r)" % (call, p.name, p.name,
                                                                        p.wire))
        if value is UNKNOWN:
            out[p.wire] = value
            continue
        if value is NOT_SENT or (value is None and not p.required and not p.nullable):
            continue
        if value is None and not p.nullable:
            raise TypeError("%s: argument %r must be %s, not None" % (call, p.name, p.text))
        check_value(p.schema, value, "%s: argument %r" % (call, p.name), spec.root)
        out[p.wire] = value
    missing = [p.name for p in spec.params if p.required and p.wire not in out]
    if missing:
        raise TypeError("%s is missing the required argument%s %s" % (
            call, "s" if len(missing) > 1 else "", ", ".join(repr(m) for m in missing)))
    return out
