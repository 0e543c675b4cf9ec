# SPDX-License-Identifier: MIT
"""`sandboxd mcp` against `sandboxd mcp --compat code-execution-mode` (compact and TOON
answers), over stdio, as an MCP client sees them: the round trip of a run_python call from
the request line written to the answer line read, for code without output, code that prints,
and code that calls a tool of a stdio MCP server. Both modes run the same session and the same
execution; this measures what writing the answer differently costs.

Run by bench/bench.py; alone: /usr/bin/python3 bench/compat_bench.py [-v].
"""
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

CASES = [
    ("`x = x + 1` (no output)", "x = x + 1", None),
    ("prints 20 lines", "for i in range(20):\n    print('line', i, x)", None),
    ("one MCP tool call", "r = await mcp_bench.ok()", ["bench"]),
]


def pct(xs):
    xs = sorted(xs)
    return {"p50": xs[len(xs) // 2], "p99": xs[min(len(xs) - 1, int(len(xs) * 0.99))],
            "n": len(xs)}


class Client:
    def __init__(self, args, env, binary=None):
        self.p = subprocess.Popen([binary or BIN, "mcp", "--log-level", "warn", *args],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ, **env))
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def request(self, method, params):
        self.next += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method,
                                       "params": params}).encode() + b"\n")
        self.p.stdin.flush()
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.next:
                return msg

    def close(self):
        self.p.stdin.close()
        self.p.wait(60)


def run_mode(args, env, n, config):
    c = Client(["--mcp-config", config, "--no-mcp-discovery", *args], env)
    out = {}
    try:
        for name, code, servers in CASES:
            call = {"name": "run_python", "arguments": {"code": code}}
            if servers:
                call["arguments"]["servers"] = servers
            c.request("tools/call", {"name": "run_python", "arguments": {"code": "x = 0"}})
            for _ in range(20):  # warm: the session and the server are up
                c.request("tools/call", call)
            times = []
            for _ in range(n):
                t = time.perf_counter()
                r = c.request("tools/call", call)
                times.append((time.perf_counter() - t) * 1000)
                assert "result" in r and not r["result"].get("isError"), r
            out[name] = pct(times)
    finally:
        c.close()
    return out


def main(n=300):
    state = tempfile.mkdtemp(prefix="bench-compat-")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"mcpServers": {"bench": {"command": PY, "args": [str(MCP_SERVER), "normal"]}}}, f)
    modes = [("native", [], {}),
             ("--compat (compact)", ["--compat", "code-execution-mode"], {}),
             ("--compat (TOON)", ["--compat", "code-execution-mode"],
              {"MCP_BRIDGE_OUTPUT_MODE": "toon"})]
    results = {}
    try:
        for label, args, env in modes:
            results[label] = run_mode(args + ["--state-dir", state], env, n, f.name)
    finally:
        os.unlink(f.name)
        subprocess.run(["rm", "-rf", state])
    lines = ["| run_python round trip (stdio) | " + " | ".join(
        "%s p50 ms | p99 ms" % label for label, _, _ in modes) + " |",
        "| --- |" + " ---: | ---: |" * len(modes)]
    for name, _, _ in CASES:
        lines.append("| %s | " % name + " | ".join(
            "%.3f | %.3f" % (results[label][name]["p50"], results[label][name]["p99"])
            for label, _, _ in modes) + " |")
    return "\n".join(lines) + "\n", results


if __name__ == "__main__":
    text, raw = main()
    print(text)
    if "-v" in sys.argv:
        print(json.dumps(raw, indent=1))
