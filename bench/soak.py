# SPDX-License-Identifier: MIT
"""`make soak [SOAK_SECONDS=N]`: a bounded soak test of the release build.

Starts `build/sandboxd serve` (full isolation, warm pools) on a free loopback port and
drives it with a mixed load for N seconds (default 300) from a few client threads: JIT
(success, exception, time limit, memory limit, output limit), EXECUTOR, requests that are
refused (400, SCRIPT_NOT_FOUND), a control-only workflow, an LLM template (echo model), and
sessions (create, execute, time limit, delete; some abandoned to the idle reaper). Every
answer is checked against what that scenario must produce: anything else is an unexpected
outcome, and one is enough to fail.

At checkpoints the load pauses, sandboxd is let to settle (nothing running, the pools full
again, no live session), and its resources are sampled: RSS, open fds, threads, child
processes (pool zygotes, warm interpreters, sessions) and its per-sandbox cgroups. After a
warm-up (a fifth of the run) a least-squares trend over the checkpoints judges growth: a
resource whose trend over the run exceeds its tolerance fails the soak — a trend, not a
single sample. Tables of outcomes and of resources are printed; exit status 0 or 1.

Options: --seconds N, --clients N (default 4), --binary PATH, --checkpoint-s N (15).
"""
import argparse
import http.client
import json
import os
import pathlib
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
import harness  # noqa: E402

APP = "soak"
HANDLERS = '''\
import time


def add(request, context):
    body = request["body"]
    return {"sum": body["a"] + body["b"]}


def boom(request, context):
    raise ValueError("soak failure %d" % request["body"]["n"])


def sleepy(request, context):
    time.sleep(30)


def hog(request, context):
    blocks = []
    while True:
        blocks.append(bytearray(16 << 20))


def chatty(request, context):
    print("x" * 4096 * 64)
    return 1
'''
WORKFLOW = '''\
startAt: check
steps:
  check:
    type: control
    output: {n: $.requestData.body.n}
    transitions:
      - when: {path: $.steps.check.output.n, greaterThan: 5}
        next: big
      - next: small
  big: {type: control, output: {statusCode: 201, body: {size: big}}, end: true}
  small: {type: control, output: {statusCode: 200, body: {size: small}}, end: true}
'''
TEMPLATE = "template: 'Echo {{ input.n }}'\n"

# Tolerances of the trend over the run, after the warm-up.
TOLERANCE = {"rss_mb": 16.0, "fds": 4, "threads": 4, "processes": 2, "cgroups": 2}


def context(handler, **extra):
    c = {"appId": APP, "handlerType": handler, "mcp_endpoint": "local"}
    c.update(extra)
    return c


def jit(function, body, **task):
    return {"requestId": "soak", "requestData": {"source": "soak", "body": body},
            "context": context("JIT", taskDetails={"script": "handlers/soak.py",
                                                   "function": function, **task})}


def error_code(r):
    return r.json and r.json.get("resultType") == "error" and r.json["data"]["code"]


# ---- scenarios: (name, weight, fn(client, rng) -> None or a string saying what was wrong) ----

def s_jit_ok(c, rng):
    a, b = rng.randrange(1000), rng.randrange(1000)
    r = c.execute(jit("add", {"a": a, "b": b}))
    if r.status != 200 or r.json.get("data") != {"sum": a + b}:
        return "add: %r" % r


def s_jit_error(c, rng):
    n = rng.randrange(1000)
    r = c.execute(jit("boom", {"n": n}))
    if error_code(r) != "APPLICATION_ERROR" or "soak failure %d" % n not in r.json["data"]["message"]:
        return "boom: %r" % r


def s_jit_timeout(c, rng):
    r = c.execute(jit("sleepy", {}, timeoutMs=300))
    if error_code(r) != "TIMEOUT":
        return "sleepy: %r" % r


def s_jit_memory(c, rng):
    r = c.execute(jit("hog", {}, memoryMb=64))
    if error_code(r) != "MEMORY_LIMIT":
        return "hog: %r" % r


