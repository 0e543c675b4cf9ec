# SPDX-License-Identifier: MIT
"""The cold paths, each against what the same work costs elsewhere, interleaved in one run (a
round runs every command once, in turn, so that all of them meet the same moments of a busy
machine):

- one-shot: `sandboxd run h.py --function f` (a fresh jail; the host discovery cache warm, and
  with --no-host-cache) against `bwrap --unshare-all ... python3 -c` doing the same import and
  call, and bare `python3 -c`; process start to exit, output checked;
- `sandboxd mcp`: process start to the answer to `initialize`, and the first `run_python`
  sent a second later (as a person would), then the next few;
- `sandboxd serve`: process start to the first 200 from /readyz (a warm interpreter ready);
- sessions: POST /v1/sessions to its 201 (a session ready), and the round trip of `x = x + 1`
  in a live session, with what each costs the server's process tree (CPU and minor faults:
  /proc of sandboxd, its zygotes and their cells, reaped ones included);
- network policies: a trivial EXECUTOR with `taskDetails.network` against the same without
  one, plain and naming a profile, and their cost to the process tree (in blocks of each
  kind, so that the replacement cell a block's executions fork is counted with them).

BENCH_BASE_SANDBOXD names another build, measured in the same rounds as "base" (the
before/after of a change); the servers of both run side by side. Run by bench/bench.py; alone:
    /usr/bin/python3 bench/coldstart_bench.py [-v]
Environment: BENCH_SANDBOXD (the build), BENCH_COLD_ROUNDS (40), BENCH_MCP_ROUNDS (12),
BENCH_SERVE_ROUNDS (8), BENCH_SESSION_ROUNDS (200), BENCH_NET_ROUNDS (10 blocks of 20),
BENCH_COLD_ONLY (a comma-separated choice of run, mcp, serve, sessions, network).
"""
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import compat_bench

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = os.environ.get("BENCH_SANDBOXD", str(ROOT / "build" / "sandboxd"))
BASE = os.environ.get("BENCH_BASE_SANDBOXD")
PY = "/usr/bin/python3"
ROUNDS = int(os.environ.get("BENCH_COLD_ROUNDS", "40"))
MCP_ROUNDS = int(os.environ.get("BENCH_MCP_ROUNDS", "12"))
SERVE_ROUNDS = int(os.environ.get("BENCH_SERVE_ROUNDS", "8"))
SESSION_ROUNDS = int(os.environ.get("BENCH_SESSION_ROUNDS", "200"))
NET_ROUNDS = int(os.environ.get("BENCH_NET_ROUNDS", "10"))
NET_BLOCK = 20
TCK = os.sysconf("SC_CLK_TCK")

HANDLER = "def f(input, context):\n    return {\"ok\": 1, \"n\": len(input)}\n"
CALL = ("import sys; sys.path.insert(0, %r); import h, json; "
        "print(json.dumps(h.f({}, {}), separators=(',', ':')))")


