# SPDX-License-Identifier: MIT
"""The lean MCP surface of `sandboxd mcp` (docs/MCP.md "The lean surface"): what a client pays
for in its context — initialize's instructions and the tools/list JSON — stays within 1,500
characters with four servers configured, discovery happens inside the sandbox, and the full
surface (--mcp-tools full) shows the same docs text, from the same renderer."""
import json

import pytest

from harness import McpStdio
from mcp_peers import FLAKY, config


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    cfg = config()
    cfg["mcpServers"]["fourth"] = {"command": "/usr/bin/python3", "args": [str(FLAKY), "normal"]}
    assert len(cfg["mcpServers"]) == 4
    path = tmp_path_factory.mktemp("lean") / "mcp.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def context_chars(c):
    """What the client puts in its model's context: the instructions and the tools/list JSON."""
    tools = c.request("tools/list")["result"]
    return len(c.init["result"].get("instructions", "")) + \
        len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False))


def test_the_default_surface_is_lean(four):
    c = McpStdio("--mcp-config", four, "--no-mcp-discovery")
    try:
        n = lean = context_chars(c)
        assert n <= 1500, n
        tools = c.request("tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == ["run_python"]
        schema = tools[0]["inputSchema"]
        assert schema["required"] == ["code"]
        assert schema["properties"]["servers"]["items"]["enum"] == \
            ["everything", "flaky", "broken", "fourth"]
        desc = tools[0]["description"]
        for hint in ("help(mcp_<server>)", "search_tool_docs(", "/tmp/mcp/servers/"):
            assert hint in desc
        # What the schema leaves out still works (files, output), and so does discovery, in code.
        r = c.call("run_python", {
            "code": "import contextlib, io, subprocess\nb = io.StringIO()\n"
                    "with contextlib.redirect_stdout(b):\n    help(mcp_everything.get_sum)\n"
                    "print(b.getvalue().splitlines()[2])\n"
                    "print(search_tool_docs('sum two numbers', limit=1))\n"
                    "print(subprocess.run(['ls', '/tmp/mcp/servers/everything'], "
                    "capture_output=True, text=True).stdout.split()[:2])\n"
                    "print(open('in.txt').read())",
            "servers": ["everything"], "files": {"in.txt": "given"}, "output": "text"})
        text = r["content"][0]["text"]
        assert r.get("isError") is not True, text
        assert "async get_sum(*, a: float, b: float) -> Any" in text
        assert "await mcp_everything.get_sum(*, a: float, b: float) -> Any\n" \
               "    Returns the sum of two numbers" in text
        assert "['__init__.py', 'echo.py']" in text and "given" in text
    finally:
        c.close()
    full = McpStdio("--mcp-config", four, "--no-mcp-discovery", "--mcp-tools", "full")
    try:
        assert [t["name"] for t in full.request("tools/list")["result"]["tools"]] == \
            ["run_python", "list_servers", "search_tool_docs", "reset_session"]
        assert context_chars(full) > 4 * lean  # what the lean one saves
    finally:
        full.close()


def test_approve_call_is_listed_when_approvals_are_configured(four):
    c = McpStdio("--mcp-config", four, "--no-mcp-discovery", "--approval", "flaky.*=ask")
    try:
        assert context_chars(c) <= 1500
        tools = c.request("tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == ["run_python", "approve_call"]
        assert tools[1]["inputSchema"]["required"] == ["approval_id", "approve"]
    finally:
        c.close()


def test_mcp_search_and_sandbox_search_show_the_same_text(four):
    """search_tool_docs over MCP renders its hits in a sandbox with the stubs' renderer: the
    text is the one the session's search_tool_docs and help() show."""
    c = McpStdio("--mcp-config", four, "--no-mcp-discovery", "--mcp-tools", "full")
    try:
        r = c.call("search_tool_docs", {"query": "sum", "limit": 1, "servers": ["everything"]})
        hit = r["structuredContent"]["results"][0]
        assert (hit["server"], hit["tool"]) == ("everything", "get-sum")
        assert hit["doc"] == "await mcp_everything.get_sum(*, a: float, b: float) -> Any\n" \
                             "    Returns the sum of two numbers"
        assert hit["doc"] in r["content"][0]["text"]
        r = c.call("run_python", {"code": "print(search_tool_docs('sum', limit=1)[0]['doc'])",
                                  "servers": ["everything"]})
        assert r["structuredContent"]["stdout"] == hit["doc"] + "\n", r
    finally:
        c.close()
