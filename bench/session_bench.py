# SPDX-License-Identifier: MIT
"""Sessions side by side with a Jupyter kernel (jupyter_client + ipykernel), in one run:

- session ready: POST /v1/sessions until the 201 (a pooled jail or a fresh one), against
  a Jupyter kernel's start until wait_for_ready();
- warm round trip: `x = x + 1` in a live session, HTTP request to answer, against
  execute() to the kernel's execute_reply;
- MCP bridge overhead: one tool call from session code (sandbox -> RPC frame -> sandboxd ->
  stdio MCP server -> back), against the same call made directly to the same server by an
  in-process JSON-RPC client, both timed in a loop around the call.

Run by bench/bench.py; alone: /usr/bin/python3 bench/session_bench.py.
"""
import http.client
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = os.environ.get("BENCH_SANDBOXD", str(ROOT / "build" / "sandboxd"))
MCP_SERVER = ROOT / "tests" / "e2e" / "mcp" / "flaky_server.py"
PY = "/usr/bin/python3"


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(xs):
    xs = sorted(xs)
    return {"p50": xs[len(xs) // 2], "p99": xs[min(len(xs) - 1, int(len(xs) * 0.99))], "n": len(xs)}


class Http:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        self.c.request(method, path, data, {"Content-Type": "application/json"} if data else {})
        r = self.c.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)


def start_sandboxd(port, config=None):
    """`sandboxd serve` on port (with --mcp-config config when given), once /healthz answers."""
    state = tempfile.mkdtemp(prefix="sbx-bench-state-")
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([BIN, "serve", "--port", str(port), "--log-level", "warn",
                          "--no-mcp-discovery", "--state-dir", state]
                         + (["--mcp-config", config] if config else []), stdout=log, stderr=log)
    for _ in range(600):
        try:
            st, _ = Http(port).call("GET", "/healthz")
            if st == 200:
                return p
        except OSError:
            pass
        time.sleep(0.05)
    log.seek(0)
    raise RuntimeError("sandboxd did not start:\n" + log.read().decode(errors="replace"))


def bench_sessions(port, n_create, n_exec, n_calls):
    h = Http(port)
    out = {}
    # session ready, without and with an MCP server (the server process is started by
    # the first session and shared afterwards, as in production)
    for label, body in (("plain", {}), ("mcp", {"servers": ["bench"]})):
        times, hits = [], 0
        for _ in range(n_create):
            t = time.perf_counter()
            st, s = h.call("POST", "/v1/sessions", body)
            times.append((time.perf_counter() - t) * 1000)
            assert st == 201, s
            hits += bool(s.get("poolHit"))
            st, _ = h.call("DELETE", "/v1/sessions/" + s["sessionId"])
            assert st == 204
            time.sleep(0.05)  # let the pool refill, as between real agent sessions
        out["create_" + label] = dict(pct(times), pool_hits=hits)

    st, s = h.call("POST", "/v1/sessions", {"servers": ["bench"]})
    assert st == 201, s
    path = "/v1/sessions/%s/execute" % s["sessionId"]
    st, r = h.call("POST", path, {"code": "x = 0"})
    assert st == 200 and r["status"] == "ok", r
    for _ in range(50):  # warm up
        h.call("POST", path, {"code": "x = x + 1"})
    times, server = [], []
    for _ in range(n_exec):
        t = time.perf_counter()
        st, r = h.call("POST", path, {"code": "x = x + 1"})
        times.append((time.perf_counter() - t) * 1000)
        assert st == 200 and r["status"] == "ok", r
        server.append(r["durationMs"])
    st, r = h.call("POST", path, {"code": "x"})
    assert r["result"] == str(n_exec + 50), r
    out["exec"] = pct(times)
    out["exec_server"] = pct(server)

    code = ("import time\n"
            "await mcp_bench.ok()\n"
            "_t = []\n"
            "for _ in range(%d):\n"
            "    _s = time.perf_counter()\n"
            "    await mcp_bench.ok()\n"
            "    _t.append((time.perf_counter() - _s) * 1000)\n"
            "_t.sort()\n"
            "print(_t[len(_t) // 2], _t[int(len(_t) * 0.99)])\n" % n_calls)
    st, r = h.call("POST", path, {"code": code, "timeoutMs": 120000})
    assert st == 200 and r["status"] == "ok", r
    p50, p99 = (float(v) for v in r["stdout"].split())
    out["mcp_session"] = {"p50": p50, "p99": p99, "n": n_calls}
    h.call("DELETE", "/v1/sessions/" + s["sessionId"])
    return out


def bench_direct_mcp(n_calls):
    """The same tool of the same server, called by a minimal JSON-RPC client over stdio."""
    p = subprocess.Popen([PY, str(MCP_SERVER), "normal"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)
    ids = iter(range(1, 1 << 30))

    def rpc(method, params):
        i = next(ids)
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        msg = json.loads(p.stdout.readline())
        assert msg["id"] == i and "result" in msg, msg
        return msg["result"]

    rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}})
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    rpc("tools/call", {"name": "ok", "arguments": {}})
    times = []
    for _ in range(n_calls):
        t = time.perf_counter()
        rpc("tools/call", {"name": "ok", "arguments": {}})
        times.append((time.perf_counter() - t) * 1000)
    p.stdin.close()
    p.wait(10)
    return pct(times)


