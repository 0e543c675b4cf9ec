# SPDX-License-Identifier: MIT
"""Typed stubs of MCP tools: each tool of a session's servers becomes a real Python function
whose signature, annotations and docstring come from the tool's inputSchema and outputSchema,
and whose arguments are checked before a call leaves the sandbox (docs/SESSIONS.md, "Tool
stubs").

Nothing a server sends is ever executed. The functions are built as objects: annotations from
typing (TypedDict's functional form, Literal, unions), an inspect.Signature, a closure whose
code object is only renamed. The same analysis also writes a text form, a read-only tree of
Python files under TREE (one package per server, one module per tool) that inspect.getsource,
help(), cat and grep read; that text is for reading only and is never imported or run, and
every string a server wrote is escaped into it, so a hostile schema still gives parseable
files that define nothing but what the schema describes.

Built once per (server, tools/list content): a server whose tools did not change is not built
again (add_servers, list_tools_live).
"""
import functools
import hashlib
import inspect
import json
import keyword
import os
import re
import typing
from typing import Any, Literal, NotRequired, TypedDict, Union

from sandboxd_runtime.checks import NOT_SENT, _resolve, wire_arguments

TREE = "/tmp/mcp/servers"    # the stub files, as mcp.servers.<alias> is their package
MAX_DEPTH = 10               # nesting of a schema turned into a type; deeper is Any
MAX_REF_DEPTH = 2            # expansions of one $ref inside itself (recursion); then Any
DOC_DEPTH = 2                # nested object keys spelled out in a docstring
MAX_TEXT = 2000              # characters of one description kept in a docstring
SCHEMA_KEYS = ("type", "properties", "items", "prefixItems", "enum", "const", "anyOf", "oneOf",
               "allOf", "$ref")




# ---- names ----------------------------------------------------------------------------------

_NON_IDENT = re.compile(r"[^A-Za-z0-9_]+")


def py_name(name):
    """A Python name for a parameter or key: the name itself when it is an ASCII identifier and
    no keyword, else every run of other characters as '_', '_' before a leading digit and after
    a keyword ("from" -> from_, "max-results" -> max_results). Case is kept."""
    name = str(name)
    if name.isascii() and name.isidentifier() and not keyword.iskeyword(name):
        return name
    out = _NON_IDENT.sub("_", name) or "_"
    if out[0].isdigit():
        out = "_" + out
    if keyword.iskeyword(out):
        out += "_"
    return out


_WORDS = re.compile(r"[^A-Za-z0-9]+")


@functools.lru_cache(maxsize=4096)
def _pascal(name):
    parts = [p for p in _WORDS.split(str(name)) if p]
    out = "".join(p[:1].upper() + p[1:] for p in parts) or "T"
    return "_" + out if out[0].isdigit() else out


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
_SPECIAL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\ud800-\udfff]")


def clean_text(text, limit=MAX_TEXT):
    """A server's description as a docstring may hold it: control characters, NUL and lone
    surrogates made visible, tabs as spaces, at most limit characters."""
    if not isinstance(text, str):
        text = str(text)
    if len(text) <= limit and not _SPECIAL.search(text):
        return text.strip()  # the common case, quickly
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    text = _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()) if ord(m.group()) < 256
                        else "\\u%04x" % ord(m.group()), text)
    if len(text) > limit:
        text = text[:limit] + "..."
    return text.strip()


