# SPDX-License-Identifier: MIT
"""An MCP server built the way servers on older SDKs are: it speaks protocol 2024-11-05 only
(whatever the client asks for, it answers with that version, as the specification's
negotiation lets a server do) and sends nothing a 2024-11-05 peer would not know: no titles,
no annotations, no outputSchema, no structuredContent. Its tools mirror the stub server of
mcp-server-code-execution-mode's tests: echo(message); plus cwd (its working directory) and
boom (a tool error).

    old_server.py stdio         newline-delimited JSON-RPC on stdin/stdout
    old_server.py http PORTFILE Streamable HTTP on a free loopback port, written to PORTFILE"""
import http.server
import json
import os
import sys

VERSION = "2024-11-05"
TOOLS = [
    {"name": "echo", "description": "Echo the provided message",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                     "required": ["message"]}},
    {"name": "cwd", "description": "The directory the server runs in",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "boom", "description": "Fails with a tool error",
     "inputSchema": {"type": "object", "properties": {}}},
]


def text(t, error=False):
    result = {"content": [{"type": "text", "text": t}]}
    if error:
        result["isError"] = True
    return result


def call(name, args):
    """The CallToolResult of tool name."""
    if name == "echo":
        return text(str(args.get("message", "")))
    if name == "cwd":
        return text(os.getcwd())
    if name == "boom":
        return text("boom failed on purpose", error=True)
    return text("Unknown tool: %s" % name, error=True)


def handle(msg):
    """The answer to one message (None for notifications)."""
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        return None
    params = msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": VERSION, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "old-sdk-stub", "version": "0.9"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = call(params.get("name"), params.get("arguments") or {})
    else:
        return {"jsonrpc": "2.0", "id": mid,
                "error": {"code": -32601, "message": "Method not found: %s" % method}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def stdio():
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = handle(json.loads(line))
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answer = handle(json.loads(body))
        if answer is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_DELETE(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()


def serve_http(portfile):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        serve_http(sys.argv[2])
    else:
        stdio()
