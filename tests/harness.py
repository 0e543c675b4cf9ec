# SPDX-License-Identifier: MIT
"""Drive a real `sandboxd` the way a client would: start `sandboxd serve` on a free
loopback port, talk HTTP/1.1 to it, stop it with SIGTERM and insist that it exits
cleanly (and, for sanitizer builds, without a sanitizer report)."""
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = os.environ.get("SANDBOXD_BIN", str(ROOT / "build" / "sandboxd"))
CELL_LIB = os.environ.get("SANDBOXD_CELL_LIB")
ROOTLESS = os.environ.get("SANDBOXD_ROOTLESS") == "1" or os.geteuid() != 0
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


def write_tenants(doc, mode=0o600):
    """A tenants file (--tenants) holding doc (a dict, or text as it is), owned by us with mode
    (sandboxd refuses one others may write); the caller removes it."""
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    f.write(doc if isinstance(doc, str) else json.dumps(doc))
    f.close()
    os.chmod(f.name, mode)
    return f.name


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.raw = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def __repr__(self):
        return "<Response %d %s>" % (self.status, self.raw[:500])


class Server:
    def __init__(self, *args, definitions=None, env=None, wait=True):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="sandboxd-log-", suffix=".txt", delete=False)
        cmd = [BIN, "serve", "--port", str(self.port), "--log-level", "info"]
        if definitions:
            cmd += ["--definitions", str(definitions)]
        if CELL_LIB:
            cmd += ["--cell-lib", CELL_LIB]
        args = list(args)
        self.state_dir = None
        if "--state-dir" not in args:
            self.state_dir = tempfile.mkdtemp(prefix="sandboxd-state-")
            args += ["--state-dir", self.state_dir]
        if "--mcp-config" not in args and "--no-mcp-discovery" not in args:
            args.append("--no-mcp-discovery")  # hermetic: no ~/.claude.json and friends
        cmd += args
        self.store = "--state-store" in args or bool((env or {}).get("SANDBOXD_STATE_STORE"))
        full_env = dict(os.environ)
        full_env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        full_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=full_env)
        self.conn = None
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("sandboxd exited with %s:\n%s" % (self.proc.returncode, self.logs()))
            try:
                r = self.request("GET", "/healthz", fresh=True)
                if r.status == 200 and (not self.store or self.store_answered()):
                    return r
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("sandboxd did not become ready:\n" + self.logs())

    # What sandboxd logs once a state store in PostgreSQL (reached in the background, after
    # /healthz answers) has answered, or failed to, for the first time.
    STORE_FIRST = ("ready (schema version", "is not ready until it answers", "knows versions up to")

    def store_answered(self):
        logs = self.logs()
        return any(m in logs for m in self.STORE_FIRST)

    def logs(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def connection(self, fresh=False, timeout=120):
        if fresh:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        return self.conn

    def request(self, method, path, body=None, headers=None, fresh=False, timeout=120):
        conn = self.connection(fresh, timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            headers = {"Content-Type": "application/json", **(headers or {})}
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            if not fresh:
                self.conn = None
            raise
        if fresh:
            conn.close()
        return Response(resp.status, resp.getheaders(), data)

    def execute(self, body, headers=None, fresh=False, timeout=120):
        return self.request("POST", "/execute", body, headers, fresh=fresh, timeout=timeout)

    def health(self, token=None):
        """/healthz; its details need the operator's token where one is set (or tenants are)."""
        headers = {"Authorization": "Bearer " + token} if token else None
        return self.request("GET", "/healthz", headers=headers, fresh=True).json

    def stop(self, check=True):
        if self.conn:
            self.conn.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("sandboxd did not stop on SIGTERM:\n" + self.logs())
        logs = self.logs()
        os.unlink(self.log.name)
        if self.state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        if check:
            assert self.proc.returncode == 0, "sandboxd exited %s:\n%s" % (self.proc.returncode, logs[-5000:])
            for marker in SANITIZER_MARKERS:
                assert marker not in logs, "sanitizer report:\n" + logs[-20000:]


class Endpoint(Server):
    """An HTTP endpoint the harness did not start (a proxy, a container), spoken to with the
    same client as a Server."""

    def __init__(self, port):  # not Server.__init__: that would start a sandboxd
        self.port = port
        self.conn = None


def session_create(srv, **body):
    """POST /v1/sessions; the whole 201 answer."""
    r = srv.request("POST", "/v1/sessions", body=body)
    assert r.status == 201, r
    return r.json


def session_run(srv, sid, code, **extra):
    """POST /v1/sessions/ID/execute on a connection of its own; the 200 answer."""
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code, **extra},
                    fresh=True, timeout=300)
    assert r.status == 200, r
    return r.json