def _docstring_literal(text, indent):
    """text as a triple-quoted string literal that parses back to exactly text: backslashes
    doubled, quotes that could close it escaped, continuation lines indented."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if body.endswith('"'):
        body = body[:-1] + '\\"'
    body = body.replace("\n", "\n" + indent) if body else body
    body = "\n".join(line.rstrip() for line in body.split("\n"))
    return '"""' + body + ("\n" + indent if "\n" in body else "") + '"""'


# ---- JSON Schema -> typing -----------------------------------------------------------------

_BASIC = {"string": (str, "str"), "integer": (int, "int"), "number": (float, "float"),
          "boolean": (bool, "bool"), "null": (type(None), "None")}
_LITERAL_TYPES = (str, int, float, bool, type(None))


def _union(objs, texts, objects=True):
    seen, o, t = set(), [], []
    for obj, text in zip(objs, texts):
        if text in seen:
            continue
        seen.add(text)
        o.append(obj)
        t.append(text)
    if "Any" in seen:
        return Any, "Any"
    if len(o) == 1:
        return o[0], t[0]
    return Union[tuple(o)] if objects else None, " | ".join(t)


def merge_all_of(schema, root):
    """An allOf of object schemas (or $refs to them) as one object schema; the schema as it is
    when that cannot be done."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    props = dict(merged.get("properties") or {})
    required = list(merged.get("required") or [])
    for part in parts:
        if isinstance(part, dict) and "$ref" in part:
            part = _resolve(root, part["$ref"])
        if not isinstance(part, dict):
            return schema
        if part.get("type", "object") != "object" or "allOf" in part or \
                any(k in part for k in ("anyOf", "oneOf", "$ref", "items", "enum")):
            return schema
        props.update(part.get("properties") or {})
        required += [r for r in part.get("required") or [] if r not in required]
        for k, v in part.items():
            if k not in ("properties", "required"):
                merged.setdefault(k, v)
    merged["type"] = "object"
    merged["properties"] = props
    if required:
        merged["required"] = required
    return merged


