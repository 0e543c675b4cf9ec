# SPDX-License-Identifier: MIT
"""Fresh interpreters against warm reuse (--warm-reuse), what one execution costs the kernel,
scale with cores and a burst from idle; run by `make bench`, or alone:

    /usr/bin/python3 bench/perf_bench.py [--quick]

- throughput and latency of a trivial JIT call, fresh and reused, against the seed-style
  reference (bench/reference_fastapi.py) measured in the same run;
- per execution: the CPU of the whole machine (user and kernel, from /proc/stat over the load
  run, divided by the executions), the minor page faults the sandbox reports in its verdict
  (job to answer) and those of a cell's whole life (fork to exit, from the zygotes' exit
  reports in /healthz pool.cellMinorFaults / cellExits);
- the same load with the server (and every sandbox, which inherit its affinity) pinned to 1
  core and to all of them (taskset; wrk is not pinned);
- a burst: 100 requests sent at once to a server that was idle, time to each result.
"""
import http.client
import json
import os
import statistics
import sys
import threading
import time

from benchlib import APPS, BIN, DURATION, HERE, Proc, check, free_port, jit, wrk

TRIVIAL = jit("handlers/trivial.py", "add", {"a": 2, "b": 3})
BURST = 100


def start(extra, cpus=None):
    port = free_port()
    cmd = [BIN, "serve", "--port", str(port), "--definitions", str(APPS), "--log-level", "warn",
           "--no-mcp-discovery"] + list(extra)
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    s = Proc(cmd, port)
    check(s.wait_up(TRIVIAL), {"sum": 5})
    return s


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    data = json.loads(c.getresponse().read())
    c.close()
    return data


