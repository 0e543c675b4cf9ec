# SPDX-License-Identifier: MIT
"""A fake Core Framework for the tests: the simple MCP form over real HTTP on
loopback, serving definition files and recording every call. Modes make it
misbehave the ways a real framework can (slow, garbage, 500, tool errors)."""
import base64
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Framework:
    def __init__(self):
        self.files = {}          # (app_id, path) -> bytes
        self.calls = []          # (tool, params)
        self.mode = "normal"     # normal | slow | garbage | http500 | tool_error | huge
        self.delay = 0.0
        self.log_delay = 0.0     # seconds logFrameworkMessage takes to answer
        self.values = {}
        self.llm = None          # callable(params) -> result dict, for LLM tests
        self.lock = threading.Lock()
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        # A path of its own: sandboxd caches definitions per endpoint URL, and a later
        # instance may get the same port as an earlier one with other files.
        self.url = "http://127.0.0.1:%d/mcp/%s" % (self.port, uuid.uuid4().hex[:12])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def add(self, app, path, content):
        self.files[(app, path)] = content.encode() if isinstance(content, str) else content

    def tool_calls(self, tool):
        with self.lock:
            return [p for t, p in self.calls if t == tool]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def dispatch(self, tool, params):
        if tool == "core.state.getDefinitionFileContent":
            key = (params.get("app_id"), params.get("file_path"))
            if key not in self.files:
                return 200, {"error": {"code": "NOT_FOUND", "message": "no such file"}}
            return 200, {"result": {"content": base64.b64encode(self.files[key]).decode()}}
        if tool == "core.framework.logFrameworkMessage":
            return 200, {"result": {"ok": True}}
        if tool == "core.state.setRuntimeValue":
            self.values[params["key"]] = params.get("value")
            return 200, {"result": {"ok": True}}
        if tool == "core.state.getRuntimeValue":
            return 200, {"result": {"value": self.values.get(params["key"])}}
        if tool == "core.llm.generate" and self.llm:
            out = self.llm(params)
            if isinstance(out, tuple):
                return out
            return 200, {"result": out}
        return 200, {"error": {"code": "UNKNOWN_TOOL", "message": tool}}

    def _handler(self):
        fw = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(length))
                tool, params = req.get("tool"), req.get("params")
                with fw.lock:
                    fw.calls.append((tool, params))
                mode = fw.mode
                if tool == "core.framework.logFrameworkMessage":
                    mode = "normal"
                    time.sleep(fw.log_delay)
                if mode == "slow":
                    time.sleep(fw.delay)
                if mode == "garbage":
                    self.reply(200, b"<html>this is not json", "text/html")
                    return
                if mode == "http500":
                    self.reply(500, b"internal failure", "text/plain")
                    return
                if mode == "tool_error":
                    self.reply(200, json.dumps({"error": {"code": "BOOM", "message": "tool broke"}}).encode())
                    return
                if mode == "huge":
                    self.reply(200, b'{"result": {"content": "' + b"A" * (40 << 20) + b'"}}')
                    return
                status, body = fw.dispatch(tool, params)
                self.reply(status, json.dumps(body).encode())

            def reply(self, status, data, ctype="application/json"):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