class TypeBuilder:
    """JSON Schema to typing objects and their text, for one tool: named TypedDicts (their
    class text kept in definition order for the stub file), depth-limited. With objects false
    only the text is made (the objects are None): the stub files need no more, and the typing
    objects are made when a function is first used."""

    def __init__(self, root, module, objects=True):
        self.root = root if isinstance(root, dict) else {}
        self.module = module
        self.objects = objects
        self.classes = []         # [(name, text)] in definition order
        self.names = set()
        self.by_ref = {}          # "$ref" -> (obj, text), once built
        self.ref_names = {}       # "$ref" -> the name of the TypedDict it became
        self.pending = None       # a name reserved for the next TypedDict (a $ref's)
        self.silent = 0           # > 0: building a recursion's inner copy (no text, no names)
        self.texts = {}           # id(schema) -> its type's text, for the docstring

    def _name(self, hint):
        base = _pascal(hint)
        name, n = base, 1
        while name in self.names or name in ("Any", "Literal", "NotRequired", "TypedDict",
                                             "Union", "NOT_SENT"):
            n += 1
            name = "%s%d" % (base, n)
        self.names.add(name)
        return name

    def convert(self, schema, hint, depth=0, refs=()):
        """(annotation object, its text) of schema; hint names the TypedDicts it may need."""
        if not isinstance(schema, dict) or depth > MAX_DEPTH:
            return Any, "Any"
        pair = self._convert(schema, hint, depth, refs)
        if not self.silent:
            self.texts[id(schema)] = pair[1]
        return pair

    def _convert(self, schema, hint, depth, refs):
        if "$ref" in schema:
            return self._ref(schema, hint, depth, refs)
        if isinstance(schema.get("allOf"), list):
            merged = merge_all_of(schema, self.root)
            if merged is schema:
                return self._nullable(schema, Any, "Any")
            schema = merged
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                pairs = [self.convert(s, "%s%d" % (hint, i + 1) if len(schema[key]) > 1 else hint,
                                      depth + 1, refs) for i, s in enumerate(schema[key])]
                obj, text = _union([p[0] for p in pairs], [p[1] for p in pairs],
                                   self.objects)
                return self._nullable(schema, obj, text)
        if "enum" in schema or "const" in schema:
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            if isinstance(values, list) and values and \
                    all(isinstance(v, _LITERAL_TYPES) for v in values):
                values = list(dict.fromkeys((type(v), v) for v in values))
                vals = tuple(v for _, v in values)
                text = "Literal[%s]" % ", ".join(repr(v) for v in vals)
                return self._nullable(schema, Literal[vals] if self.objects else None, text)
        t = schema.get("type")
        if isinstance(t, list):
            pairs = [self._typed(schema, x, hint, depth, refs) for x in t if isinstance(x, str)]
            if not pairs:
                return Any, "Any"
            obj, text = _union([p[0] for p in pairs], [p[1] for p in pairs], self.objects)
            return self._nullable(schema, obj, text)
        if t is None:
            if isinstance(schema.get("properties"), dict):
                t = "object"
            elif "items" in schema or "prefixItems" in schema:
                t = "array"
            else:
                return Any, "Any"
        obj, text = self._typed(schema, t, hint, depth, refs)
        return self._nullable(schema, obj, text)

    def _nullable(self, schema, obj, text):
        if schema.get("nullable") is True and text not in ("Any", "None"):
            return _union([obj, type(None)], [text, "None"], self.objects)
        return obj, text

    def _ref(self, schema, hint, depth, refs):
        ref = schema["$ref"]
        target = _resolve(self.root, ref)
        if not isinstance(target, dict):
            return Any, "Any"
        if ref in refs:
            # Recursion: the object nests once more (then Any); the text names the type.
            if refs.count(ref) >= MAX_REF_DEPTH:
                return Any, "Any"
            name = self.ref_names.get(ref)
            self.silent += 1
            try:
                obj, _ = self.convert(target, name or hint, depth + 1, refs + (ref,))
            finally:
                self.silent -= 1
            return obj, repr(name) if name else "Any"
        if ref in self.by_ref:
            return self.by_ref[ref]
        name_hint = ref.rstrip("/").rsplit("/", 1)[-1] if ref not in ("#", "#/") else hint
        if not self.silent:
            # The name the referenced object will have, known before it is built: a recursive
            # reference inside it names it.
            self.ref_names[ref] = self.pending = self._name(name_hint)
        built = self.convert(target, name_hint, depth + 1, refs + (ref,))
        if not self.silent:
            self.by_ref[ref] = built
            self.pending = None  # not taken: the reference named no object
        return built

    def _typed(self, schema, t, hint, depth, refs):
        if t in _BASIC:
            return _BASIC[t]
        if t == "array":
            prefix = schema.get("prefixItems")
            items = schema.get("items")
            if isinstance(items, list):  # draft-07 tuples
                prefix = items
            if isinstance(prefix, list) and prefix:
                pairs = [self.convert(s, "%sItem%d" % (hint, i + 1), depth + 1, refs)
                         for i, s in enumerate(prefix[:32])]
                return (tuple[tuple(p[0] for p in pairs)] if self.objects else None,
                        "tuple[%s]" % ", ".join(p[1] for p in pairs))
            if isinstance(items, dict):
                obj, text = self.convert(items, hint + "Item", depth + 1, refs)
                return list[obj] if self.objects else None, "list[%s]" % text
            return list[Any], "list[Any]"
        if t == "object":
            props = schema.get("properties")
            if isinstance(props, dict) and props:
                return self._typed_dict(schema, props, hint, depth, refs)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                obj, text = self.convert(extra, hint + "Value", depth + 1, refs)
                return dict[str, obj] if self.objects else None, "dict[str, %s]" % text
            return dict[str, Any], "dict[str, Any]"
        return Any, "Any"

    def _typed_dict(self, schema, props, hint, depth, refs):
        if self.silent:
            name = _pascal(hint)
        elif self.pending:
            name, self.pending = self.pending, None
        else:
            name = self._name(hint)
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        fields, lines = {}, []
        for key, sub in props.items():
            obj, text = self.convert(sub, hint + _pascal(key), depth + 1, refs)
            req = key in required
            if self.objects:
                fields[key] = obj if req else NotRequired[obj]
            lines.append((key, text if req else "NotRequired[%s]" % text))
        td = None
        if self.objects:
            td = TypedDict(name, fields)
            td.__module__ = self.module
            td.__qualname__ = name
        doc = clean_text(schema.get("description") or "", 300)
        if all(k.isascii() and k.isidentifier() and not keyword.iskeyword(k) for k, _ in lines):
            body = ["class %s(TypedDict):" % name]
            if doc:
                body.append("    " + _docstring_literal(doc, "    "))
            body += ["    %s: %s" % (k, t) for k, t in lines]
            if not lines:
                body.append("    pass")
            text = "\n".join(body)
        else:
            # Keys that are no Python names: the functional form spells them as strings.
            text = "%s = TypedDict(%r, {%s})" % (name, name, ", ".join(
                "%r: %s" % (k, t) for k, t in lines))
        if not self.silent:
            self.classes.append((name, text))
        return td, name


