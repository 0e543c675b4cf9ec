# SPDX-License-Identifier: MIT
"""Real MCP clients against sandboxd's MCP server (CONTRACT §7): the MCP Inspector CLI over
stdio (`sandboxd mcp`) and over Streamable HTTP (/mcp on `sandboxd serve`), and the official
conformance suite (@modelcontextprotocol/conformance) against /mcp with the baseline in
tests/conformance/expected-failures.yml. The npm packages and Node 22 come from tests/node
(installed by tests/run.sh)."""
import json
import os
import pathlib
import re
import shlex
import subprocess
import tempfile

import pytest

from harness import BIN, CELL_LIB, SANITIZER_MARKERS, Server
from mcp_peers import NODE, NODE_DIR

MODULES = NODE_DIR / "node_modules"
INSPECTOR = MODULES / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"
CONFORMANCE = MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = pathlib.Path(__file__).resolve().parents[1] / "conformance" / "expected-failures.yml"
REQUIRED = ["server-initialize", "server-session-lifecycle", "ping", "tools-list",
            "server-sse-multiple-streams", "dns-rebinding-protection"]


def require_clients():
    assert NODE.exists() and INSPECTOR.exists() and CONFORMANCE.exists(), (
        "the MCP test clients are not installed: run `npm ci` in tests/node (tests/run.sh does)")


@pytest.fixture(scope="module")
def srv(mcp_config):
    s = Server("--pool-size", "2", "--mcp-config", mcp_config, "--no-mcp-discovery",
               "--mcp-tools", "full")
    yield s
    s.stop()


def inspector(*args, timeout=180):
    """Run the Inspector CLI; (exit status, parsed stdout or None, stderr). It must run from a
    subdirectory of the npm project: it finds its own package.json through ../package.json."""
    require_clients()
    p = subprocess.run([str(NODE), str(INSPECTOR)] + [str(a) for a in args], cwd=MODULES,
                       capture_output=True, text=True, timeout=timeout)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    return p.returncode, out, p.stderr


class StdioTarget:
    """`sandboxd mcp` as the Inspector starts it, wrapped in sh so that its exit status and its
    log (sanitizer reports included) are kept."""

    def __init__(self, *args):
        self.dir = tempfile.mkdtemp(prefix="sandboxd-inspector-")
        self.log = os.path.join(self.dir, "log")
        self.rc = os.path.join(self.dir, "rc")
        cmd = [BIN, "mcp", "--log-level", "info", "--pool-size", "1", "--state-dir",
               os.path.join(self.dir, "state")] + (["--cell-lib", CELL_LIB] if CELL_LIB else [])
        cmd += list(args)
        script = "%s 2>>%s; echo $? >%s" % (shlex.join(cmd), shlex.quote(self.log),
                                            shlex.quote(self.rc))
        self.target = ["/bin/sh", "-c", script]

    def check(self):
        with open(self.rc) as f:
            assert f.read().strip() == "0", self.logs()[-3000:]
        logs = self.logs()
        for marker in SANITIZER_MARKERS:
            assert marker not in logs, "sanitizer report:\n" + logs[-20000:]
        return logs

    def logs(self):
        with open(self.log, errors="replace") as f:
            return f.read()


# ---- MCP Inspector CLI ---------------------------------------------------------------------------

def test_inspector_over_stdio_lists_the_tools(mcp_config):
    t = StdioTarget("--mcp-config", mcp_config, "--no-mcp-discovery", "--mcp-tools", "full")
    rc, out, err = inspector(*t.target, "--method", "tools/list")
    assert rc == 0, err
    tools = {tool["name"]: tool for tool in out["tools"]}
    assert set(tools) == {"run_python", "list_servers", "search_tool_docs", "reset_session"}
    enum = tools["run_python"]["inputSchema"]["properties"]["servers"]["items"]["enum"]
    assert enum == ["everything", "flaky", "broken"]
    assert "client connected" in t.check()