def s_jit_output(c, rng):
    r = c.execute(jit("chatty", {}))
    if error_code(r) != "OUTPUT_LIMIT":
        return "chatty: %r" % r


def s_executor(c, rng):
    x = rng.randrange(100)
    code = "class C:\n    def twice(self, x):\n        print('twice', x)\n        return 2 * x\n"
    r = c.execute({"requestId": "soak", "requestData": {"source": "soak"},
                   "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local",
                               "taskDetails": {"code": code, "className": "C",
                                               "methodName": "twice",
                                               "methodParams": {"x": x}}}})
    if r.status != 200 or r.json["data"] != {"result": 2 * x, "stdout": "twice %d\n" % x,
                                             "stderr": ""}:
        return "executor: %r" % r


def s_refused(c, rng):
    kind = rng.randrange(3)
    if kind == 0:
        r = c.request("POST", "/execute", '{"requestId": ', {"Content-Type": "application/json"})
        ok = r.status == 400 and r.json["error"]["code"] == "INVALID_JSON"
    elif kind == 1:
        body = jit("add", {})
        del body["context"]["mcp_endpoint"]
        r = c.execute(body)
        ok = r.status == 400 and r.json["error"]["field"] == "context.mcp_endpoint"
    else:
        body = jit("add", {})
        body["context"]["taskDetails"]["script"] = "handlers/missing.py"
        r = c.execute(body)
        ok = error_code(r) == "SCRIPT_NOT_FOUND"
    if not ok:
        return "refused(%d): %r" % (kind, r)


def s_workflow(c, rng):
    n = rng.randrange(10)
    r = c.execute({"requestId": "soak", "requestData": {"source": "soak", "body": {"n": n}},
                   "context": context("WORKFLOW", workflowInfo={"workflowId": "flows/size.yaml"})})
    want = {"statusCode": 201 if n > 5 else 200, "headers": {},
            "body": {"size": "big" if n > 5 else "small"}, "bodyEncoding": "utf-8"}
    if r.status != 200 or r.json.get("data") != want:
        return "workflow: %r" % r


def s_llm(c, rng):
    n = rng.randrange(1000)
    r = c.execute({"requestId": "soak", "requestData": {"source": "soak", "body": {"n": n}},
                   "context": context("LLM", taskDetails={"promptTemplate": "prompts/echo.yaml"})})
    if r.status != 200 or r.json.get("data") != "Echo %d" % n:
        return "llm: %r" % r


def s_session(c, rng):
    abandon = rng.random() < 0.3
    r = c.request("POST", "/v1/sessions", {"idleTimeoutS": 1} if abandon else {})
    if r.status != 201:
        return "session create: %r" % r
    sid = r.json["sessionId"]
    run = "/v1/sessions/%s/execute" % sid
    steps = [({"code": "x = 40"}, "ok", None), ({"code": "x + 2"}, "ok", "42")]
    if not abandon:
        steps.append(({"code": "import time\ntime.sleep(30)", "timeoutMs": 300}, "timeout", None))
        steps.append(({"code": "x"}, "ok", "40"))
    for body, status, result in steps:
        r = c.request("POST", run, body)
        if r.status != 200 or r.json["status"] != status or (result and r.json["result"] != result):
            return "session %s: %r" % (body["code"][:20], r)
    if not abandon:
        r = c.request("DELETE", "/v1/sessions/" + sid)
        if r.status != 204:
            return "session delete: %r" % r


SCENARIOS = [
    ("jit ok", 30, s_jit_ok), ("jit exception", 8, s_jit_error), ("jit timeout", 3, s_jit_timeout),
    ("jit memory limit", 2, s_jit_memory), ("jit output limit", 3, s_jit_output),
    ("executor", 15, s_executor), ("refused", 8, s_refused), ("workflow", 8, s_workflow),
    ("llm template", 6, s_llm), ("session", 5, s_session),
]


