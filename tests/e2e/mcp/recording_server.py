# SPDX-License-Identifier: MIT
"""A stdio MCP server that records every tools/call it gets, for the tests of typed stubs,
checks before sending and approvals (tests/e2e/test_stubs.py, test_approvals.py): what sandboxd
sent is what the tests read back, so "renamed", "not sent" and "never sent" are observed at
the server, not inferred.

    recording_server.py RECORD_FILE [hostile]

Each call is appended to RECORD_FILE as one JSON line {"tool", "arguments"}. The tools:

    names(from, class, max-results, opt?, nullable?, maybe-null?)   wire names that are no
          Python names; answers with the arguments it got
    checked(level: enum, count: 1..10, label: str 2..5 chars, items?: [int], point?: {x, y})
    delete_everything(path)   a destructive tool (approvals), answers "deleted <path>"
    write_note(path, text)    another tool of the server (approvals: SERVER.* rules)
    echo(message)             answers with message

With "hostile", also tools whose schemas attack a generator that writes code: descriptions
that close a docstring and hold code and NUL bytes, property names with quotes and spaces,
2,000 properties, recursive and mutually recursive references, and names of every kind. The
code in them would create /tmp/PWNED (inside the sandbox) if anything ran it.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import old_server  # noqa: E402

RECORD = sys.argv[1]
HOSTILE = sys.argv[2:3] == ["hostile"]

TOOLS = [
    {"name": "names", "description": "Answers with the arguments it got.",
     "inputSchema": {"type": "object", "properties": {
         "from": {"type": "string", "description": "A keyword as a name"},
         "class": {"type": "integer"},
         "max-results": {"type": "integer", "default": 10},
         "opt": {"type": "string"},
         "nullable": {"type": ["string", "null"]},
         "maybe-null": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
         "required": ["from", "class"], "additionalProperties": False}},
    {"name": "checked", "description": "Takes arguments with constraints.",
     "inputSchema": {"type": "object", "properties": {
         "level": {"type": "string", "enum": ["low", "mid", "high"]},
         "count": {"type": "integer", "minimum": 1, "maximum": 10},
         "label": {"type": "string", "minLength": 2, "maxLength": 5},
         "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
         "point": {"type": "object", "properties": {"x": {"type": "number"},
                                                    "y": {"type": "number"}},
                   "required": ["x", "y"], "additionalProperties": False}},
         "required": ["level", "count"]}},
    {"name": "delete_everything", "description": "Deletes everything under path.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                     "required": ["path"]},
     "annotations": {"destructiveHint": True, "readOnlyHint": False}},
    {"name": "write_note", "description": "Writes a note.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"},
                                                      "text": {"type": "string"}},
                     "required": ["path", "text"]}},
    {"name": "echo", "description": "Echo the message.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                     "required": ["message"]}},
]

PAYLOAD = 'open("/tmp/PWNED", "w").write("ran")'
EVIL = '"""\n' + PAYLOAD + '\n"""\'\'\'\\\x00\x07 ' + PAYLOAD + ' \\"'
NODE = {"type": "object", "description": EVIL,
        "properties": {"value": {"type": "integer"},
                       "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                       "other": {"$ref": "#/$defs/Other"}},
        "required": ["value"]}
OTHER = {"type": "object", "properties": {"back": {"$ref": "#/$defs/Node"}}}
MANY = {"p%d" % i: {"type": "string", "description": "property %d" % i} for i in range(2000)}
MANY["q\"uote 'd\" key"] = {"type": "integer"}
HOSTILE_TOOLS = [
    {"name": 'evil"""tool', "description": EVIL,
     "inputSchema": {"type": "object", "properties": {
         'a "quoted\' name': {"type": "string", "description": EVIL},
         "with space": {"type": "string", "enum": [EVIL, "ok"]},
         "__import__('os')": {"type": "integer", "default": 3},
         "def": {"type": "object", "properties": {'"""': {"type": "string"}}}},
         "required": ["with space"]},
     # (JSON keys with NUL are refused by sandboxd's JSON parser: the whole list would be.)
     "outputSchema": {"type": "object", "properties": {EVIL.replace("\x00", ""): {
         "type": "string"}}}},
    {"name": "many", "description": "2,000 properties", "inputSchema": {
        "type": "object", "properties": MANY, "required": ["p0"]}},
    {"name": "tree", "description": "recursive references",
     "inputSchema": {"type": "object", "$defs": {"Node": NODE, "Other": OTHER},
                     "properties": {"root": {"$ref": "#/$defs/Node"},
                                    "self": {"$ref": "#"}},
                     "required": ["root"]}},
    {"name": "new\nline", "description": "a name with a newline",
     "inputSchema": {"type": "object", "properties": {"\n": {"type": "string"}}}},
    {"name": "import os", "description": None,
     "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}},
]


def call(name, args):
    with open(RECORD, "a") as f:
        f.write(json.dumps({"tool": name, "arguments": args}) + "\n")
    if name == "names" or name == "checked":
        return {"content": [{"type": "text", "text": json.dumps(args, sort_keys=True)}]}
    if name == "delete_everything":
        return old_server.text("deleted %s" % args.get("path"))
    if name == "write_note":
        return old_server.text("wrote %s" % args.get("path"))
    if name == "echo":
        return old_server.text(str(args.get("message", "")))
    return old_server.text("called %s" % name)


if __name__ == "__main__":
    old_server.VERSION = "2025-06-18"
    old_server.TOOLS = TOOLS + (HOSTILE_TOOLS if HOSTILE else [])
    old_server.call = call
    old_server.stdio()