def test_inspector_over_stdio_runs_python():
    t = StdioTarget("--no-mcp-discovery")
    rc, out, err = inspector(*t.target, "--method", "tools/call", "--tool-name", "run_python",
                             "--tool-arg", "code=import sys; print(6 * 7); sys.version_info[0]")
    assert rc == 0, err
    assert out["content"][0]["text"].startswith("42\n[result] 3")
    st = out["structuredContent"]  # the SDK validated it against run_python's outputSchema
    assert st["status"] == "ok" and st["stdout"] == "42\n" and st["result"] == "3"
    t.check()


def test_inspector_over_stdio_reports_an_exception_as_an_error():
    t = StdioTarget("--no-mcp-discovery")
    rc, out, err = inspector(*t.target, "--method", "tools/call", "--tool-name", "run_python",
                             "--tool-arg", "code=raise ValueError('nope')")
    assert rc == 0, err
    assert out["isError"] is True
    assert out["structuredContent"]["error"]["type"] == "ValueError"
    assert "ValueError: nope" in out["content"][0]["text"]
    t.check()


def test_inspector_over_http_runs_python_with_mcp_tools(srv):
    url = "http://127.0.0.1:%d/mcp" % srv.port
    rc, out, err = inspector(url, "--method", "tools/call", "--tool-name", "run_python",
                             "--tool-arg", "code=r = await mcp_flaky.ok()\nsorted(r)",
                             "--tool-arg", 'servers=["flaky"]')
    assert rc == 0, err
    assert out["structuredContent"]["result"] == "['pid']", out
    assert out["structuredContent"]["mcpCalls"] == 1


def test_inspector_over_http_with_progress_gets_sse(srv):
    # A progressToken makes /mcp answer with an SSE stream of progress notifications and the
    # result; the SDK client reads it like any other answer.
    url = "http://127.0.0.1:%d/mcp" % srv.port
    rc, out, err = inspector(url, "--method", "tools/call", "--tool-name", "run_python",
                             "--tool-arg", "code=import time\nprint('a', flush=True)\n"
                                           "time.sleep(0.3)\nprint('b')",
                             "--tool-metadata", "progressToken=inspector-1")
    assert rc == 0, err
    assert out["structuredContent"]["stdout"] == "a\nb\n"


def test_inspector_over_http_search_tool_docs(srv):
    url = "http://127.0.0.1:%d/mcp" % srv.port
    rc, out, err = inspector(url, "--method", "tools/call", "--tool-name", "search_tool_docs",
                             "--tool-arg", "query=pid", "--tool-arg", 'servers=["flaky"]')
    assert rc == 0, err
    assert out["structuredContent"]["results"][0]["python"] == "await mcp_flaky.ok()"


# ---- the conformance suite -----------------------------------------------------------------------

def test_conformance_suite(srv):
    require_clients()
    out_dir = tempfile.mkdtemp(prefix="sandboxd-conformance-")
    url = "http://127.0.0.1:%d/mcp" % srv.port
    p = subprocess.run([str(NODE), str(CONFORMANCE), "server", "--url", url, "--spec-version",
                        "2025-11-25", "--expected-failures", str(BASELINE), "-o", out_dir],
                       cwd=MODULES, capture_output=True, text=True, timeout=600)
    summary = p.stdout[p.stdout.rfind("=== SUMMARY ==="):]
    assert p.returncode == 0, summary + p.stderr[-3000:]
    assert "Baseline check passed" in p.stdout, summary
    # The scenarios that apply to us pass outright: every check a success (or informational).
    results = {}
    for d in pathlib.Path(out_dir).iterdir():
        m = re.match(r"server-(.*)-\d{4}-\d\d-\d\dT", d.name)
        if m:
            results[m.group(1)] = json.loads((d / "checks.json").read_text())
    for scenario in REQUIRED:
        checks = results[scenario]
        assert checks and all(c["status"] in ("SUCCESS", "INFO") for c in checks), (
            scenario, [(c["id"], c["status"], c.get("errorMessage")) for c in checks])
    # Everything we answered on the wire matched the spec's JSON schema, in every scenario.
    for scenario, checks in results.items():
        for c in checks:
            if c["id"] == "wire-schema-valid":
                assert c["status"] == "SUCCESS", (scenario, c.get("errorMessage"))
