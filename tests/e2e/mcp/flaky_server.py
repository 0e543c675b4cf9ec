# SPDX-License-Identifier: MIT
"""A deliberately unreliable MCP server over stdio, for tests.
   flaky_server.py crash-on-start   exits before answering initialize
   flaky_server.py normal           tools: ok (answers), die (the process exits), fail (isError),
                                    rpc_error (a JSON-RPC error)"""
import json
import os
import sys

from stdio_peer import answer_common, send, unknown

if sys.argv[1:] == ["crash-on-start"]:
    sys.stderr.write("flaky: refusing to start\n")
    sys.exit(3)

TOOLS = [{"name": n, "description": d, "inputSchema": {"type": "object"}}
         for n, d in (("ok", "answers with the pid"), ("die", "exits the server"),
                      ("fail", "reports a tool error"), ("rpc_error", "answers a JSON-RPC error"))]


for line in sys.stdin:
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    if mid is None or answer_common(msg, "flaky", TOOLS):
        continue
    if method == "tools/call":
        name = msg["params"]["name"]
        if name == "die":
            os._exit(1)
        if name == "fail":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": "the flaky tool failed on purpose"}],
                "isError": True}})
        elif name == "rpc_error":
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000, "message": "flaky says no"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": json.dumps({"pid": os.getpid()})}]}})
    else:
        unknown(msg)