def session_info(srv, sid):
    r = srv.request("GET", "/v1/sessions/" + sid, fresh=True)
    assert r.status == 200, r
    return r.json


def wait_until(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def jit_request(script, function, body=None, app="testapp", endpoint="local", request_id="r-1",
                **task):
    details = {"script": script, "function": function}
    details.update(task)
    return {
        "requestId": request_id,
        "requestData": {"source": "http", "method": "POST", "path": "/x", "headers": {},
                        "query": {}, "body": body if body is not None else {}},
        "context": {"appId": app, "componentId": "c1", "traceId": "t-1", "handlerType": "JIT",
                    "mcp_endpoint": endpoint, "taskDetails": details},
    }


def executor_request(code, request_id="r-1", **task):
    details = {"code": code}
    details.update(task)
    return {
        "requestId": request_id,
        "requestData": {"source": "test"},
        "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local", "taskDetails": details},
    }


def run_cli(path, *args, timeout=120, env=None):
    """`sandboxd run FILE` -> (exit code, parsed stdout or None, stderr)."""
    cmd = [BIN, "run", str(path)] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        out = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        out = None
    return p.returncode, out, p.stderr


# ---- MCP clients of sandboxd's own MCP server (docs/MCP.md) ------------------------------------

MCP_VERSION = "2025-11-25"


def sse_events(raw):
    """The data of each event of a text/event-stream body, parsed as JSON."""
    events = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