# ---- one tool ----------------------------------------------------------------------------------

def _allows_null(schema, root, depth=0):
    if not isinstance(schema, dict) or depth > 8:
        return not isinstance(schema, dict)
    if "$ref" in schema:
        return _allows_null(_resolve(root, schema["$ref"]), root, depth + 1)
    t = schema.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t) or schema.get("nullable") is True:
        return True
    if None in (schema.get("enum") or []) or ("const" in schema and schema["const"] is None):
        return True
    return any(_allows_null(s, root, depth + 1)
               for k in ("anyOf", "oneOf") for s in (schema.get(k) or []))


def _first_sentence(text):
    line = text.strip().split("\n", 1)[0]
    m = re.match(r"(.+?[.!?])(\s|$)", line)
    return (m.group(1) if m else line)[:200]


class Param:
    __slots__ = ("name", "wire", "schema", "required", "default", "nullable", "obj", "text")


class ToolSpec:
    """What one tool's stub is made of: its parameters (Python name, wire name, schema,
    annotation), return type, docstring and module text."""

    def __init__(self, server, server_alias, tool, alias):
        self.server = server
        self.server_alias = server_alias
        self.tool = tool
        self.name = tool.get("name") if isinstance(tool.get("name"), str) else str(tool.get("name"))
        self.alias = alias
        schema = tool.get("inputSchema")
        self.root = schema if isinstance(schema, dict) else {}
        self.module = module = "mcp.servers." + server_alias
        self.types = TypeBuilder(self.root, module, objects=False)
        top = merge_all_of(self.root, self.root)
        if "$ref" in top:
            target = _resolve(self.root, top["$ref"])
            top = target if isinstance(target, dict) else {}
        self.input = top
        props = top.get("properties") if isinstance(top.get("properties"), dict) else None
        required = [r for r in top.get("required") or [] if isinstance(r, str)]
        extra = top.get("additionalProperties")
        # Extra arguments pass (unchecked but for their schema) when the schema says so, or when
        # it names no parameters at all (a tool that takes anything).
        self.extra = extra if isinstance(extra, dict) else (
            {} if extra is True or (props is None and extra is not False) else None)
        self.params, taken = [], set()
        hint = _pascal(alias)
        for wire, sub in (props or {}).items():
            p = Param()
            p.wire = wire
            name = py_name(wire)
            base, n = name, 1
            while name in taken:
                n += 1
                name = "%s_%d" % (base, n)
            taken.add(name)
            p.name = name
            p.schema = sub if isinstance(sub, dict) else {}
            p.required = wire in required
            p.default = p.schema["default"] if "default" in p.schema and not p.required \
                else NOT_SENT
            p.nullable = _allows_null(sub, self.root)
            p.obj, p.text = self.types.convert(sub, hint + _pascal(wire), 1)
            self.params.append(p)
        self.params.sort(key=lambda p: not p.required)  # required first, else in schema order
        self.by_name = {p.name: p for p in self.params}
        self.by_wire = {p.wire: p for p in self.params}
        out = tool.get("outputSchema")
        self.structured = isinstance(out, dict)
        if self.structured:
            self.out_types = TypeBuilder(out, module, objects=False)
            self.ret_obj, self.ret_text = self.out_types.convert(out, hint + "Result", 1)
        else:
            self.out_types = None
            self.ret_obj, self.ret_text = Any, "Any"
        self._typed = not self.params and not self.structured
        self.description = clean_text(tool.get("description") or "") or \
            "MCP tool %s of server %s." % (self.name, server)
        self._signature = self._doc = self._source = None
        self.line = 0           # of the def in the stub file (source())
        self.path = os.path.join(TREE, server_alias, file_name(alias))

    # -- the signature ---------------------------------------------------------------------
    def _objects(self):
        """The typing objects of the annotations, made now: the same walk as the text's, in
        the same order, so the names agree."""
        if self._typed:
            return
        hint = _pascal(self.alias)
        types = TypeBuilder(self.root, self.module)
        by_wire = {p.wire: p for p in self.params}
        for wire, sub in (self.input.get("properties") or {}).items():
            p = by_wire[wire]
            p.obj, _ = types.convert(sub, hint + _pascal(wire), 1)
        if self.structured:
            out = self.tool.get("outputSchema")
            self.ret_obj, _ = TypeBuilder(out, self.module).convert(out, hint + "Result", 1)
        self._typed = True

    def signature(self):
        self._objects()
        if self._signature is None:
            params = [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY,
                                        default=inspect.Parameter.empty if p.required
                                        else p.default, annotation=p.obj)
                      for p in self.params]
            if self.extra is not None:
                params.append(inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD,
                                                annotation=Any))
            self._signature = inspect.Signature(params, return_annotation=self.ret_obj)
        return self._signature

    def annotations(self):
        self._objects()
        ann = {p.name: p.obj for p in self.params}
        if self.extra is not None:
            ann["arguments"] = Any
        ann["return"] = self.ret_obj
        return ann

    def signature_text(self, prefix=""):
        parts = []
        for p in self.params:
            if p.required:
                parts.append("%s: %s" % (p.name, p.text))
            else:
                parts.append("%s: %s = %s" % (p.name, p.text, _literal(p.default)))
        if self.extra is not None:
            parts.append("**arguments: Any")
        return "%s%s(%s) -> %s" % (prefix, self.alias, ("*, " if self.params else "") +
                                   ", ".join(parts), self.ret_text)

    # -- the docstring -----------------------------------------------------------------------
    def doc(self):
        if self._doc is None:
            self._doc = self._render_doc()
        return self._doc

    def _render_doc(self):
        lines = [self.description, ""]
        if self.params or self.extra is not None:
            lines.append("Args:")
            for p in self.params:
                what = ["Required." if p.required else
                        "Optional, default %s." % _literal(p.default) if p.default is not NOT_SENT
                        else "Optional (not sent when omitted)."]
                if p.wire != p.name:
                    what.append("Sent as %s." % json.dumps(p.wire, ensure_ascii=False))
                what += _constraints(p.schema, self.root)
                desc = clean_text(p.schema.get("description") or "", 500)
                if desc:
                    what.append(desc)
                lines.append("    %s (%s): %s" % (p.name, p.text, " ".join(what)))
                for sub in _shape(p.schema, self.root, DOC_DEPTH, self.types):
                    lines.append("        " + sub)
            if self.extra is not None:
                lines.append("    **arguments: Other arguments, sent as they are.")
            lines.append("")
        lines.append("Returns:")
        if self.structured:
            lines.append("    %s: the tool's structuredContent (it declares an outputSchema)."
                         % self.ret_text)
            out = self.tool.get("outputSchema")
            for sub in _shape(out, out, DOC_DEPTH, self.out_types):
                lines.append("        " + sub)
        else:
            lines.append("    Any: unstructured (the tool declares no outputSchema): its text "
                         "parsed as JSON when it is JSON, else the text; several items as a list.")
        lines += ["", "Raises:",
                  "    TypeError, ValueError: the arguments do not fit the schema (nothing is "
                  "sent).",
                  "    ApprovalDenied: the call was refused by an approval policy (nothing is "
                  "sent).",
                  "    MCPError: the tool or its server reported an error."]
        hints = _hints(self.tool.get("annotations"))
        if hints:
            lines += ["", "Declared by the server (not verified by sandboxd): %s." % hints]
        lines += ["", "MCP tool: %s on server %s." % (json.dumps(self.name, ensure_ascii=False),
                                                      json.dumps(self.server,
                                                                 ensure_ascii=False)),
                  "", "Example:",
                  "    result = await mcp_%s.%s(%s)" % (self.server_alias, self.alias,
                                                       ", ".join(_example_arg(p, self.root)
                                                                 for p in self.params
                                                                 if p.required))]
        return "\n".join(lines)

    # -- the stub file ---------------------------------------------------------------------
    def source(self):
        """The module text of the stub file; sets self.line to its def line."""
        if self._source is not None:
            return self._source
        title = "MCP tool %s of server %s, as sandboxd typed it from the tool's schemas.\n\n" \
            "For reading: calling mcp_%s.%s runs sandboxd's code, never this file." % (
                json.dumps(self.name, ensure_ascii=False),
                json.dumps(self.server, ensure_ascii=False), self.server_alias, self.alias)
        parts = [_docstring_literal(title, ""),
                 "from __future__ import annotations\n\n"
                 "from typing import Any, Literal, NotRequired, TypedDict\n\n"
                 "from mcp.runtime import NOT_SENT"]
        classes = list(self.types.classes)
        if self.out_types is not None:
            classes += self.out_types.classes
        parts += [text for _, text in classes]
        head = "\n\n\n".join(parts) + "\n\n\n"
        self.line = head.count("\n") + 1
        self._source = head + "\n".join([
            "async def " + self.signature_text() + ":",
            "    " + _docstring_literal(self.doc(), "    "),
            "    ...",
            ""])
        return self._source


