# SPDX-License-Identifier: MIT
"""`make bench`: sandboxd against the seed-style reference server, side by side in one run,
on loopback with wrk. Prints a markdown table (p50/p99 latency, throughput, ratios), the
isolation overhead of a cold spawn, memory figures, sessions against a Jupyter kernel
(bench/session_bench.py), data work (pandas, a chart) against cold python and a Jupyter
kernel (bench/data_bench.py), the latency the egress proxy adds to one request
(bench/egress_bench.py), `sandboxd mcp` against its --compat mode (bench/compat_bench.py),
fresh interpreters against warm reuse with their cost per execution (bench/perf_bench.py),
the typed tool stubs of 1,000 tools (bench/stubs_bench.py), E2B's SDK against /e2b
(bench/e2b_bench.py, bench/e2b_bench.mjs), the cold paths (`sandboxd run` against bubblewrap +
python3, `sandboxd mcp` ready, `serve` to /readyz, sessions ready, network policies against
plain executions: bench/coldstart_bench.py) and the state store, the state directory against
PostgreSQL (bench/store_bench.py);
writes them to bench/last-run.md.

Environment: BENCH_DURATION (seconds per load run, default 8), BENCH_SANDBOXD (binary).
"""
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time

import coldstart_bench
import compat_bench
import data_bench
import e2b_bench
import egress_bench
import perf_bench
import session_bench
import store_bench
import stubs_bench

from benchlib import APPS, BIN, DURATION, HERE, ROOT, Proc, check, free_port, jit, post, wrk


EXECUTOR = {"requestId": "bench", "requestData": {"source": "bench"},
            "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local",
                        "taskDetails": {"code": "class Calc:\n    def add(self, a, b):\n        return a + b\n",
                                        "className": "Calc", "methodName": "add",
                                        "methodParams": {"a": 2, "b": 3}, "timeoutMs": 10000}}}
TRIVIAL = jit("handlers/trivial.py", "add", {"a": 2, "b": 3})
TEMPLATE = {"requestId": "bench", "requestData": {"source": "bench", "body": {"text": "BUY NOW"}},
            "context": {"appId": "bench", "handlerType": "LLM", "mcp_endpoint": "local",
                        "taskDetails": {"promptTemplate": "prompts/classify.yaml"}}}
WORK = jit("handlers/work.py", "work", {})