def pct(xs):
    xs = sorted(xs)
    return {"p50": xs[len(xs) // 2], "p99": xs[min(len(xs) - 1, int(len(xs) * 0.99))],
            "n": len(xs)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(cmd, cwd, expect):
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=60)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0 or expect not in p.stdout:
        raise RuntimeError("%s failed (%d): %s %s" % (cmd[0], p.returncode, p.stdout[-500:],
                                                      p.stderr[-2000:]))
    return ms


def bench_run(tmp):
    d = os.path.join(tmp, "app")
    os.makedirs(d)
    with open(os.path.join(d, "h.py"), "w") as f:
        f.write(HANDLER)
    bwrap = shutil.which("bwrap")
    cmds = {}
    builds = [("sandboxd", BIN)] + ([("base", BASE)] if BASE else [])
    for label, binary in builds:
        state = os.path.join(tmp, "state-" + label)
        run = [binary, "run", "h.py", "--function", "f", "--log-level", "warn"]
        if label == "sandboxd":  # a build before the host cache has no --state-dir for run
            run += ["--state-dir", state]
        cmds["%s run" % label] = (run, b'"ok":1')
        if label == "sandboxd":
            cmds["sandboxd run --no-host-cache"] = (run + ["--no-host-cache"], b'"ok":1')
    if bwrap:
        cmds["bwrap + python3"] = (
            [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
             "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink",
             "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
             "--ro-bind", d, "/app", "--chdir", "/app", PY, "-c", CALL % "/app"], b'"ok":1')
    cmds["python3"] = ([PY, "-c", CALL % d], b'"ok":1')
    for cmd, expect in cmds.values():  # warm: page cache, and sandboxd's host cache
        timed(cmd, d, expect)
    times = {k: [] for k in cmds}
    for _ in range(ROUNDS):
        for k, (cmd, expect) in cmds.items():
            times[k].append(timed(cmd, d, expect))
    return {k: pct(v) for k, v in times.items()}


def mcp_round(binary, state):
    t0 = time.perf_counter()
    m = compat_bench.Client(["--state-dir", state, "--no-mcp-discovery"], {}, binary)
    init = (time.perf_counter() - t0) * 1000  # started, and initialize answered
    try:
        time.sleep(1.0)
        calls = []
        for i in range(6):
            t = time.perf_counter()
            r = m.request("tools/call", {"name": "run_python", "arguments": {"code": "x = %d" % i}})
            calls.append((time.perf_counter() - t) * 1000)
            assert "result" in r and not r["result"].get("isError"), r
    finally:
        m.close()
    return init, calls[0], calls[1:]


def bench_mcp(tmp):
    builds = [("sandboxd", BIN)] + ([("base", BASE)] if BASE else [])
    out = {label: {"init": [], "first": [], "later": []} for label, _ in builds}
    for label, binary in builds:  # warm: the host cache, the page cache
        mcp_round(binary, os.path.join(tmp, "mcp-" + label))
    for _ in range(MCP_ROUNDS):
        for label, binary in builds:
            init, first, later = mcp_round(binary, os.path.join(tmp, "mcp-" + label))
            out[label]["init"].append(init)
            out[label]["first"].append(first)
            out[label]["later"].extend(later)
    return {label: {k: pct(v) for k, v in d.items()} for label, d in out.items()}


def readyz_round(binary, state):
    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "serve", "--port", str(port), "--state-dir", state,
                          "--no-mcp-discovery", "--log-level", "warn"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - t0 < 60:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/readyz")
                st = c.getresponse().status
                c.close()
                if st == 200:
                    return (time.perf_counter() - t0) * 1000
            except OSError:
                pass
            time.sleep(0.002)
        raise RuntimeError("serve did not become ready in 60 s")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(60)


def bench_serve(tmp):
    builds = [("sandboxd", BIN)] + ([("base", BASE)] if BASE else [])
    out = {label: [] for label, _ in builds}
    for label, binary in builds:
        readyz_round(binary, os.path.join(tmp, "serve-" + label))
    for _ in range(SERVE_ROUNDS):
        for label, binary in builds:
            out[label].append(readyz_round(binary, os.path.join(tmp, "serve-" + label)))
    return {label: pct(v) for label, v in out.items()}


def tree_usage(pid):
    """(CPU seconds, minor faults) of pid and every descendant alive, each with what it reaped:
    the difference of two readings is what the tree spent between them, cells that came and
    went included (their zygote reaped them)."""
    cpu, flt, todo = 0.0, 0, [pid]
    while todo:
        p = todo.pop()
        try:
            f = open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()
            cpu += sum(int(x) for x in f[11:15]) / TCK
            flt += int(f[7]) + int(f[8])
            for t in os.listdir("/proc/%d/task" % p):
                todo += [int(x) for x in open("/proc/%d/task/%s/children" % (p, t)).read().split()]
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return cpu, flt


class Served:
    """A `sandboxd serve` of one build for the sessions and network rounds, and one keep-alive
    HTTP connection to it."""

    def __init__(self, binary, state, args=()):
        self.port = free_port()
        self.p = subprocess.Popen([binary, "serve", "--port", str(self.port), "--state-dir", state,
                                   "--no-mcp-discovery", "--log-level", "warn"] + list(args),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.c = None
        for _ in range(1200):
            try:
                if self.call("GET", "/readyz")[0] == 200:
                    break
            except OSError:
                self.c = None
            time.sleep(0.05)
        else:
            raise RuntimeError("%s serve did not become ready" % binary)
        time.sleep(1)  # the other pools fill too

    def call(self, method, path, body=None):
        if self.c is None:
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        data = json.dumps(body) if body is not None else None
        self.c.request(method, path, data, {"Content-Type": "application/json"} if data else {})
        r = self.c.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def timed(self, method, path, body=None, ok=(200, 201)):
        t = time.perf_counter()
        st, out = self.call(method, path, body)
        ms = (time.perf_counter() - t) * 1000
        if st not in ok:
            raise RuntimeError("%s %s: %d %s" % (method, path, st, out))
        return ms, out

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(60)


def per_op(before, after, n):
    return {"cpu_ms": (after[0] - before[0]) / n * 1000, "faults": (after[1] - before[1]) / n}


def bench_sessions(tmp):
    builds = [("sandboxd", BIN)] + ([("base", BASE)] if BASE else [])
    srv = {label: Served(b, os.path.join(tmp, "sess-" + label)) for label, b in builds}
    out = {label: {"ready": [], "rt": [], "use": {}} for label in srv}
    try:
        for label, s in srv.items():  # warm: the pools, the workspace, the page cache
            for _ in range(5):
                _, info = s.timed("POST", "/v1/sessions", {})
                s.call("DELETE", "/v1/sessions/" + info["sessionId"])
        use0 = {label: tree_usage(s.p.pid) for label, s in srv.items()}
        for i in range(SESSION_ROUNDS):
            for label in (list(srv) if i % 2 == 0 else list(srv)[::-1]):
                s = srv[label]
                ms, info = s.timed("POST", "/v1/sessions", {})
                out[label]["ready"].append(ms)
                s.timed("DELETE", "/v1/sessions/" + info["sessionId"], ok=(204,))
                time.sleep(0.05)  # the pool refills, as between agents' sessions
        for label, s in srv.items():
            out[label]["use"]["ready"] = per_op(use0[label], tree_usage(s.p.pid), SESSION_ROUNDS)
        sids = {}
        for label, s in srv.items():
            _, info = s.timed("POST", "/v1/sessions", {})
            sids[label] = "/v1/sessions/%s/execute" % info["sessionId"]
            for _ in range(20):
                s.timed("POST", sids[label], {"code": "x = 0"})
        n = 3 * SESSION_ROUNDS
        use0 = {label: tree_usage(s.p.pid) for label, s in srv.items()}
        for i in range(n):
            for label in (list(srv) if i % 2 == 0 else list(srv)[::-1]):
                ms, r = srv[label].timed("POST", sids[label], {"code": "x = x + 1"})
                assert r["status"] == "ok", r
                out[label]["rt"].append(ms)
        for label, s in srv.items():
            out[label]["use"]["rt"] = per_op(use0[label], tree_usage(s.p.pid), n)
    finally:
        for s in srv.values():
            s.stop()
    return {label: {"ready": pct(d["ready"]), "rt": pct(d["rt"]), "use": d["use"]}
            for label, d in out.items()}


NET_CODE = {"requestId": "bench", "requestData": {"source": "bench"},
            "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local",
                        "taskDetails": {"code": "1 + 1", "timeoutMs": 20000}}}


# A profile for the rounds that name one: its own pool, and with a policy its network pool.
NET_PROFILE = "benchprof"


def net_request(network, profile=None):
    body = json.loads(json.dumps(NET_CODE))
    if network:
        body["context"]["taskDetails"]["network"] = {"allow": ["api.test:443"]}
    if profile:
        body["context"]["taskDetails"]["profile"] = profile
    return body


def bench_network(tmp):
    builds = [("sandboxd", BIN)] + ([("base", BASE)] if BASE else [])
    args = ["--pool-size", "4", "--egress-allow", "api.test:443",
            "--profile", NET_PROFILE + "=fractions:size=2"]
    srv = {label: Served(b, os.path.join(tmp, "net-" + label), args) for label, b in builds}
    kinds = [(label, prof, net) for label in srv for prof in (None, NET_PROFILE)
             for net in (False, True)]
    out = {k: {"ms": [], "cpu": 0.0, "flt": 0} for k in kinds}
    try:
        for label, prof, net in kinds:  # warm (and start the profile's pools)
            for _ in range(5):
                srv[label].timed("POST", "/execute", net_request(net, prof))
        time.sleep(1)
        for i in range(NET_ROUNDS):
            for k in (kinds if i % 2 == 0 else kinds[::-1]):
                label, prof, net = k
                s = srv[label]
                u0 = tree_usage(s.p.pid)
                for _ in range(NET_BLOCK):
                    ms, r = s.timed("POST", "/execute", net_request(net, prof))
                    assert r["resultType"] == "generic", r
                    out[k]["ms"].append(ms)
                    time.sleep(0.02)
                time.sleep(0.2)  # the block's replacement cells are forked and ready
                u1 = tree_usage(s.p.pid)
                out[k]["cpu"] += u1[0] - u0[0]
                out[k]["flt"] += u1[1] - u0[1]
    finally:
        for s in srv.values():
            s.stop()
    n = NET_ROUNDS * NET_BLOCK
    return {"%s%s %s" % (label, " profile" if prof else "", "network" if net else "plain"):
            dict(pct(d["ms"]), cpu_ms=d["cpu"] / n * 1000, faults=d["flt"] / n)
            for (label, prof, net), d in out.items()}


def main():
    tmp = tempfile.mkdtemp(prefix="bench-cold-")
    load = os.getloadavg()
    only = os.environ.get("BENCH_COLD_ONLY", "run,mcp,serve,sessions,network").split(",")
    try:
        run = bench_run(tmp) if "run" in only else {}
        mcp = bench_mcp(tmp) if "mcp" in only else {}
        serve = bench_serve(tmp) if "serve" in only else {}
        sessions = bench_sessions(tmp) if "sessions" in only else {}
        network = bench_network(tmp) if "network" in only else {}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load_end = os.getloadavg()
    ref = run.get("bwrap + python3")
    lines = ["Load average at start %.1f, at end %.1f (1 min); %d rounds, interleaved." %
             (load[0], load_end[0], ROUNDS), "",
             "| one-shot (process start to exit) | p50 ms | p99 ms | p50 / bwrap + python3 |",
             "| --- | ---: | ---: | ---: |"]
    for k, v in run.items():
        lines.append("| %s | %.2f | %.2f | %s |" % (
            k, v["p50"], v["p99"], "%.2f" % (v["p50"] / ref["p50"]) if ref else "–"))
    lines += ["", "| `sandboxd mcp` (%d starts) | initialize p50 ms | p99 ms | first run_python "
              "(1 s later) p50 ms | p99 ms | later run_python p50 ms | p99 ms |" % MCP_ROUNDS,
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, d in mcp.items():
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            label, d["init"]["p50"], d["init"]["p99"], d["first"]["p50"], d["first"]["p99"],
            d["later"]["p50"], d["later"]["p99"]))
    lines += ["", "| `sandboxd serve` (%d starts) | process start to /readyz 200, p50 ms | p99 ms |"
              % SERVE_ROUNDS, "| --- | ---: | ---: |"]
    for label, d in serve.items():
        lines.append("| %s | %.1f | %.1f |" % (label, d["p50"], d["p99"]))
    lines += ["", "| sessions (%d created, %d round trips) | session ready p50 ms | p99 ms | "
              "tree CPU ms | faults | round trip p50 ms | p99 ms | tree CPU ms | faults |"
              % (SESSION_ROUNDS, 3 * SESSION_ROUNDS),
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, d in sessions.items():
        lines.append("| %s | %.2f | %.2f | %.2f | %.0f | %.3f | %.3f | %.3f | %.0f |" % (
            label, d["ready"]["p50"], d["ready"]["p99"], d["use"]["ready"]["cpu_ms"],
            d["use"]["ready"]["faults"], d["rt"]["p50"], d["rt"]["p99"],
            d["use"]["rt"]["cpu_ms"], d["use"]["rt"]["faults"]))
    lines += ["", "| EXECUTOR `1 + 1` (%d each, blocks of %d) | p50 ms | p99 ms | p50 / plain | "
              "tree CPU ms | faults |" % (NET_ROUNDS * NET_BLOCK, NET_BLOCK),
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for k, d in network.items():
        plain = network.get(k.rsplit(" ", 1)[0] + " plain")
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.0f |" % (
            k, d["p50"], d["p99"], d["p50"] / plain["p50"], d["cpu_ms"], d["faults"]))
    return "\n".join(lines) + "\n", {"run": run, "mcp": mcp, "serve": serve,
                                     "sessions": sessions, "network": network,
                                     "load": [load, load_end]}


if __name__ == "__main__":
    text, raw = main()
    print(text)
    if "-v" in sys.argv:
        print(json.dumps(raw, indent=1))