class McpStdio:
    """`sandboxd mcp` on pipes, spoken to the way an MCP client does: one JSON-RPC message per
    line. Every line it writes to stdout must be JSON; close() insists on it, on a clean exit
    and (for sanitizer builds) on a clean log."""

    def __init__(self, *args, env=None, initialize=True, version=MCP_VERSION, cwd=None,
                 exact=False, capabilities=None):
        """exact: run `sandboxd` with args alone, as an MCP client's configuration would (no
        log level, pool size, state directory or --no-mcp-discovery added; --cell-lib only when
        the tests name one)."""
        import queue
        import threading
        self.log = tempfile.NamedTemporaryFile(prefix="sandboxd-mcp-", suffix=".txt", delete=False)
        self.state_dir = None if exact else tempfile.mkdtemp(prefix="sandboxd-state-")
        cmd = [BIN] if exact else [BIN, "mcp", "--log-level", "info", "--pool-size", "1",
                                   "--state-dir", self.state_dir]
        args = list(args)
        if CELL_LIB:
            args += ["--cell-lib", CELL_LIB]
        if not exact and "--mcp-config" not in args and "--no-mcp-discovery" not in args:
            args.append("--no-mcp-discovery")
        full_env = dict(os.environ)
        full_env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        full_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, env=full_env, cwd=cwd)
        self.messages = queue.Queue()
        self.garbage = []
        self.notifications = []
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.capabilities = capabilities or {}
        if initialize:
            self.init = self.initialize(version)

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                self.garbage.append(line)
        self.messages.put(None)

    def send(self, msg):
        data = msg if isinstance(msg, (str, bytes)) else json.dumps(msg)
        if isinstance(data, str):
            data = data.encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout=120):
        import queue
        try:
            msg = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no message from sandboxd mcp within %s s:\n%s"
                                 % (timeout, self.logs()[-3000:]))
        assert msg is not None, "sandboxd mcp closed stdout:\n" + self.logs()[-3000:]
        return msg

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def wait_for(self, mid, timeout=120):
        """The response to request mid; notifications seen meanwhile go to .notifications."""
        deadline = time.time() + timeout
        while True:
            msg = self.recv(max(0.1, deadline - time.time()))
            if "method" in msg and "id" not in msg:
                self.notifications.append(msg)
                continue
            assert msg.get("id") == mid, "unexpected message %r while waiting for %r" % (msg, mid)
            return msg

    def request(self, method, params=None, timeout=120, mid=None):
        mid = self.new_id() if mid is None else mid
        msg = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(mid, timeout)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self, version=MCP_VERSION):
        r = self.request("initialize", {"protocolVersion": version,
                                        "capabilities": self.capabilities,
                                        "clientInfo": {"name": "pytest", "version": "1"}})
        if "result" in r:
            self.notify("notifications/initialized")
        return r

    def call(self, tool, arguments=None, timeout=120, meta=None):
        params = {"name": tool, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        r = self.request("tools/call", params, timeout)
        assert "result" in r, r
        return r["result"]

    def logs(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def close(self, check=True, timeout=60):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("sandboxd mcp did not exit on EOF:\n" + self.logs()[-5000:])
        self.reader.join(10)
        logs = self.logs()
        os.unlink(self.log.name)
        if self.state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        if check:
            assert self.proc.returncode == 0, "sandboxd mcp exited %s:\n%s" % (
                self.proc.returncode, logs[-5000:])
            assert not self.garbage, "stdout carried non-protocol lines: %r" % self.garbage[:5]
            for marker in SANITIZER_MARKERS:
                assert marker not in logs, "sanitizer report:\n" + logs[-20000:]
        return logs


class McpHttp:
    """An MCP client of /mcp on a harness Server (Streamable HTTP), one MCP session."""

    ACCEPT = "application/json, text/event-stream"

    def __init__(self, server, initialize=True, version=MCP_VERSION, headers=None,
                 capabilities=None):
        self.server = server
        self.headers = dict(headers or {})
        self.capabilities = capabilities or {}
        self.session = None
        self.version = None
        self.next_id = 0
        if initialize:
            self.init = self.initialize(version)

    def post(self, body, headers=None, session=True, raw=False):
        h = {"Content-Type": "application/json", "Accept": self.ACCEPT}
        h.update(self.headers)
        if session and self.session:
            h["MCP-Session-Id"] = self.session
        if session and self.version:
            h["MCP-Protocol-Version"] = self.version
        h.update(headers or {})
        data = body if raw else json.dumps(body)
        r = self.server.request("POST", "/mcp", data, h, fresh=True)
        r.events = sse_events(r.raw) if (r.header("Content-Type") or "").startswith(
            "text/event-stream") else None
        return r

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def request(self, method, params=None, headers=None):
        msg = {"jsonrpc": "2.0", "id": self.new_id(), "method": method}
        if params is not None:
            msg["params"] = params
        r = self.post(msg, headers)
        assert r.status == 200, r
        return r.events[-1] if r.events is not None else r.json

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        return self.post(msg)

    def initialize(self, version=MCP_VERSION):
        r = self.post({"jsonrpc": "2.0", "id": self.new_id(), "method": "initialize",
                       "params": {"protocolVersion": version,
                                  "capabilities": self.capabilities,
                                  "clientInfo": {"name": "pytest", "version": "1"}}})
        assert r.status == 200, r
        if "result" in r.json:
            self.session = r.header("MCP-Session-Id")
            self.version = r.json["result"]["protocolVersion"]
            assert self.notify("notifications/initialized").status == 202
        return r.json

    def call(self, tool, arguments=None, meta=None):
        params = {"name": tool, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        r = self.request("tools/call", params)
        assert "result" in r, r
        return r["result"]

    def delete(self):
        h = {"MCP-Session-Id": self.session}
        h.update(self.headers)
        return self.server.request("DELETE", "/mcp", None, h, fresh=True)