class Client:
    """One keep-alive connection; reconnects when the server closed it."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        if isinstance(body, dict):
            body = json.dumps(body)
            headers = {"Content-Type": "application/json"}
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                return harness.Response(resp.status, resp.getheaders(), resp.read())
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def execute(self, body):
        return self.request("POST", "/execute", body)


# ---- resources ---------------------------------------------------------------------------------

def status_field(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])


def descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = 0, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out += 1
            todo.append(child)
    return out


def cgroup_roots(pid):
    """Where sandboxd keeps its per-sandbox cgroups: cgroup v1 <own>/sandboxd-<pid> per
    controller, cgroup v2 <own>/../cells (sandboxd moves itself into <own>/supervisor)."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ")
            fstype, _, options = right.split()[:3]
            if fstype in ("cgroup", "cgroup2"):
                mounts.append((fstype, left.split()[4], set(options.split(","))))
    roots = set()
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            hier, ctrls, path = line.rstrip("\n").split(":", 2)
            for fstype, point, options in mounts:
                if hier == "0" and fstype == "cgroup2":
                    own = pathlib.Path(point + path)
                    if own.name == "supervisor":
                        roots.add(own.parent / "cells")
                elif fstype == "cgroup" and ctrls and set(ctrls.split(",")) <= options:
                    roots.add(pathlib.Path(point + path) / ("sandboxd-%d" % pid))
    return [r for r in roots if r.is_dir()]


def count_cgroups(roots):
    if not roots:
        return None
    return sum(len(dirs) for root in roots for _, dirs, _ in os.walk(root))


def sample(pid, roots):
    return {"rss_mb": status_field(pid, "VmRSS") / 1024.0,
            "fds": len(os.listdir("/proc/%d/fd" % pid)),
            "threads": status_field(pid, "Threads"),
            "processes": descendants(pid),
            "cgroups": count_cgroups(roots)}


