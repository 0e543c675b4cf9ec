# SPDX-License-Identifier: MIT
"""The state store (docs/DEPLOY.md "State in PostgreSQL"), on loopback: a save_memory +
load_memory round trip from a session's code, p50 and p99, with the state directory against
PostgreSQL (a server of its own, tests/pg.py: once as configured by default, every commit
waiting for its WAL on disk, and once with synchronous_commit=off, which does not wait); and
what the store costs the work that does not touch it: an /execute and a session execution
that saves nothing, on each of the same servers.

The disk's own sync time is measured too (pg_test_fsync's fdatasync of 8 kB), since a
durable write cannot be faster than it, in either store.

Used by bench.py (`make bench`); runs alone too: python3 bench/store_bench.py."""
import http.client
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from benchlib import free_port  # noqa: E402
from pg import Postgres, server_bin  # noqa: E402

BIN = os.environ.get("BENCH_SANDBOXD", str(HERE.parent / "build" / "sandboxd"))
N = int(os.environ.get("BENCH_STORE_N", "500"))

ROUND_TRIP = """
import time
ts = []
for i in range(%(n)d):
    t = time.perf_counter()
    save_memory("k%%d" %% (i %% 20), {"i": i, "note": "a small value"})
    load_memory("k%%d" %% (i %% 20))
    ts.append((time.perf_counter() - t) * 1000)
ts.sort()
(ts[len(ts) // 2], ts[int(len(ts) * 0.99)])
"""

EXECUTOR = {"requestId": "b", "requestData": {"source": "bench"},
            "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local",
                        "taskDetails": {"code": "def f():\n    return 7\n",
                                        "functionName": "f"}}}


def pct(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2], xs[min(len(xs) - 1, int(len(xs) * 0.99))]


class Sandboxd:
    def __init__(self, store_args):
        self.port = free_port()
        self.state = tempfile.mkdtemp(prefix="sbx-bench-store-")
        self.log = tempfile.TemporaryFile()
        self.p = subprocess.Popen([BIN, "serve", "--port", str(self.port), "--log-level", "warn",
                                   "--no-mcp-discovery", "--pool-size", "4",
                                   "--state-dir", self.state] + store_args,
                                  stdout=self.log, stderr=self.log)
        self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        for _ in range(600):
            try:
                if self.call("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError("sandboxd did not start:\n" + self.log.read().decode(errors="replace"))

    def call(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        self.c.request(method, path, data, {"Content-Type": "application/json"} if data else {})
        r = self.c.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def run(self, sid, code):
        st, out = self.call("POST", "/v1/sessions/%s/execute" % sid, {"code": code,
                                                                       "timeoutMs": 300000})
        assert st == 200 and out["status"] == "ok", out
        return out

    def measure(self):
        st, s = self.call("POST", "/v1/sessions", {"workspace": "bench"})
        assert st == 201, s
        sid = s["sessionId"]
        self.run(sid, ROUND_TRIP % {"n": 50})  # connections made, caches warm
        p50, p99 = eval(self.run(sid, ROUND_TRIP % {"n": N})["result"])
        for _ in range(20):
            self.call("POST", "/execute", EXECUTOR)
        execs = []
        for _ in range(N):
            t = time.perf_counter()
            st, out = self.call("POST", "/execute", EXECUTOR)
            execs.append((time.perf_counter() - t) * 1000)
            assert st == 200 and out["data"]["result"] == 7, out
        self.run(sid, "x = 0")
        runs = []
        for _ in range(N // 2):
            t = time.perf_counter()
            self.run(sid, "x = x + 1")
            runs.append((time.perf_counter() - t) * 1000)
        return {"rt": (p50, p99), "exec": pct(execs), "session": pct(runs)}

    def stop(self):
        self.c.close()
        self.p.terminate()
        self.p.wait(60)
        subprocess.run(["rm", "-rf", self.state])


def disk_sync_ms(directory):
    """fdatasync of one 8 kB write on this disk, as pg_test_fsync measures it."""
    tool = os.path.join(server_bin(), "pg_test_fsync")
    path = os.path.join(directory, "fsync-test")
    p = subprocess.run([tool, "-s", "1", "-f", path], capture_output=True, text=True, timeout=120)
    m = re.search(r"fdatasync\s+[\d.]+ ops/sec\s+(\d+) usecs/op", p.stdout)
    return int(m.group(1)) / 1000 if m else float("nan")


def main():
    results = {}
    s = Sandboxd([])
    try:
        results["state directory (fdatasync per write)"] = s.measure()
        sync = disk_sync_ms(s.state)
    finally:
        s.stop()
    for name, settings in [("PostgreSQL, loopback (synchronous_commit=on, the default)", ()),
                           ("PostgreSQL, loopback (synchronous_commit=off)",
                            ("synchronous_commit=off",))]:
        pg = Postgres(durable=True, settings=settings)
        try:
            db = pg.create_db()
            s = Sandboxd(pg.store_args(db))
            try:
                results[name] = s.measure()
            finally:
                s.stop()
        finally:
            pg.close()
    lines = ["One session: %d save_memory + load_memory round trips (a small value, 20 keys), "
             "timed in the session's code; then %d EXECUTOR /execute and %d session executions "
             "that touch no store, one client. This disk's fdatasync of 8 kB: %.2f ms "
             "(pg_test_fsync): the floor of any durable write." % (N, N, N // 2, sync),
             "",
             "| store | save+load p50 ms | p99 ms | /execute p50 ms | p99 ms "
             "| session exec p50 ms | p99 ms |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in results.items():
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |"
                     % (name, r["rt"][0], r["rt"][1], r["exec"][0], r["exec"][1],
                        r["session"][0], r["session"][1]))
    text = "\n".join(lines) + "\n"
    return text, results


if __name__ == "__main__":
    print(main()[0])