def bench_jupyter(n_create, n_exec):
    from jupyter_client.manager import KernelManager
    starts = []
    km = kc = None
    for i in range(n_create):
        t = time.perf_counter()
        km = KernelManager(kernel_name="python3")
        km.kernel_cmd = [PY, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f",
                         "{connection_file}"]
        km.start_kernel(env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        starts.append((time.perf_counter() - t) * 1000)
        if i < n_create - 1:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

    def run(code):
        mid = kc.execute(code)
        while True:
            msg = kc.get_shell_msg(timeout=30)
            if msg["parent_header"].get("msg_id") == mid:
                assert msg["content"]["status"] == "ok", msg["content"]
                return

    run("x = 0")
    for _ in range(50):
        run("x = x + 1")
    times = []
    for _ in range(n_exec):
        t = time.perf_counter()
        run("x = x + 1")
        times.append((time.perf_counter() - t) * 1000)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return {"create": pct(starts), "exec": pct(times)}


def main(port, n_create=20, n_exec=1000, n_calls=500, kernels=5):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"mcpServers": {"bench": {"command": PY, "args": [str(MCP_SERVER), "normal"]}}}, f)
    p = start_sandboxd(port, f.name)
    try:
        sb = bench_sessions(port, n_create, n_exec, n_calls)
    finally:
        p.terminate()
        p.wait(30)
        os.unlink(f.name)
    direct = bench_direct_mcp(n_calls)
    jp = bench_jupyter(kernels, n_exec)

    rows = [
        ("session ready (no MCP server)", sb["create_plain"], jp["create"]),
        ("session ready (one MCP server, running)", sb["create_mcp"], None),
        ("warm round trip `x = x + 1` (client)", sb["exec"], jp["exec"]),
        ("warm round trip, server-side durationMs", sb["exec_server"], None),
    ]
    lines = ["| measurement | sandboxd p50 ms | p99 ms | n | Jupyter kernel p50 ms | p99 ms | n |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, a, b in rows:
        lines.append("| %s | %.2f | %.2f | %d | %s | %s | %s |" % (
            name, a["p50"], a["p99"], a["n"], "%.2f" % b["p50"] if b else "", "%.2f" % b["p99"] if b else "",
            b["n"] if b else ""))
    ms, dr = sb["mcp_session"], direct
    lines += ["", "| MCP tool call (stdio server) | p50 ms | p99 ms | n |", "| --- | ---: | ---: | ---: |",
              "| from session code, through the bridge | %.3f | %.3f | %d |" % (ms["p50"], ms["p99"], ms["n"]),
              "| directly, in-process JSON-RPC client | %.3f | %.3f | %d |" % (dr["p50"], dr["p99"], dr["n"]),
              "",
              "- session ready: **%.1f×** faster than a Jupyter kernel (p50 %.1f vs %.0f ms; %d/%d pool hits)"
              % (jp["create"]["p50"] / sb["create_plain"]["p50"], sb["create_plain"]["p50"],
                 jp["create"]["p50"], sb["create_plain"]["pool_hits"], sb["create_plain"]["n"]),
              "- warm round trip: **%.1f×** lower p50 than a Jupyter kernel (%.2f vs %.2f ms)"
              % (jp["exec"]["p50"] / sb["exec"]["p50"], sb["exec"]["p50"], jp["exec"]["p50"]),
              "- MCP bridge overhead per call: p50 **%+.3f ms** over calling the server directly"
              % (ms["p50"] - dr["p50"])]
    return "\n".join(lines) + "\n", {"sandboxd": sb, "direct": direct, "jupyter": jp}


if __name__ == "__main__":
    text, raw = main(free_port())
    print(text)
    if "-v" in sys.argv:
        print(json.dumps(raw, indent=1))
