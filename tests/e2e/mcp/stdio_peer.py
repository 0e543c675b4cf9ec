# SPDX-License-Identifier: MIT
"""What the test MCP servers (flaky_server.py, slow_server.py) answer alike: initialize,
tools/list and unknown methods, one JSON-RPC message a line on stdout."""
import json
import sys


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def answer_common(msg, name, tools):
    """Answer msg when it is initialize or tools/list; False for anything else."""
    mid, method = msg.get("id"), msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
    else:
        return False
    return True


def unknown(msg):
    send({"jsonrpc": "2.0", "id": msg.get("id"), "error": {"code": -32601,
                                                            "message": msg.get("method")}})
