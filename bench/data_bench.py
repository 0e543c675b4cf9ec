# SPDX-License-Identifier: MIT
"""Data work side by side, in one run (docs/PERFORMANCE.md "Data work"): the same small pandas
task (build a frame, group, aggregate) and the same small matplotlib chart (that frame as a
bar chart, rendered to PNG and handed back), answered by

- cold python: `python3 -c TASK` per request (no isolation at all);
- a Jupyter kernel (ipykernel, inline backend), started once, then execute() to its idle
  status, the chart's PNG (display_data) included;
- sandboxd, default profile: EXECUTOR, a fresh sandboxed interpreter that imports per request;
- sandboxd, datascience profile: EXECUTOR with taskDetails.profile, a fresh sandboxed
  interpreter forked from a zygote that has numpy, pandas and matplotlib imported;
- sandboxd, a datascience session: one warm sandboxed interpreter, as a kernel is.

One client, requests BENCH_DATA_GAP_MS apart (the pool refills between them, as between
an agent's steps); the kernel and sandboxd's warm paths take turns, so that they share the
same moments of a busy machine. Also the memory of a pooled data-science interpreter (PSS:
what it costs besides the pages it shares with its zygote), from /healthz.

Run by bench/bench.py; alone: /usr/bin/python3 bench/data_bench.py.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

from session_bench import Http, free_port, pct, start_sandboxd

PY = "/usr/bin/python3"
GAP = float(os.environ.get("BENCH_DATA_GAP_MS", "200")) / 1000

FRAME = """
import numpy as np
import pandas as pd
df = pd.DataFrame({"k": np.arange(10000) % 10, "v": np.arange(10000, dtype=float)})
out = df.groupby("k").agg(total=("v", "sum"), mean=("v", "mean"))
"""
PANDAS = FRAME + "result = float(out['total'].sum())\n"
CHART = FRAME + """
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 4))
ax.bar(out.index, out["total"])
title = ax.set_title("totals by k")
"""
EXPECT = float(sum(range(10000)))


def timed(fn, n, gap=GAP):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
        time.sleep(gap)
    return pct(times)


# ---- cold python --------------------------------------------------------------------------------

def cold_python(task):
    if task == "pandas":
        code = PANDAS + "print(result)\n"
    else:  # the same PNG the others hand back, written to stdout
        code = ("import matplotlib\nmatplotlib.use('Agg')\n" + CHART +
                "import io, sys\nb = io.BytesIO()\nfig.savefig(b, format='png')\n"
                "sys.stdout.buffer.write(b.getvalue())\n")

    def run():
        p = subprocess.run([PY, "-c", code], capture_output=True, timeout=120,
                           env={"PATH": "/usr/bin:/bin", "MPLCONFIGDIR": tempfile.gettempdir()
                                + "/bench-mpl", "OPENBLAS_NUM_THREADS": "1"})
        assert p.returncode == 0, p.stderr[-2000:]
        if task == "pandas":
            assert float(p.stdout) == EXPECT
        else:
            assert p.stdout[:8] == b"\x89PNG\r\n\x1a\n"
    return run


# ---- a Jupyter kernel ---------------------------------------------------------------------------

class Kernel:
    def __init__(self):
        from jupyter_client.manager import KernelManager
        self.km = KernelManager(kernel_name="python3")
        self.km.kernel_cmd = [PY, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f",
                              "{connection_file}"]
        self.km.start_kernel(env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1",
                                      OPENBLAS_NUM_THREADS="1"))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.pid = self.km.provisioner.process.pid

    def run(self, code):
        """execute() until the kernel is idle again: its reply and every output (the PNG)."""
        mid = self.kc.execute(code)
        outputs = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != mid:
                continue
            kind = msg["msg_type"]
            if kind == "error":
                raise AssertionError(msg["content"])
            if kind in ("display_data", "execute_result"):
                outputs.append(msg["content"]["data"])
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
        reply = self.kc.get_shell_msg(timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
        return outputs

    def task(self, task):
        if task == "pandas":
            def run():
                out = self.run(PANDAS + "result")
                assert float(out[-1]["text/plain"]) == EXPECT
        else:
            def run():
                out = self.run(CHART)
                png = [o["image/png"] for o in out if "image/png" in o]
                assert len(png) == 1 and base64.b64decode(png[0])[:4] == b"\x89PNG", out
        return run

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


# ---- sandboxd -----------------------------------------------------------------------------------

def post(port, body):
    st, data = Http(port).call("POST", "/execute", body)
    assert st == 200, data
    return data


def healthz(port):
    return Http(port).call("GET", "/healthz")[1]


def sandboxd_task(port, task, profile):
    code = PANDAS + "result\n" if task == "pandas" else CHART
    details = {"code": code, "timeoutMs": 60000}
    if profile:
        details["profile"] = profile
    body = {"requestId": "bench", "requestData": {"source": "bench"},
            "context": {"handlerType": "EXECUTOR", "mcp_endpoint": "local",
                        "taskDetails": details}}

    def run():
        resp = post(port, body)
        assert resp["resultType"] == "generic", resp
        if task == "pandas":
            assert resp["data"]["result"] == EXPECT, resp
        else:
            arts = resp.get("artifacts", [])
            assert [a["mimeType"] for a in arts] == ["image/png"], resp
            assert base64.b64decode(arts[0]["data"])[:4] == b"\x89PNG"
    return run


def pss_kb(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def session_task(port, task):
    """A datascience session: one warm interpreter for every request, like a kernel."""
    h = Http(port)
    st, info = h.call("POST", "/v1/sessions", {"profile": "datascience"})
    assert st == 201, info
    path = "/v1/sessions/%s/execute" % info["sessionId"]
    code = PANDAS + "result\n" if task == "pandas" else CHART

    def run():
        st, r = h.call("POST", path, {"code": code})
        assert st == 200 and r["status"] == "ok", r
        if task == "pandas":
            assert float(r["result"]) == EXPECT
        else:
            assert [a["mimeType"] for a in r["artifacts"]] == ["image/png"], r
    return run


def interleaved(fns, n, gap=GAP):
    """Each of fns (name -> callable) n times, taking turns, so that they share the same
    moments of a busy machine."""
    times = {name: [] for name in fns}
    order = list(fns)
    for i in range(n):
        for k in range(len(order)):
            name = order[(i + k) % len(order)]
            t = time.perf_counter()
            fns[name]()
            times[name].append((time.perf_counter() - t) * 1000)
            time.sleep(gap)
    return {name: pct(v) for name, v in times.items()}


def main(port, n_cold=10, n_warm=40):
    res = {}
    p = start_sandboxd(port)
    k = Kernel()
    try:
        for task in ("pandas", "chart"):
            fns = {"datascience": sandboxd_task(port, task, "datascience"),
                   "session": session_task(port, task), "jupyter": k.task(task)}
            for _ in range(3):  # starts the profile's pool; warms everything
                for fn in fns.values():
                    fn()
            for name, r in interleaved(fns, n_warm).items():
                res[(name, task)] = r
            res[("default", task)] = timed(sandboxd_task(port, task, None), n_cold)
            res[("cold", task)] = timed(cold_python(task), n_cold)
        time.sleep(2)  # refilled and warmed
        mem = healthz(port)["profiles"]["datascience"]["pool"]["memory"]
        kernel_pss = pss_kb(k.pid) * 1024
    finally:
        k.close()
        p.terminate()
        p.wait(30)

    names = [("cold", "cold `python3 -c` per request (no isolation)"),
             ("jupyter", "Jupyter kernel, warm (round trip to idle)"),
             ("default", "sandboxd /execute, default profile (imports per request)"),
             ("datascience", "sandboxd /execute, `datascience` profile (a fresh interpreter per request)"),
             ("session", "sandboxd session, `datascience` profile (one warm interpreter)")]
    lines = ["| server | pandas p50 ms | p99 ms | n | chart p50 ms | p99 ms | n |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for key, label in names:
        a, b = res[(key, "pandas")], res[(key, "chart")]
        lines.append("| %s | %.1f | %.1f | %d | %.1f | %.1f | %d |"
                     % (label, a["p50"], a["p99"], a["n"], b["p50"], b["p99"], b["n"]))

    def p50(key, task):
        return res[(key, task)]["p50"]
    lines += [
        "",
        "- pandas task: the datascience profile answers **%.1f×** faster than cold python "
        "(p50 %.1f vs %.1f ms) and %.1f× faster than sandboxd's default profile; a datascience "
        "session %.1f ms, the Jupyter kernel %.1f ms"
        % (p50("cold", "pandas") / p50("datascience", "pandas"), p50("datascience", "pandas"),
           p50("cold", "pandas"), p50("default", "pandas") / p50("datascience", "pandas"),
           p50("session", "pandas"), p50("jupyter", "pandas")),
        "- chart (PNG back to the client), against the Jupyter kernel's round trip (p50 %.1f ms): "
        "a datascience session **%.2f×** (%.1f ms), a fresh datascience interpreter per request "
        "%.2f× (%.1f ms); cold python %.1f ms"
        % (p50("jupyter", "chart"), p50("jupyter", "chart") / p50("session", "chart"),
           p50("session", "chart"), p50("jupyter", "chart") / p50("datascience", "chart"),
           p50("datascience", "chart"), p50("cold", "chart")),
        "- memory: the data-science zygote %.1f MB RSS (%.1f MB PSS); a pooled data-science "
        "interpreter, warmed up, %.1f MB PSS (%d ready); the Jupyter kernel after the runs %.1f "
        "MB PSS"
        % (mem["zygoteRssBytes"] / 1e6, mem["zygotePssBytes"] / 1e6, mem["cellPssBytes"] / 1e6,
           mem["readyCells"], kernel_pss / 1e6),
    ]
    return "\n".join(lines) + "\n", {"results": {"%s/%s" % k: v for k, v in res.items()},
                                     "memory": mem, "kernelPss": kernel_pss}


if __name__ == "__main__":
    text, raw = main(free_port())
    print(text)
    if "-v" in sys.argv:
        print(json.dumps(raw, indent=1))
