# SPDX-License-Identifier: MIT
"""A stdio MCP server with N generated tools (argv[1], default 1000) whose schemas have the
shapes real servers use (server-filesystem, server-memory, server-everything): strings with
descriptions, integers with bounds and defaults, enums, arrays of objects with required keys,
nested objects, an outputSchema on every third tool. For bench/stubs_bench.py."""
import json
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000


def tool(i):
    props = {
        "path": {"type": "string", "description": "The path of the file %d to work on" % i},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100,
                  "description": "At most this many results"},
        "mode": {"type": "string", "enum": ["fast", "exact", "fuzzy"], "default": "exact"},
        "edits": {"type": "array", "description": "Edits to make",
                  "items": {"type": "object", "properties": {
                      "oldText": {"type": "string", "description": "Text to search for"},
                      "newText": {"type": "string", "description": "Text to replace with"}},
                      "required": ["oldText", "newText"], "additionalProperties": False}},
        "options": {"type": "object", "properties": {"dryRun": {"type": "boolean"},
                                                     "max-depth": {"type": "integer"}}},
    }
    t = {"name": "tool-%04d" % i,
         "description": "Tool number %d: does its work on a path with edits and options, "
                        "and answers with what it did." % i,
         "inputSchema": {"type": "object", "properties": props, "required": ["path"],
                         "additionalProperties": False},
         "annotations": {"readOnlyHint": i % 2 == 0, "destructiveHint": i % 2 == 1}}
    if i % 3 == 0:
        t["outputSchema"] = {"type": "object", "properties": {
            "entities": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "entityType": {"type": "string"}},
                "required": ["name", "entityType"]}},
            "count": {"type": "integer"}}, "required": ["entities", "count"]}
    return t


TOOLS = [tool(i) for i in range(N)]


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "many-tools", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
