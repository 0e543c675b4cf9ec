# SPDX-License-Identifier: MIT
"""What the benchmarks share: a server process, a request, a wrk load run."""
import http.client
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = os.environ.get("BENCH_SANDBOXD", str(ROOT / "build" / "sandboxd"))
DURATION = int(os.environ.get("BENCH_DURATION", "8"))
APPS = HERE / "apps"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    def __init__(self, cmd, port):
        self.port = port
        self.log = tempfile.TemporaryFile()
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)

    def wait_up(self, body):
        for _ in range(600):
            try:
                st, resp = post(self.port, body)
                if st == 200:
                    return resp
            except OSError:
                pass
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError("server did not start:\n" + self.log.read().decode(errors="replace"))

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()


def post(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/execute", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    return r.status, data


def jit(script, function, body):
    return {"requestId": "bench", "requestData": {"source": "bench", "body": body},
            "context": {"appId": "bench", "handlerType": "JIT", "mcp_endpoint": "local",
                        "taskDetails": {"script": script, "function": function,
                                        "timeoutMs": 10000}}}


def to_ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(port, body, conns):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(body, f)
    env = dict(os.environ, BENCH_BODY=f.name)
    out = subprocess.run(["wrk", "-t", str(min(conns, 2)), "-c", str(conns), "-d", "%ds" % DURATION,
                          "--latency", "-s", str(HERE / "post.lua"), "http://127.0.0.1:%d/execute" % port],
                         capture_output=True, text=True, env=env).stdout
    os.unlink(f.name)
    lat = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.M))

    def parse(s):
        m = re.match(r"([\d.]+)(\w+)", s)
        return to_ms(m.group(1), m.group(2))

    errors = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(x) for x in m.groups())
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"p50": parse(lat["50"]), "p99": parse(lat["99"]), "rps": rps, "errors": errors}


def check(resp, expect):
    assert resp.get("resultType") == "generic", resp
    assert resp["data"] == expect, resp
