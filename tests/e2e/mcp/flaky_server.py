# SPDX-License-Identifier: MIT
"""A deliberately unreliable MCP server over stdio, for tests.
   flaky_server.py crash-on-start   exits before answering initialize
   flaky_server.py normal           tools: ok (answers), die (the process exits), fail (isError),
                                    rpc_error (a JSON-RPC error), env (its environment: what a
                                    server with an env-echo tool hands to sandboxed code)
   flaky_server.py names            tools whose names are not Python identifiers (get—sum, café,
                                    class, 2fa, a.b); each answers with its name and arguments"""
import json
import os
import sys

from stdio_peer import answer_common, send, unknown

if sys.argv[1:] == ["crash-on-start"]:
    sys.stderr.write("flaky: refusing to start\n")
    sys.exit(3)

TOOLS = [{"name": n, "description": d, "inputSchema": {"type": "object"}}
         for n, d in (("ok", "answers with the pid"), ("die", "exits the server"),
                      ("fail", "reports a tool error"), ("rpc_error", "answers a JSON-RPC error"),
                      ("env", "answers with the environment"))]
NAMES = sys.argv[1:] == ["names"]
if NAMES:
    TOOLS = [{"name": n, "description": "answers with its name: " + n,
              "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}}}
             for n in ("get\u2014sum", "caf\u00e9", "class", "2fa", "a.b")]


for line in sys.stdin:
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    if mid is None or answer_common(msg, "flaky", TOOLS):
        continue
    if method == "tools/call":
        name = msg["params"]["name"]
        if NAMES:
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": json.dumps(
                {"tool": name, "arguments": msg["params"].get("arguments")})}]}})
        elif name == "die":
            os._exit(1)
        if name == "fail":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": "the flaky tool failed on purpose"}],
                "isError": True}})
        elif name == "env":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": json.dumps(dict(os.environ))}]}})
        elif name == "rpc_error":
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000, "message": "flaky says no"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": json.dumps({"pid": os.getpid()})}]}})
    else:
        unknown(msg)