def file_name(alias):
    return ("tool_" + alias if alias.startswith("__") else alias) + ".py"


def _literal(value):
    return "NOT_SENT" if value is NOT_SENT else repr(value)


def _hints(ann):
    if not isinstance(ann, dict):
        return ""
    out = []
    for key, word in (("readOnlyHint", "read-only"), ("destructiveHint", "destructive"),
                      ("idempotentHint", "idempotent"), ("openWorldHint", "open-world")):
        if ann.get(key) is True:
            out.append(word)
        elif ann.get(key) is False:
            out.append("not " + word)
    return ", ".join(out)


_CONSTRAINT_KEYS = frozenset(("$ref", "enum", "const", "minimum", "maximum", "exclusiveMinimum",
                              "exclusiveMaximum", "minLength", "maxLength", "minItems",
                              "maxItems", "pattern", "format"))


def _constraints(schema, root, depth=0):
    if not isinstance(schema, dict) or depth > 4 or _CONSTRAINT_KEYS.isdisjoint(schema):
        return []
    if "$ref" in schema:
        return _constraints(_resolve(root, schema["$ref"]), root, depth + 1)
    out = []
    if isinstance(schema.get("enum"), list):
        out.append("One of: %s." % ", ".join(repr(v) for v in schema["enum"][:50]))
    if "const" in schema:
        out.append("Always %r." % (schema["const"],))
    for key, word in (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"),
                      ("exclusiveMaximum", "<")):
        v = schema.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append("%s %r." % (word, v))
    for key, word in (("minLength", "at least %d characters"),
                      ("maxLength", "at most %d characters"),
                      ("minItems", "at least %d items"), ("maxItems", "at most %d items")):
        v = schema.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            out.append(word % v + ".")
    if isinstance(schema.get("pattern"), str):
        out.append("Pattern %s." % json.dumps(clean_text(schema["pattern"], 200)))
    if isinstance(schema.get("format"), str):
        out.append("Format %s." % clean_text(schema["format"], 50))
    return out


