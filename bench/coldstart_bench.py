# SPDX-License-Identifier: MIT
"""The cold paths, each against what the same work costs elsewhere, interleaved in one run (a
round runs every command once, in turn, so that all of them meet the same moments of a busy
machine):

- one-shot: `sandboxd run h.py --function f` (a fresh jail; the host discovery cache warm, and
  with --no-host-cache) against `bwrap --unshare-all ... python3 -c` doing the same import and
  call, and bare `python3 -c`; process start to exit, output checked;
- `sandboxd mcp`: process start to the answer to `initialize`, and the first `run_python`
  sent a second later (as a person would), then the next few;
- `sandboxd serve`: process start to the first 200 from /readyz (a warm interpreter ready).

BENCH_BASE_SANDBOXD names another build, measured in the same rounds as "base" (the
before/after of a change). Run by bench/bench.py; alone:
    /usr/bin/python3 bench/coldstart_bench.py [-v]
Environment: BENCH_SANDBOXD (the build), BENCH_COLD_ROUNDS (40), BENCH_MCP_ROUNDS (12),
BENCH_SERVE_ROUNDS (8), BENCH_COLD_ONLY (a comma-separated choice of run, mcp, serve).
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


def main():
    tmp = tempfile.mkdtemp(prefix="bench-cold-")
    load = os.getloadavg()
    only = os.environ.get("BENCH_COLD_ONLY", "run,mcp,serve").split(",")
    try:
        run = bench_run(tmp) if "run" in only else {}
        mcp = bench_mcp(tmp) if "mcp" in only else {}
        serve = bench_serve(tmp) if "serve" in only else {}
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
    return "\n".join(lines) + "\n", {"run": run, "mcp": mcp, "serve": serve,
                                     "load": [load, load_end]}


if __name__ == "__main__":
    text, raw = main()
    print(text)
    if "-v" in sys.argv:
        print(json.dumps(raw, indent=1))