def settle(srv, timeout=30):
    """Wait until nothing runs, every pool is full again and no session is live."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        h = srv.health()
        pools = [h.get(k) for k in ("pool", "sessionPool", "templatePool") if h.get(k)]
        metrics = srv.request("GET", "/metrics", fresh=True).raw.decode()
        live = [line for line in metrics.splitlines() if line.startswith("sandboxd_sessions_live")]
        if (h["executions"]["running"] == 0 and h["executions"]["queued"] == 0
                and all(p["ready"] >= p["target"] for p in pools)
                and live and float(live[0].split()[-1]) == 0):
            return True
        time.sleep(0.2)
    return False


def slope(points):
    """Least-squares slope of [(t, v)]."""
    ts = [t for t, _ in points]
    vs = [v for _, v in points]
    mt, mv = statistics.fmean(ts), statistics.fmean(vs)
    den = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (v - mv) for t, v in points) / den if den else 0.0


# ---- the run -------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--checkpoint-s", type=float, default=15)
    ap.add_argument("--binary", default=str(ROOT / "build" / "sandboxd"))
    args = ap.parse_args()
    harness.BIN = args.binary

    apps = pathlib.Path(tempfile.mkdtemp(prefix="sandboxd-soak-"))
    for rel, text in (("handlers/soak.py", HANDLERS), ("flows/size.yaml", WORKFLOW),
                      ("prompts/echo.yaml", TEMPLATE)):
        (apps / APP / rel).parent.mkdir(parents=True, exist_ok=True)
        (apps / APP / rel).write_text(text)
    srv = harness.Server("--pool-size", "4", "--output-limit-kb", "64", "--session-idle-s", "600",
                         definitions=apps)
    pid = srv.proc.pid
    roots = cgroup_roots(pid)

    names = [s[0] for s in SCENARIOS]
    weights = [s[1] for s in SCENARIOS]
    counts = {n: 0 for n in names}
    latencies = {n: [] for n in names}
    unexpected = []
    lock = threading.Lock()
    go = threading.Event()
    stop = threading.Event()
    idle = [threading.Event() for _ in range(args.clients)]

    def worker(i):
        rng = random.Random(1000 + i)
        client = Client(srv.port)
        while not stop.is_set():
            if not go.is_set():
                idle[i].set()
                go.wait(0.5)
                continue
            idle[i].clear()
            name, _, fn = SCENARIOS[rng.choices(range(len(SCENARIOS)), weights)[0]]
            t0 = time.monotonic()
            try:
                wrong = fn(client, rng)
            except Exception as e:  # a broken connection is an unexpected outcome too
                wrong = "%s: %s" % (type(e).__name__, e)
            dt = time.monotonic() - t0
            with lock:
                counts[name] += 1
                latencies[name].append(dt)
                if wrong:
                    unexpected.append("%s: %s" % (name, wrong[:300]))
        idle[i].set()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(args.clients)]
    for t in threads:
        t.start()
    start = time.monotonic()
    checkpoints = []  # (seconds since start, sample)

    def checkpoint():
        go.clear()
        for e in idle:
            e.wait(120)
        settled = settle(srv)
        s = sample(pid, roots)
        s["settled"] = settled
        checkpoints.append((time.monotonic() - start, s))

    checkpoint()  # before any load
    go.set()
    try:
        while time.monotonic() - start < args.seconds:
            time.sleep(min(args.checkpoint_s, max(0.0, args.seconds - (time.monotonic() - start))))
            checkpoint()
            if srv.proc.poll() is not None:
                unexpected.append("sandboxd exited with %s" % srv.proc.returncode)
                break
            go.set()
    finally:
        stop.set()
        go.set()
        for t in threads:
            t.join(150)
        try:
            srv.stop()
            stopped = None
        except AssertionError as e:
            stopped = str(e)[:2000]
        shutil.rmtree(apps, ignore_errors=True)

    elapsed = time.monotonic() - start
    total = sum(counts.values())
    print("\n## Soak: %d s, %d clients, %d requests (%.0f/s)\n" % (elapsed, args.clients, total,
                                                                  total / elapsed))
    print("| scenario | count | p50 ms | p99 ms |")
    print("| --- | ---: | ---: | ---: |")
    for n in names:
        lat = sorted(latencies[n])
        if lat:
            print("| %s | %d | %.1f | %.1f |" % (n, counts[n], 1000 * lat[len(lat) // 2],
                                               1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))]))

    warm = [(t, s) for t, s in checkpoints if t >= max(elapsed / 5, 10)]
    print("\n| resource | start | after warm-up | end | trend over the run | tolerance | verdict |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    failed = bool(unexpected) or stopped is not None
    for key, tol in TOLERANCE.items():
        if checkpoints[0][1][key] is None:
            print("| %s | n/a (no cgroups) | | | | | |" % key)
            continue
        pts = [(t, s[key]) for t, s in warm]
        growth = slope(pts) * (pts[-1][0] - pts[0][0]) if len(pts) >= 3 else 0.0
        bad = len(pts) >= 3 and growth > tol
        failed |= bad
        fmt = "%.1f" if key == "rss_mb" else "%d"
        print("| %s | %s | %s | %s | %+.1f | %s | %s |" % (
            key, fmt % checkpoints[0][1][key], fmt % warm[0][1][key] if warm else "-",
            fmt % checkpoints[-1][1][key], growth, tol, "GROWS" if bad else "flat"))
    if len(warm) < 3:
        print("\n(too short to judge a trend: %d checkpoints after the warm-up)" % len(warm))
    unsettled = sum(1 for _, s in checkpoints if not s["settled"])
    if unsettled:
        print("\n%d checkpoint(s) did not settle within 30 s" % unsettled)
        failed = True
    if unexpected:
        print("\n%d unexpected outcome(s), the first ones:" % len(unexpected))
        for u in unexpected[:10]:
            print("  " + u)
    if stopped:
        print("\nsandboxd did not stop cleanly: " + stopped)
    print("\nsoak: %s" % ("FAILED" if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