def proc_ticks(pid, reaped=False):
    """(user, kernel) clock ticks of a process (with reaped: plus its reaped children)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0, 0
    user, kernel = int(v[11]), int(v[12])
    if reaped:
        user, kernel = user + int(v[13]), kernel + int(v[14])
    return user, kernel


def children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def tree_ticks(server_pid):
    """(user, kernel) ticks of sandboxd, its zygotes and every cell they forked: the zygotes
    reap the cells (their times land in the zygote's children times), live cells are added."""
    user, kernel = proc_ticks(server_pid)
    for z in children(server_pid):
        u, k = proc_ticks(z, reaped=True)
        user, kernel = user + u, kernel + k
        for c in children(z):
            u, k = proc_ticks(c, reaped=True)
            user, kernel = user + u, kernel + k
    return user, kernel


def machine_ticks():
    """(user, kernel) ticks of the whole machine (others' work included)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1], v[2] + v[5] + v[6]


def loaded(server, body, clients):
    """wrk, plus CPU per execution (ms, user and kernel: of sandboxd's process tree, and of the
    whole machine) and a cell's faults from fork to exit over the run."""
    hz = os.sysconf("SC_CLK_TCK")
    port = server.port
    p0 = get(port, "/healthz")["pool"]
    t0, m0 = tree_ticks(server.p.pid), machine_ticks()
    r = wrk(port, body, clients)
    t1, m1 = tree_ticks(server.p.pid), machine_ticks()
    p1 = get(port, "/healthz")["pool"]
    n = max(r["rps"] * DURATION, 1)
    ms = 1000.0 / hz / n
    r["user_ms"], r["kernel_ms"] = (t1[0] - t0[0]) * ms, (t1[1] - t0[1]) * ms
    r["machine_user_ms"], r["machine_kernel_ms"] = (m1[0] - m0[0]) * ms, (m1[1] - m0[1]) * ms
    exits = p1.get("cellExits", 0) - p0.get("cellExits", 0)
    faults = p1.get("cellMinorFaults", 0) - p0.get("cellMinorFaults", 0)
    r["cell_faults"] = faults / exits if exits else None
    return r


def sequential(port, body, n=60):
    """Median minor faults and cpu ms of the verdicts of n executions one after another."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = json.dumps(body)
    faults, cpu, reused = [], [], 0
    for _ in range(n):
        c.request("POST", "/execute", data, {"Content-Type": "application/json"})
        v = json.loads(c.getresponse().read())["verdict"]
        if "minorFaults" in v:  # a server before the verdict carried it: none
            faults.append(v["minorFaults"])
        cpu.append(v["cpuMs"])
        reused += v.get("reused", False)
    c.close()
    return {"faults": statistics.median(faults) if faults else None, "cpu_ms": statistics.median(cpu),
            "reused": reused, "n": n}


def burst(port, body, n=BURST):
    """n requests released at once on n open connections; seconds to each result."""
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=120) for _ in range(n)]
    for c in conns:
        c.connect()
    data = json.dumps(body)
    gate = threading.Barrier(n + 1)
    lat, errors = [None] * n, [0]

    def one(i):
        gate.wait()
        t = time.perf_counter()
        try:
            conns[i].request("POST", "/execute", data, {"Content-Type": "application/json"})
            r = conns[i].getresponse()
            resp = json.loads(r.read())
            if r.status != 200 or resp.get("resultType") != "generic":
                errors[0] += 1
        except OSError:
            errors[0] += 1
        lat[i] = (time.perf_counter() - t) * 1000

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    time.sleep(0.2)  # every thread waits at the gate
    t0 = time.perf_counter()
    gate.wait()
    for t in threads:
        t.join()
    total = (time.perf_counter() - t0) * 1000
    for c in conns:
        c.close()
    lat.sort()
    return {"p50": lat[n // 2], "p99": lat[int(n * 0.99) - 1], "max": lat[-1], "total": total,
            "errors": errors[0]}


def reference_rps(clients=8):
    port = free_port()
    s = Proc(["/usr/bin/python3", str(HERE / "reference_fastapi.py"), "--port", str(port), "--apps", str(APPS)], port)
    check(s.wait_up(TRIVIAL), {"sum": 5})
    r = wrk(port, TRIVIAL, clients)
    s.stop()
    return r


MODES = (("fresh", []), ("reuse", ["--warm-reuse", "bench"]))
# BENCH_MODES=fresh: only fresh interpreters (e.g. to compare against a build without reuse).
MODES = tuple(m for m in MODES if m[0] in os.environ.get("BENCH_MODES", "fresh,reuse").split(","))


def main(quick=False):
    ncpu = os.cpu_count() or 1
    load = os.getloadavg()
    cores = [("1", "0")] + ([("%d" % ncpu, "0-%d" % (ncpu - 1))] if ncpu > 1 else [])
    rows, seq, bursts = [], {}, {}
    for mode, extra in MODES:
        for label, cpus in cores:
            s = start(extra, cpus)
            if label != "1" or ncpu == 1:
                seq[mode] = sequential(s.port, TRIVIAL)
                rows.append((mode, label, 1, loaded(s, TRIVIAL, 1)))
            rows.append((mode, label, 8, loaded(s, TRIVIAL, 8)))
            if mode == "reuse":  # the few cells that exit say nothing about a reused execution
                for row in rows[-2:]:
                    row[3]["cell_faults"] = None
            s.stop()
            print("%s on %s core(s) done" % (mode, label), flush=True)
        if not quick:
            s = start(extra)
            time.sleep(3)  # idle: the pool is full, nothing runs
            bursts[mode] = burst(s.port, TRIVIAL)
            s.stop()
    ref = reference_rps()
    lines = ["load average at the start: %.2f %.2f %.2f; %d cores; BENCH_DURATION=%d" % (load + (ncpu, DURATION)), "",
             "| mode | server cores | clients | p50 ms | p99 ms | req/s | × reference | CPU/exec user ms | CPU/exec kernel ms | machine CPU/exec user + kernel ms | faults/cell (fork to exit) | errors |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for mode, label, clients, r in rows:
        cf = "%.0f" % r["cell_faults"] if r["cell_faults"] is not None else "–"
        lines.append("| %s | %s | %d | %.2f | %.2f | %.0f | %.1f× | %.3f | %.3f | %.2f + %.2f | %s | %d |"
                     % (mode, label, clients, r["p50"], r["p99"], r["rps"], r["rps"] / ref["rps"],
                        r["user_ms"], r["kernel_ms"], r["machine_user_ms"], r["machine_kernel_ms"], cf,
                        r["errors"]))
    lines.append("| reference (FastAPI + subprocess) | all | 8 | %.2f | %.2f | %.0f | 1.0× | | | | | %d |"
                 % (ref["p50"], ref["p99"], ref["rps"], ref["errors"]))
    lines += ["", "| mode | verdict minorFaults (job to answer), median | verdict cpuMs, median | reused |",
              "| --- | ---: | ---: | ---: |"]
    for mode, q in seq.items():
        f = "–" if q["faults"] is None else "%.0f" % q["faults"]
        lines.append("| %s | %s | %.2f | %d/%d |" % (mode, f, q["cpu_ms"], q["reused"], q["n"]))
    if bursts:
        lines += ["", "| burst of %d from idle | p50 ms | p99 ms | max ms | all answered ms | errors |" % BURST,
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for mode, b in bursts.items():
            lines.append("| %s | %.1f | %.1f | %.1f | %.1f | %d |" % (mode, b["p50"], b["p99"], b["max"], b["total"], b["errors"]))
    text = "\n".join(lines) + "\n"
    return text, {"rows": rows, "seq": seq, "bursts": bursts, "ref": ref}


if __name__ == "__main__":
    out = main(quick="--quick" in sys.argv)[0]
    print(out)
    if "--write" in sys.argv:
        with open(HERE / "last-perf.md", "w") as f:
            f.write(out)
