# SPDX-License-Identifier: MIT
"""A stdio MCP server with the tools of mcp-server-code-execution-mode's test fixtures
("demo-server": list_things, get_thing) plus names whose Python aliases need upstream's rule:
Get-Time, a.b next to a_b, class, and fail (a tool error). Newline-delimited JSON-RPC on
stdin/stdout (old_server.py's loop).

    list_things()      -> text '["ok"]'
    get_thing(id)      -> text and structuredContent {"id": id}
    Get-Time()         -> text "12:00"
    a.b(), a_b()       -> text "a.b" / "a_b"
    class(x)           -> text x
    cwd()              -> the directory it runs in
    fail()             -> isError with text "failed on purpose"
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import old_server  # noqa: E402

EMPTY = {"type": "object", "properties": {}}
TOOLS = [
    {"name": "list_things", "description": "List available things", "inputSchema": EMPTY},
    {"name": "get_thing", "description": "Retrieve a single thing",
     "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}},
                     "required": ["id"]}},
    {"name": "Get-Time", "description": "The time of day", "inputSchema": EMPTY},
    {"name": "a.b", "description": "Dotted name", "inputSchema": EMPTY},
    {"name": "a_b", "description": "Underscored name", "inputSchema": EMPTY},
    {"name": "class", "description": "A keyword as a name",
     "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
    {"name": "cwd", "description": "The directory the server runs in", "inputSchema": EMPTY},
    {"name": "fail", "description": "Fails with a tool error", "inputSchema": EMPTY},
]


def text(t, error=False, structured=None):
    result = old_server.text(t, error)
    if structured is not None:
        result["structuredContent"] = structured
    return result


def call(name, args):
    if name == "list_things":
        return text(json.dumps(["ok"]))
    if name == "get_thing":
        return text("thing %s" % args.get("id"), structured={"id": args.get("id")})
    if name == "Get-Time":
        return text("12:00")
    if name in ("a.b", "a_b"):
        return text(name)
    if name == "class":
        return text(str(args.get("x")))
    if name == "cwd":
        return text(os.getcwd())
    if name == "fail":
        return text("failed on purpose", error=True)
    return text("Unknown tool: %s" % name, error=True)


if __name__ == "__main__":
    # old_server's protocol loop, with these tools and a current protocol version.
    old_server.VERSION = "2025-06-18"
    old_server.TOOLS = TOOLS
    old_server.call = call
    old_server.stdio()
