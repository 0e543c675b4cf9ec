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
                if r.status == 200:
                    return r
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("sandboxd did not become ready:\n" + self.logs())

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

    def health(self):
        return self.request("GET", "/healthz", fresh=True).json

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
