# SPDX-License-Identifier: MIT
"""Two builds of sandboxd side by side: the CPU and the minor page faults one trivial JIT
execution costs the whole process tree (sandboxd, its zygotes and every cell), interleaved so
that both see the same moments of the machine. Not part of `make bench` (it needs a second
build); for the before/after of a change:

    /usr/bin/python3 bench/build_compare.py BEFORE/sandboxd AFTER/sandboxd [ROUNDS]

Per round and build: a server runs BENCH_DURATION seconds idle, then another one as long under
wrk with 8 connections; the tree's CPU and faults come from wait4() at exit, and the idle run's
are subtracted, so what remains is the cost of the executions. Also the sandboxd process alone
(its own threads, from /proc/PID/stat over the load run).
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import APPS, DURATION, HERE, free_port, jit, post

TRIVIAL = jit("handlers/trivial.py", "add", {"a": 2, "b": 3})


def own_cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def run(binary, load):
    port = free_port()
    p = subprocess.Popen([binary, "serve", "--port", str(port), "--definitions", str(APPS),
                          "--log-level", "warn", "--no-mcp-discovery"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            if post(port, TRIVIAL)[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.05)
    time.sleep(1)
    n, own = 0, 0.0
    if load:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(TRIVIAL, f)
        own = own_cpu(p.pid)
        out = subprocess.run(["wrk", "-t", "2", "-c", "8", "-d", "%ds" % DURATION, "-s",
                              str(HERE / "post.lua"), "http://127.0.0.1:%d/execute" % port],
                             capture_output=True, text=True, env=dict(os.environ, BENCH_BODY=f.name)).stdout
        own = own_cpu(p.pid) - own
        os.unlink(f.name)
        n = int(re.search(r"(\d+) requests in", out).group(1))
    else:
        time.sleep(DURATION)
    p.send_signal(signal.SIGTERM)
    _, _, ru = os.wait4(p.pid, 0)
    p.returncode = 0
    return ru.ru_utime + ru.ru_stime, ru.ru_minflt, n, own


def main():
    builds = {"before": sys.argv[1], "after": sys.argv[2]}
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    res = {k: [] for k in builds}
    for rnd in range(rounds):
        order = list(builds.items()) if rnd % 2 == 0 else list(reversed(builds.items()))
        for name, binary in order:
            idle_cpu, idle_flt, _, _ = run(binary, False)
            cpu, flt, n, own = run(binary, True)
            row = ((cpu - idle_cpu) / n * 1000, (flt - idle_flt) / n, own / n * 1000, n / DURATION)
            res[name].append(row)
            print("%d %-6s tree CPU %.2f ms, faults %.0f, sandboxd alone %.3f ms per execution; "
                  "%.0f req/s (load %.1f)" % ((rnd, name) + row + (os.getloadavg()[0],)), flush=True)
    for name in builds:
        med = [statistics.median(r[i] for r in res[name]) for i in range(4)]
        print("%-6s tree CPU %.2f ms, faults %.0f, sandboxd alone %.3f ms per execution; %.0f req/s "
              "(medians of %d)" % ((name,) + tuple(med) + (rounds,)))


if __name__ == "__main__":
    main()
