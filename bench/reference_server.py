# SPDX-License-Identifier: MIT
"""The reference the benchmarks compare against: /execute the way the seed design
sketches it (seed 000): a Python HTTP server that, per request, writes the script to a
temporary file and runs `python runner.py SCRIPT FUNCTION` as a subprocess with the input
as JSON on stdin, then parses its stdout. No isolation, or (--bwrap) the same subprocess
wrapped in bubblewrap with new namespaces and a read-only /usr.

    python3 reference_server.py --port 9000 --apps DIR [--bwrap]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RUNNER = r'''
import importlib.util, json, sys, traceback
spec = importlib.util.spec_from_file_location("script", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(mod)
    fn = getattr(mod, sys.argv[2])
    data = json.load(sys.stdin)
    out = {"ok": True, "result": fn(data["requestData"], data["context"])}
except Exception as e:
    out = {"ok": False, "error": {"type": type(e).__name__, "message": str(e),
                                   "traceback": traceback.format_exc()}}
sys.stdout.write(json.dumps(out))
'''


def bwrap_prefix(workdir):
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--ro-bind", workdir, workdir]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = os.readlink("/" + link) if os.path.islink("/" + link) else None
        if target:
            args += ["--symlink", target, "/" + link]
    return args


def prepare(apps, req, use_bwrap, python):
    """The script of req written to a fresh directory: (the command that runs it, the directory)."""
    ctx = req["context"]
    details = ctx["taskDetails"]
    with open(os.path.join(apps, ctx["appId"], details["script"]), "rb") as f:
        source = f.read()  # stands in for the MCP fetch, which sandboxd caches too
    workdir = tempfile.mkdtemp(prefix="ref-")
    script = os.path.join(workdir, "script.py")
    runner = os.path.join(workdir, "runner.py")
    with open(script, "wb") as f:
        f.write(source)
    with open(runner, "w") as f:
        f.write(RUNNER)
    cmd = [python, runner, script, details["function"]]
    return (bwrap_prefix(workdir) + cmd if use_bwrap else cmd), workdir


def response(req, stdout):
    """The /execute answer from the runner's output."""
    out = json.loads(stdout)
    if out["ok"]:
        return {"requestId": req["requestId"], "resultType": "generic", "data": out["result"]}
    return {"requestId": req["requestId"], "resultType": "error",
            "data": {"code": "APPLICATION_ERROR", "message": out["error"]["message"],
                     "details": out["error"]}}


def timeout_s(req):
    return req["context"]["taskDetails"].get("timeoutMs", 10000) / 1000.0


def make_handler(apps, use_bwrap, python):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            req = json.loads(self.rfile.read(length))
            workdir = None
            try:
                cmd, workdir = prepare(apps, req, use_bwrap, python)
                p = subprocess.run(cmd, input=json.dumps(req).encode(), capture_output=True,
                                   timeout=timeout_s(req))
                body, status = response(req, p.stdout), 200
            except Exception as e:  # the reference keeps its own errors simple
                body, status = {"error": str(e)}, 500
            finally:
                if workdir:
                    shutil.rmtree(workdir, ignore_errors=True)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--apps", required=True)
    ap.add_argument("--bwrap", action="store_true")
    ap.add_argument("--python", default="/usr/bin/python3")
    return ap.parse_args()


def main():
    a = parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(a.apps, a.bwrap, a.python))
    httpd.daemon_threads = True
    sys.stderr.write("reference server on %d (bwrap=%s)\n" % (a.port, a.bwrap))
    httpd.serve_forever()


if __name__ == "__main__":
    main()