_NESTING_KEYS = frozenset(("$ref", "allOf", "anyOf", "oneOf", "properties", "items"))


def _object_of(schema, root, depth=0):
    """The object schema (with properties) schema is, or holds as its items; else None."""
    if not isinstance(schema, dict) or depth > 6 or _NESTING_KEYS.isdisjoint(schema):
        return None
    if "$ref" in schema:
        return _object_of(_resolve(root, schema["$ref"]), root, depth + 1)
    schema = merge_all_of(schema, root)
    if isinstance(schema.get("properties"), dict) and schema["properties"]:
        return schema
    if isinstance(schema.get("items"), dict):
        return _object_of(schema["items"], root, depth + 1)
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            found = _object_of(sub, root, depth + 1)
            if found is not None:
                return found
    return None


def _shape(schema, root, depth, types, indent=""):
    """Lines naming the keys of the objects in schema, with their types (the texts types, the
    stub's TypeBuilder, gave them), down to depth."""
    obj = _object_of(schema, root)
    if obj is None or depth <= 0:
        return []
    required = obj.get("required") if isinstance(obj.get("required"), list) else []
    lines = []
    for i, (key, sub) in enumerate(obj["properties"].items()):
        if i >= 40:
            lines.append(indent + "... (%d keys more)" % (len(obj["properties"]) - 40))
            break
        text = types.texts.get(id(sub), "Any")
        desc = clean_text((sub or {}).get("description") or "", 200) if isinstance(sub, dict) \
            else ""
        lines.append("%s%s: %s%s%s" % (indent, _quoted(key), text,
                                       " (required)" if key in required else "",
                                       " - " + desc.replace("\n", " ") if desc else ""))
        lines += _shape(sub, root, depth - 1, types, indent + "    ")
    return lines