def paced(port, body, rate, n):
    """One client at a fixed rate: latency when the server is not saturated."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = json.dumps(body)
    lat = []
    gap = 1.0 / rate
    for _ in range(n):
        t = time.perf_counter()
        c.request("POST", "/execute", data, {"Content-Type": "application/json"})
        c.getresponse().read()
        dt = time.perf_counter() - t
        lat.append(dt * 1000)
        if gap > dt:
            time.sleep(gap - dt)
    c.close()
    lat.sort()
    return {"p50": lat[len(lat) // 2], "p99": lat[int(len(lat) * 0.99)], "rps": rate, "errors": 0}


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def pss_kb(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        return int(re.search(r"^Pss:\s+(\d+)", f.read(), re.M).group(1))


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def main():
    rows = []

    def add(name, server, clients, r):
        rows.append((name, server, clients, r))
        print("%-28s %-16s %2s clients  p50 %8.2f ms  p99 %8.2f ms  %8.1f req/s  errors %d"
              % (name, server, clients, r["p50"], r["p99"], r["rps"], r["errors"]), flush=True)

    # ---- sandboxd with the warm pool
    port = free_port()
    s = Proc([BIN, "serve", "--port", str(port), "--definitions", str(APPS), "--log-level", "warn"], port)
    check(s.wait_up(TRIVIAL), {"sum": 5})
    check(post(port, WORK)[1], {"n": 40})
    check(post(port, EXECUTOR)[1], {"result": 5, "stdout": "", "stderr": ""})
    check(post(port, TEMPLATE)[1], {"label": "spam", "chars": 7})
    time.sleep(1)
    server_pid = s.p.pid
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/healthz")
    health = json.loads(c.getresponse().read())
    c.close()
    zygotes = [z["pid"] for z in health["pool"]["zygotes"]]  # not the sessions' zygote
    cells = [c for z in zygotes for c in children(z)]
    mem = {"server_rss_kb": rss_kb(server_pid),
           "zygote_rss_kb": max(rss_kb(z) for z in zygotes),
           "cell_rss_kb": statistics.median(rss_kb(c) for c in cells) if cells else 0,
           "cell_pss_kb": statistics.median(pss_kb(c) for c in cells) if cells else 0,
           "idle_cells": len(cells),
           "session_zygote_rss_kb": max((rss_kb(z["pid"]) for z in health["sessionPool"].get("zygotes", ())),
                                        default=0),
           "template_zygote_rss_kb": max((rss_kb(z["pid"]) for z in health["templatePool"].get("zygotes", ())),
                                         default=0)}
    add("trivial JIT", "sandboxd", 1, wrk(port, TRIVIAL, 1))
    add("trivial JIT (paced 100/s)", "sandboxd", 1, paced(port, TRIVIAL, 100, 100 * DURATION // 2))
    add("trivial JIT", "sandboxd", 8, wrk(port, TRIVIAL, 8))
    add("JIT json + 1 ms work", "sandboxd", 1, wrk(port, WORK, 1))
    add("JIT json + 1 ms work", "sandboxd", 8, wrk(port, WORK, 8))
    add("EXECUTOR class.method", "sandboxd", 8, wrk(port, EXECUTOR, 8))
    add("LLM template + schema (echo)", "sandboxd", 1, wrk(port, TEMPLATE, 1))
    s.stop()

    # ---- templates without their own pool (jinja2, yaml, jsonschema imported per call)
    port = free_port()
    s = Proc([BIN, "serve", "--port", str(port), "--definitions", str(APPS), "--log-level", "warn",
              "--template-pool-size", "0"], port)
    check(s.wait_up(TEMPLATE), {"label": "spam", "chars": 7})
    add("LLM template + schema (echo)", "sandboxd, no template pool", 1, wrk(port, TEMPLATE, 1))
    s.stop()

    # ---- the concurrency limit: throughput and latency with 16 clients per --max-running
    ncpu = os.cpu_count() or 1
    sweep = []
    for factor in (1, 2, 4, 8):
        port = free_port()
        s = Proc([BIN, "serve", "--port", str(port), "--definitions", str(APPS), "--log-level",
                  "warn", "--max-running", str(factor * ncpu)], port)
        check(s.wait_up(WORK), {"n": 40})
        r = wrk(port, WORK, 16)
        sweep.append((factor, r))
        print("max-running %2d (%d x cores), 16 clients, 1 ms work: p50 %.2f p99 %.2f %.0f req/s"
              % (factor * ncpu, factor, r["p50"], r["p99"], r["rps"]), flush=True)
        s.stop()

    # ---- sandboxd without the pool (a cold jail per request)
    port = free_port()
    s = Proc([BIN, "serve", "--port", str(port), "--definitions", str(APPS), "--log-level", "warn",
              "--pool-size", "0"], port)
    check(s.wait_up(TRIVIAL), {"sum": 5})
    add("trivial JIT, cold (no pool)", "sandboxd", 1, wrk(port, TRIVIAL, 1))
    add("trivial JIT, cold (no pool)", "sandboxd", 8, wrk(port, TRIVIAL, 8))
    s.stop()

    # ---- the references: the seed design (FastAPI + asyncio subprocess), with and without
    # bubblewrap, and a leaner stdlib variant (threaded http.server + subprocess.run)
    py = "/usr/bin/python3"
    for label, script, extra, scenarios in (
            ("reference", "reference_fastapi.py", [], ((TRIVIAL, 1), (TRIVIAL, 8), (WORK, 8))),
            ("reference+bwrap", "reference_fastapi.py", ["--bwrap"], ((TRIVIAL, 1), (TRIVIAL, 8))),
            ("lean reference", "reference_server.py", [], ((TRIVIAL, 1), (TRIVIAL, 8)))):
        port = free_port()
        s = Proc([py, str(HERE / script), "--port", str(port), "--apps", str(APPS)] + extra, port)
        check(s.wait_up(TRIVIAL), {"sum": 5})
        for body, clients in scenarios:
            name = "trivial JIT" if body is TRIVIAL else "JIT json + 1 ms work"
            add(name, label, clients, wrk(port, body, clients))
        s.stop()

    jb = json.loads(subprocess.run([str(ROOT / "build" / "bench" / "jailbench"), str(ROOT / "runtime"), "200"],
                                   capture_output=True, text=True, check=True).stdout)

    def find(name, server, clients):
        for r in rows:
            if r[0] == name and r[1] == server and r[2] == clients:
                return r[3]

    lines = ["| scenario | server | clients | p50 ms | p99 ms | req/s | errors |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, server, clients, r in rows:
        lines.append("| %s | %s | %d | %.2f | %.2f | %.0f | %d |" % (name, server, clients, r["p50"], r["p99"],
                                                                   r["rps"], r["errors"]))
    sb1, sb8 = find("trivial JIT", "sandboxd", 1), find("trivial JIT", "sandboxd", 8)
    rf1, rf8 = find("trivial JIT", "reference", 1), find("trivial JIT", "reference", 8)
    bw1, bw8 = find("trivial JIT", "reference+bwrap", 1), find("trivial JIT", "reference+bwrap", 8)
    ln8 = find("trivial JIT", "lean reference", 8)
    tp = find("LLM template + schema (echo)", "sandboxd", 1)
    tn = find("LLM template + schema (echo)", "sandboxd, no template pool", 1)
    wk8, rw8 = find("JIT json + 1 ms work", "sandboxd", 8), find("JIT json + 1 ms work", "reference", 8)
    ratios = [
        "- trivial JIT, 8 clients: sandboxd %.0f req/s = **%.1f×** the reference (%.0f), **%.1f×** reference+bwrap (%.0f)"
        % (sb8["rps"], sb8["rps"] / rf8["rps"], rf8["rps"], sb8["rps"] / bw8["rps"], bw8["rps"])
        + ", %.1f× the lean stdlib reference (%.0f)" % (sb8["rps"] / ln8["rps"], ln8["rps"]),
        "- trivial JIT, 1 client: p50 %.2f ms vs %.2f ms (reference), %.2f ms (+bwrap): **%.1f×** lower"
        % (sb1["p50"], rf1["p50"], bw1["p50"], rf1["p50"] / sb1["p50"]),
        "- JIT json + 1 ms work, 8 clients: %.0f vs %.0f req/s: **%.1f×**" % (wk8["rps"], rw8["rps"], wk8["rps"] / rw8["rps"]),
        "- LLM template with outputSchema, 1 client: p50 %.2f ms with the template pool, %.2f ms without: **%.1f×**"
        % (tp["p50"], tn["p50"], tn["p50"] / tp["p50"]),
        "- isolation overhead of a cold spawn (`python -I -S -c pass`, spawn to exit, n=200): plain p50 %.2f ms, "
        "in the jail p50 %.2f ms (+%.2f ms, p99 %.2f vs %.2f)"
        % (jb["plain"]["p50_ms"], jb["jailed"]["p50_ms"], jb["jailed"]["p50_ms"] - jb["plain"]["p50_ms"],
           jb["jailed"]["p99_ms"], jb["plain"]["p99_ms"]),
        "- memory: sandboxd %.1f MB RSS idle; zygote %.1f MB RSS; idle warm interpreter %.1f MB RSS, %.1f MB PSS "
        "(%d ready); the sessions' zygote %.1f MB RSS, the templates' zygote %.1f MB RSS"
        % (mem["server_rss_kb"] / 1024, mem["zygote_rss_kb"] / 1024, mem["cell_rss_kb"] / 1024,
           mem["cell_pss_kb"] / 1024, mem["idle_cells"], mem["session_zygote_rss_kb"] / 1024,
           mem["template_zygote_rss_kb"] / 1024),
    ]
    sweep_lines = ["", "| --max-running | clients | p50 ms | p99 ms | req/s |", "| ---: | ---: | ---: | ---: | ---: |"]
    for factor, r in sweep:
        sweep_lines.append("| %d (%d × cores) | 16 | %.2f | %.2f | %.0f |" % (factor * ncpu, factor, r["p50"], r["p99"], r["rps"]))
    text = "\n".join(lines + [""] + ratios + sweep_lines) + "\n"
    print("fresh against warm reuse, cost per execution, cores, a burst ...", flush=True)
    text += "\n## Fresh interpreters against warm reuse, cost per execution, cores, bursts\n\n" + perf_bench.main()[0]
    print("sessions against a Jupyter kernel ...", flush=True)
    text += "\n## Sessions\n\n" + session_bench.main(free_port())[0]
    print("data work: pandas and a chart against cold python and a Jupyter kernel ...", flush=True)
    text += "\n## Data work\n\n" + data_bench.main(free_port())[0]
    print("E2B's SDK against /e2b ...", flush=True)
    text += "\n## E2B's SDK (docs/E2B.md)\n\n" + e2b_bench.main(free_port())[0]
    print("network egress through the proxy ...", flush=True)
    text += "\n## Network egress (docs/NETWORK.md)\n\n" + egress_bench.main(free_port())[0]
    print("the cold paths: sandboxd run against bwrap + python3, mcp, /readyz ...", flush=True)
    text += "\n## Cold paths (docs/PERFORMANCE.md)\n\n" + coldstart_bench.main()[0]
    print("sandboxd mcp against --compat code-execution-mode ...", flush=True)
    text += "\n## MCP server: native against --compat\n\n" + compat_bench.main()[0]
    print("typed tool stubs for 1,000 tools ...", flush=True)
    text += "\n## Typed tool stubs (docs/SESSIONS.md)\n\n" + stubs_bench.main()[0]
    print("the state store: the state directory against PostgreSQL ...", flush=True)
    text += "\n## The state store (docs/DEPLOY.md)\n\n" + store_bench.main()[0]
    print()
    print(text)
    (HERE / "last-run.md").write_text("Measured %s with `make bench` (BENCH_DURATION=%d)\n\n%s"
                                       % (time.strftime("%Y-%m-%d"), DURATION, text))
    bad = [r for r in rows if r[3]["errors"]]
    if bad:
        print("errors during load runs: %s" % [(r[0], r[1], r[2]) for r in bad])
        sys.exit(1)


if __name__ == "__main__":
    main()