@functools.lru_cache(maxsize=8192)
def _quoted(key):
    return json.dumps(key, ensure_ascii=False)


def _example_value(schema, root, depth=0):
    if not isinstance(schema, dict) or depth > 3:
        return "..."
    if "$ref" in schema:
        return _example_value(_resolve(root, schema["$ref"]), root, depth + 1)
    if "default" in schema:
        return repr(schema["default"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return repr(schema["enum"][0])
    if "const" in schema:
        return repr(schema["const"])
    t = schema.get("type")
    t = t[0] if isinstance(t, list) and t else t
    if t == "string":
        return "'...'"
    if t in ("integer", "number"):
        v = schema.get("minimum")
        return repr(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else "1"
    if t == "boolean":
        return "True"
    obj = _object_of(schema, root)
    if t == "array":
        return "[%s]" % _example_value(schema.get("items"), root, depth + 1) \
            if isinstance(schema.get("items"), dict) else "[]"
    if obj is not None:
        req = [k for k in obj.get("required") or [] if k in obj["properties"]]
        return "{%s}" % ", ".join("%s: %s" % (_quoted(k),
                                              _example_value(obj["properties"][k], root,
                                                             depth + 1))
                                  for k in req[:6])
    return "..."


def _example_arg(p, root):
    return "%s=%s" % (p.name, _example_value(p.schema, root))


# ---- the functions -----------------------------------------------------------------------------

def make_function(spec, invoke, sync=False):
    """The function of spec: keyword-only with spec's signature, annotations and docstring; a
    call checks its arguments and hands the wire arguments to invoke(spec, arguments). Its code
    object names the stub file, so inspect.getsource and tracebacks show the stub."""
    if sync:
        def tool(*args, **kwargs):
            return invoke(spec, wire_arguments(spec, kwargs, args))
    else:
        async def tool(*args, **kwargs):
            return await invoke(spec, wire_arguments(spec, kwargs, args))
    spec.source()  # sets spec.line
    tool.__code__ = tool.__code__.replace(co_filename=spec.path, co_name=spec.alias,
                                          co_qualname=spec.alias,
                                          co_firstlineno=max(1, spec.line))
    tool.__name__ = tool.__qualname__ = spec.alias
    tool.__module__ = "mcp.servers." + spec.server_alias
    tool.__doc__ = spec.doc()
    tool.__signature__ = spec.signature()
    tool.__annotations__ = spec.annotations()
    tool.__kwdefaults__ = None
    tool.mcp_server = spec.server
    tool.mcp_tool = spec.name
    return tool


_CACHE = {}  # (server, digest of its tools) -> [ToolSpec]


def specs_for(info):
    """The ToolSpecs of a server info {name, alias, tools}, built once per tools content."""
    tools = info.get("tools") or []
    # The host sends a server's tools as the server listed them: the same content is the same
    # text (no sort_keys: half the cost for 1,000 tools).
    digest = hashlib.sha256(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
                            .encode("utf-8", "surrogatepass")).hexdigest()
    key = (info["name"], info.get("alias"), digest)
    specs = _CACHE.get(key)
    if specs is None:
        alias = info.get("alias") or info["name"]
        specs = [ToolSpec(info["name"], alias, t, t.get("alias") or t.get("name"))
                 for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
        _CACHE[key] = specs
    return specs


# ---- the stub tree -----------------------------------------------------------------------------

def _write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW,
                 0o444)
    try:
        os.write(fd, text.encode("utf-8", "backslashreplace"))
    finally:
        os.close(fd)


def write_tree(info, specs):
    """TREE/<alias>/__init__.py and one module per tool, read-only; a server written before is
    replaced. Failures (a full /tmp) leave the functions working; only the files are missing."""
    alias = info.get("alias") or info["name"]
    folder = os.path.join(TREE, alias)
    try:
        os.makedirs(TREE, mode=0o755, exist_ok=True)
        if os.path.isdir(folder) and not os.path.islink(folder):
            os.chmod(folder, 0o755)
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
        else:
            os.mkdir(folder, 0o755)
        desc = clean_text(info.get("description") or "", 500)
        names = [s.alias for s in specs]
        title = "MCP server %s (mcp_%s): one module per tool, typed by sandboxd from the " \
            "tools' schemas.\n\n%s\n\nFor reading: `await mcp_%s.<tool>(...)` runs sandboxd's " \
            "code, never these files." % (json.dumps(info["name"], ensure_ascii=False), alias,
                                          desc or "(no description)", alias)
        _write(os.path.join(folder, "__init__.py"), "%s\n__all__ = [%s]\n" % (
            _docstring_literal(title, ""), ", ".join(repr(n) for n in names)))
        for spec in specs:
            _write(spec.path, spec.source())
        os.chmod(folder, 0o555)
    except OSError:
        pass


# ---- the renderer of docs (search_tool_docs, sandboxd mcp's search) ---------------------------

def render(spec, detail="summary"):
    """The doc of one tool as text: the signature and the first sentence of the description
    (summary), or the stub's def with its whole docstring (full)."""
    call = "await mcp_%s." % spec.server_alias
    if detail == "full":
        return "# mcp_%s.%s\n%s:\n    %s" % (spec.server_alias, spec.alias,
                                           spec.signature_text("async def "),
                                           _docstring_literal(spec.doc(), "    "))
    return "%s\n    %s" % (spec.signature_text(call), _first_sentence(spec.description))


def render_job(job):
    """A one-shot job of the host (sandboxd mcp's search_tool_docs): {servers: [{name, alias,
    tools}], detail} -> {"docs": {server: {tool: text}}}."""
    detail = "full" if job.get("detail") == "full" else "summary"
    docs = {}
    for info in job.get("servers") or []:
        if not isinstance(info, dict) or not isinstance(info.get("name"), str):
            continue
        docs[info["name"]] = {s.name: render(s, detail) for s in specs_for(info)}
    return {"type": "result", "docs": docs}


def typing_names():
    """Names the stub files use, for a namespace that evaluates their annotations."""
    return {"Any": Any, "Literal": Literal, "NotRequired": NotRequired, "TypedDict": TypedDict,
            "NOT_SENT": NOT_SENT, "typing": typing}
