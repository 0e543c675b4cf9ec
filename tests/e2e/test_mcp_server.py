# SPDX-License-Identifier: MIT
"""sandboxd as an MCP server (CONTRACT §7, docs/MCP.md): the protocol over both transports —
`sandboxd mcp` on pipes and /mcp on `sandboxd serve` — with every error path, the tools, session
scoping, progress, cancellation, and the Streamable HTTP rules (sessions, headers, Origin/Host,
token). Real binary, real sandboxes, real MCP servers behind the bridge."""
import http.client
import json
import re
import subprocess
import threading
import time

import pytest

from harness import BIN, MCP_VERSION, McpHttp, McpStdio, Server

VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
TOOLS = ["run_python", "list_servers", "search_tool_docs", "reset_session"]


def common_args(mcp_config):
    # The full surface: list_servers, search_tool_docs and reset_session are tested here; the
    # lean default in test_mcp_lean.py.
    return ["--mcp-config", mcp_config, "--no-mcp-discovery", "--session-timeout-ms", "10000",
            "--session-max-timeout-ms", "20000", "--mcp-tools", "full"]


@pytest.fixture(scope="module")
def srv(mcp_config):
    s = Server("--pool-size", "2", *common_args(mcp_config))
    yield s
    s.stop()


@pytest.fixture(params=["stdio", "http"])
def connect(request, srv, mcp_config):
    """connect(*extra_args, **kw) -> an initialized MCP client of either transport."""
    opened = []

    def make(*extra, **kw):
        if request.param == "stdio":
            c = McpStdio(*common_args(mcp_config), *extra, **kw)
        else:
            assert not extra, "HTTP clients share the module's server"
            c = McpHttp(srv, **kw)
        opened.append(c)
        return c

    make.transport = request.param
    yield make
    for c in opened:
        if isinstance(c, McpStdio):
            c.close()
        elif c.session:
            c.delete()


def text_of(result):
    assert [c["type"] for c in result["content"]] == ["text"], result
    return result["content"][0]["text"]


def run(client, code, **args):
    return client.call("run_python", {"code": code, **args})


# ---- lifecycle -----------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_initialize_negotiates_each_supported_version(connect, version):
    c = connect(version=version)
    result = c.init["result"]
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {"tools": {"listChanged": False},
                                      "resources": {"subscribe": False, "listChanged": False}}
    assert result["serverInfo"]["name"] == "sandboxd" and result["serverInfo"]["version"]
    assert "run_python" in result["instructions"]
    assert c.request("ping") == {"jsonrpc": "2.0", "id": c.next_id, "result": {}}


def test_unsupported_version_is_refused_with_the_supported_list(connect):
    c = connect(version="1999-01-01")
    err = c.init["error"]
    assert err["code"] == -32602
    assert err["data"] == {"supported": VERSIONS, "requested": "1999-01-01"}
    if connect.transport == "http":
        assert c.session is None  # no session is kept for a failed initialize


def test_requests_before_initialize_are_refused_but_ping_works():
    c = McpStdio("--mcp-tools", "full", initialize=False)
    try:
        r = c.request("tools/list")
        assert r["error"]["code"] == -32600 and "initialize" in r["error"]["message"]
        assert c.request("ping")["result"] == {}
        assert "result" in c.initialize()
        assert c.initialize()["error"]["code"] == -32600  # only once
        assert len(c.request("tools/list")["result"]["tools"]) == 4
    finally:
        c.close()


def test_initialize_needs_a_protocol_version(connect):
    c = connect(initialize=False)
    if connect.transport == "stdio":
        r = c.request("initialize", {"capabilities": {}})
    else:
        r = c.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).json
    assert r["error"]["code"] == -32602 and "protocolVersion" in r["error"]["message"]


# ---- JSON-RPC errors -----------------------------------------------------------------------------

def raw_exchange(c, transport, text):
    """Send text as one message; (HTTP status or None, answer or None)."""
    if transport == "stdio":
        c.send(text)
        c.send({"jsonrpc": "2.0", "id": "fence", "method": "ping"})
        answers = []
        while True:
            msg = c.recv()
            if msg.get("id") == "fence":
                break
            answers.append(msg)
        assert len(answers) <= 1, answers
        return None, answers[0] if answers else None
    r = c.post(text, raw=True)
    return r.status, r.json


def test_parse_error(connect):
    c = connect()
    status, answer = raw_exchange(c, connect.transport, '{"jsonrpc": "2.0", "id": 1, "method": ')
    assert answer["error"]["code"] == -32700 and answer["id"] is None
    assert status in (None, 400)


@pytest.mark.parametrize("msg, echoed_id", [
    ({"jsonrpc": "1.0", "id": 5, "method": "ping"}, 5),
    ({"jsonrpc": "2.0", "id": 6, "method": 42}, 6),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": "x"}, 7),
    ([], None),
    (17, None),
])
def test_invalid_request(connect, msg, echoed_id):
    c = connect()
    status, answer = raw_exchange(c, connect.transport, json.dumps(msg))
    assert answer["error"]["code"] == -32600, answer
    assert answer["id"] == echoed_id
    assert status in (None, 400)


def test_unknown_method(connect):
    c = connect()
    for method in ("prompts/list", "no/such/method", "logging/setLevel", "resources/subscribe"):
        r = c.request(method, {})
        assert r["error"]["code"] == -32601 and method in r["error"]["message"]


@pytest.mark.parametrize("method, params, words", [
    ("tools/list", [1, 2], "params must be an object"),
    ("tools/list", {"cursor": "bogus"}, "invalid cursor"),
    ("tools/list", {"cursor": "sandboxd-tools-99"}, "invalid cursor"),
    ("tools/call", {"arguments": {}}, "params.name"),
    ("tools/call", {"name": "run_python", "arguments": [1]}, "arguments must be an object"),
    ("tools/call", {"name": "no_such_tool"}, "unknown tool 'no_such_tool'"),
])
def test_invalid_params(connect, method, params, words):
    c = connect()
    r = c.request(method, params)
    assert r["error"]["code"] == -32602, r
    assert words in r["error"]["message"]


def test_notifications_and_responses_get_no_answer(connect):
    c = connect()
    if connect.transport == "http":
        for msg in ({"jsonrpc": "2.0", "method": "notifications/whatever"},
                    {"jsonrpc": "2.0", "id": 99, "result": {}},
                    {"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 12345}}):
            r = c.post(msg)
            assert r.status == 202 and r.raw == b"", r
    else:
        c.notify("notifications/whatever")
        c.send({"jsonrpc": "2.0", "id": 99, "result": {}})
        c.notify("notifications/cancelled", {"requestId": 12345})
        assert c.request("ping")["result"] == {}  # and nothing came before it


# ---- tools/list ------------------------------------------------------------------------------------

def test_tools_list_describes_the_tools(connect):
    c = connect()
    tools = {t["name"]: t for t in c.request("tools/list")["result"]["tools"]}
    assert sorted(tools) == sorted(TOOLS)
    run_python = tools["run_python"]
    props = run_python["inputSchema"]["properties"]
    assert run_python["inputSchema"]["required"] == ["code"]
    assert set(props) == {"code", "servers", "timeout", "session_id", "output", "files", "network"}
    assert props["files"]["type"] == "object"
    assert props["network"]["required"] == ["allow"]
    assert "artifacts" in run_python["outputSchema"]["properties"]
    assert props["servers"]["items"]["enum"] == ["everything", "flaky", "broken"]
    assert props["timeout"]["type"] == "number"
    assert run_python["outputSchema"]["type"] == "object"
    assert tools["search_tool_docs"]["inputSchema"]["required"] == ["query"]
    for t in tools.values():
        assert t["description"] and t["inputSchema"]["type"] == "object"


def test_tools_list_without_servers_has_no_empty_enum():
    c = McpStdio("--mcp-tools", "full")
    try:
        servers = c.request("tools/list")["result"]["tools"][0]["inputSchema"]["properties"]["servers"]
        assert servers["maxItems"] == 0 and "enum" not in servers["items"]
    finally:
        c.close()


def test_tools_list_pages_with_a_cursor(mcp_config, make_server):
    for c in (McpStdio("--mcp-page-size", "1", "--mcp-tools", "full"),
              McpHttp(make_server("--mcp-page-size", "1", "--mcp-tools", "full"))):
        names, cursor, pages = [], None, 0
        while True:
            r = c.request("tools/list", {"cursor": cursor} if cursor else {})["result"]
            names += [t["name"] for t in r["tools"]]
            pages += 1
            cursor = r.get("nextCursor")
            if not cursor:
                break
        assert names == TOOLS and pages == 4
        assert c.request("tools/list", {"cursor": "sandboxd-tools-0"})["error"]["code"] == -32602
        assert c.request("tools/list", {"cursor": 3})["error"]["code"] == -32602
        if isinstance(c, McpStdio):
            c.close()


def test_legacy_version_gets_no_structured_content_and_may_batch(connect):
    c = connect(version="2025-03-26")
    tools = c.request("tools/list")["result"]["tools"]
    assert all("outputSchema" not in t and "title" not in t for t in tools)
    result = run(c, "print('old')")
    assert "structuredContent" not in result and text_of(result).startswith("old")
    batch = [{"jsonrpc": "2.0", "id": "b1", "method": "ping"},
             {"jsonrpc": "2.0", "method": "notifications/whatever"},
             {"jsonrpc": "2.0", "id": "b2", "method": "no/such"}]
    if connect.transport == "stdio":
        c.send(batch)
        answers = c.recv()
    else:
        answers = c.post(batch).json
    assert [a["id"] for a in answers] == ["b1", "b2"]
    assert answers[0]["result"] == {} and answers[1]["error"]["code"] == -32601


def test_2024_11_05_gets_what_that_version_knows(connect):
    c = connect(version="2024-11-05")
    assert "title" not in c.init["result"]["serverInfo"]
    tools = c.request("tools/list")["result"]["tools"]
    assert len(tools) == 4
    assert all(not {"outputSchema", "title", "annotations"} & set(t) for t in tools)
    result = run(c, "print('old')")
    assert "structuredContent" not in result and text_of(result).startswith("old")
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    status, answer = raw_exchange(c, connect.transport, json.dumps(batch))
    assert answer["error"]["code"] == -32600  # batches came with 2025-03-26 and left after it


def test_capability_resource(connect):
    c = connect()
    listed = c.request("resources/list")["result"]["resources"]
    assert [r["uri"] for r in listed] == ["resource://sandboxd/capabilities"]
    assert listed[0]["name"] == "sandboxd-capabilities" and listed[0]["mimeType"] == "text/markdown"
    for uri in ("resource://sandboxd/capabilities",
                "resource://mcp-server-code-execution-mode/capabilities"):
        content = c.request("resources/read", {"uri": uri})["result"]["contents"][0]
        assert content["uri"] == uri and "runtime.discovered_servers()" in content["text"]
        assert len(content["text"].encode()) == listed[0]["size"]
    err = c.request("resources/read", {"uri": "resource://sandboxd/nope"})["error"]
    assert err["code"] == -32002 and err["data"] == {"uri": "resource://sandboxd/nope"}
    assert c.request("resources/read", {})["error"]["code"] == -32602


def test_blank_code_runs_nothing(connect):
    c = connect()
    for code in ("", "   ", "\n\t\n"):
        r = run(c, code)
        assert r["isError"] is True and "structuredContent" not in r
        assert "nothing was run" in text_of(r)
    # Nothing ran, so no session was started for it.
    assert "started session" in " ".join(run(c, "1")["structuredContent"]["notes"])


def test_sys_exit_ends_the_execution_not_the_session(connect):
    c = connect()
    r = run(c, "import sys\nkept = 1\nprint('bye')\nsys.exit(0)")
    assert not r.get("isError") and r["structuredContent"]["status"] == "ok"
    assert r["structuredContent"]["stdout"] == "bye\n"
    assert run(c, "raise SystemExit(None)")["structuredContent"]["status"] == "ok"
    r = run(c, "import sys\nsys.exit(4)")
    st = r["structuredContent"]
    assert r["isError"] is True and st["status"] == "error"
    assert st["error"]["type"] == "SystemExit" and st["error"]["exitCode"] == 4
    assert "4" in st["error"]["message"] and st["sessionAlive"] is True
    r = run(c, "import sys\nsys.exit('giving up')")
    assert r["structuredContent"]["error"]["exitCode"] == 1
    assert r["structuredContent"]["stderr"] == "giving up\n"
    assert run(c, "kept")["structuredContent"]["result"] == "1"


def test_batches_are_refused_by_newer_versions(connect):
    c = connect()
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    status, answer = raw_exchange(c, connect.transport, json.dumps(batch))
    assert answer["error"]["code"] == -32600 and "2025-03-26" in answer["error"]["message"]


# ---- run_python ------------------------------------------------------------------------------------

def test_run_python_returns_output_result_and_keeps_state(connect):
    c = connect()
    r = run(c, "x = 40\nprint('hello')\nx + 2")
    assert not r.get("isError")
    st = r["structuredContent"]
    assert st["status"] == "ok" and st["stdout"] == "hello\n" and st["result"] == "42"
    assert st["stderr"] == "" and st["error"] is None and st["sessionAlive"] is True
    assert st["truncated"] is False and st["durationMs"] >= 0 and st["session"] == "default"
    text = text_of(r)
    assert text.startswith("hello\n[result] 42") and "started session 'default'" in text
    r = run(c, "x")
    assert r["structuredContent"]["result"] == "40"
    assert "started session" not in text_of(r)


def test_an_exception_is_an_error(connect):
    c = connect()
    r = run(c, "import sys\nprint('before')\nprint('warn', file=sys.stderr)\n1 / 0")
    assert r["isError"] is True
    st = r["structuredContent"]
    assert st["status"] == "error" and st["error"]["type"] == "ZeroDivisionError"
    assert st["stdout"] == "before\n" and st["stderr"] == "warn\n" and st["sessionAlive"] is True
    text = text_of(r)
    assert "before\n[stderr]\nwarn\n[error]\nTraceback" in text
    assert "ZeroDivisionError: division by zero" in text


def test_timeout_interrupts_and_the_session_survives(connect):
    c = connect()
    run(c, "kept = 'yes'")
    start = time.time()
    r = run(c, "while True:\n    pass", timeout=0.5)
    assert time.time() - start < 8
    assert r["isError"] is True
    st = r["structuredContent"]
    assert st["status"] == "timeout" and st["sessionAlive"] is True
    assert "[status] timeout after 0.5 s" in text_of(r)
    assert run(c, "kept")["structuredContent"]["result"] == "'yes'"


def test_timeout_is_clamped_and_the_message_says_so(connect):
    c = connect()
    r = run(c, "print('quick')", timeout=3600)
    assert not r.get("isError")
    assert "clamped to 20 s" in text_of(r)
    assert any("clamped to 20 s" in n for n in r["structuredContent"]["notes"])


@pytest.mark.parametrize("args, words", [
    ({}, "code: required"),
    ({"code": 5}, "code: required"),
    ({"code": "1", "servers": ["nope"]}, "'nope' is not a configured MCP server"),
    ({"code": "1", "servers": "flaky"}, "servers: must be an array"),
    ({"code": "1", "timeout": 0}, "timeout: a number of seconds greater than 0"),
    ({"code": "1", "timeout": "5"}, "timeout: a number"),
    ({"code": "1", "session_id": "no spaces"}, "session_id:"),
    ({"code": "1", "output": "xml"}, "output:"),
    ({"code": "1", "colour": "red"}, "unknown argument 'colour'"),
])
def test_bad_arguments_are_tool_errors(connect, args, words):
    c = connect()
    r = c.call("run_python", args)
    assert r["isError"] is True and words in text_of(r), r


def test_output_modes(connect):
    c = connect()
    r = run(c, "print('a')\n7", output="json")
    assert json.loads(text_of(r)) == r["structuredContent"]
    assert text_of(run(c, "8", output="text")) == "[result] 8"


def test_json_output_as_the_server_default():
    c = McpStdio("--mcp-output", "json")
    try:
        r = run(c, "6 * 7")
        assert json.loads(text_of(r))["result"] == "42"
        assert text_of(run(c, "1", output="text")) == "[result] 1"
    finally:
        c.close()


def test_named_sessions_are_separate_and_can_be_reset(connect):
    c = connect()
    run(c, "v = 'default'")
    run(c, "v = 'a'", session_id="a")
    run(c, "v = 'b'", session_id="b")
    assert run(c, "v")["structuredContent"]["result"] == "'default'"
    r = run(c, "v", session_id="a")
    assert r["structuredContent"]["result"] == "'a'" and r["structuredContent"]["session"] == "a"
    r = c.call("reset_session", {"session_id": "a"})
    assert not r.get("isError") and "reset" in text_of(r)
    r = run(c, "v", session_id="a")
    assert r["structuredContent"]["error"]["type"] == "NameError"
    assert run(c, "v", session_id="b")["structuredContent"]["result"] == "'b'"
    r = c.call("reset_session", {"session_id": "never"})
    assert r["isError"] is True and "no session named 'never'" in text_of(r)
    assert "1 session ended" in text_of(c.call("reset_session"))
    assert run(c, "'v' in dir()")["structuredContent"]["result"] == "False"


def test_named_sessions_belong_to_their_connection(connect):
    one, two = connect(), connect()
    run(one, "secret = 1", session_id="shared")
    r = run(two, "secret", session_id="shared")
    assert r["structuredContent"]["error"]["type"] == "NameError"


def test_servers_load_into_the_live_session(connect):
    """A call naming servers its session lacks loads them into it: the variables stay."""
    c = connect()
    run(c, "here = 'default'")
    r = run(c, "got = await mcp_flaky.ok()\n(got['pid'] > 0, here)", servers=["flaky"])
    assert r["structuredContent"]["result"] == "(True, 'default')", r
    assert r["structuredContent"]["session"] == "default"
    assert r["structuredContent"]["mcpCalls"] == 1
    assert "loaded the MCP servers flaky into session 'default' (its variables stay)" in \
        text_of(r)
    r = run(c, "('got' in dir(), sorted(LOADED_MCP_SERVERS))")
    assert r["structuredContent"]["result"] == "(True, ['flaky'])"  # still there, no new one
    assert "loaded" not in text_of(r) and "started" not in text_of(r)
    # a named session gains servers the same way
    run(c, "n = 1", session_id="n", servers=["flaky"])
    r = run(c, "(n, sorted(mcp_servers))", session_id="n", servers=["everything"])
    assert r["structuredContent"]["result"] == "(1, ['everything', 'flaky'])", r
    assert "into session 'n'" in text_of(r)
    r = c.call("reset_session")
    assert "1 session ended" in text_of(r)
    r = run(c, "x = 1", servers=["no-such-server"])
    assert r["isError"] is True and "not a configured MCP server" in text_of(r)


def test_a_session_that_ended_is_replaced_and_the_answer_says_so(connect):
    c = connect()
    run(c, "import os\nx = 1")
    r = run(c, "os._exit(3)")
    assert r["isError"] is True and r["structuredContent"]["sessionAlive"] is False
    assert r["structuredContent"]["status"] == "exited"
    assert "ended with this execution" in text_of(r)
    r = run(c, "'x' in dir()")
    assert r["structuredContent"]["result"] == "False"
    assert "started session 'default'" in text_of(r)


# ---- discovery tools ---------------------------------------------------------------------------------

def test_list_servers(connect):
    c = connect()
    r = c.call("list_servers")
    names = [s["name"] for s in r["structuredContent"]["servers"]]
    assert names == ["everything", "flaky", "broken"]
    assert "flaky (stdio" in text_of(r) and "mcp_flaky" in text_of(r)
    r = c.call("list_servers", {"tools": True, "servers": ["everything", "flaky", "broken"]})
    by = {s["name"]: s for s in r["structuredContent"]["servers"]}
    assert by["flaky"]["tools"] == ["ok", "die", "fail", "rpc_error", "env"]
    assert "error" in by["broken"] and "get-sum" in by["everything"]["tools"]
    assert "tools: ok, die, fail, rpc_error, env" in text_of(r)
    # without naming them: the running servers' tools; one that is not running is not started
    r = c.call("list_servers", {"tools": True})
    by = {s["name"]: s for s in r["structuredContent"]["servers"]}
    assert "get-sum" in by["everything"]["tools"]
    assert by["broken"]["notStarted"] is True and "error" not in by["broken"]
    assert "not running; name it in `servers`" in text_of(r)
    assert c.call("list_servers", {"tools": "yes"})["isError"] is True
    assert c.call("list_servers", {"tools": True, "servers": ["nope"]})["isError"] is True


def test_search_tool_docs_finds_tools_and_how_to_call_them(connect):
    c = connect()
    r = c.call("search_tool_docs", {"query": "sum", "servers": ["everything", "flaky", "broken"]})
    st = r["structuredContent"]
    top = st["results"][0]
    assert (top["server"], top["tool"]) == ("everything", "get-sum")
    assert top["python"].startswith("await mcp_everything.get_sum(") and "a=..." in top["python"]
    assert top["inputSchema"]["type"] == "object"
    assert [u["server"] for u in st["unavailable"]] == ["broken"]
    text = text_of(r)
    assert "everything.get-sum" in text and 'servers=["everything"]' in text
    assert "server 'broken' is unavailable" in text
    r = c.call("search_tool_docs", {"query": "pid", "limit": 1})
    assert [(h["server"], h["tool"]) for h in r["structuredContent"]["results"]] == [("flaky", "ok")]
    r = c.call("search_tool_docs", {"query": "zzqqxx"})
    assert r["structuredContent"]["results"] == [] and "No tool matches" in text_of(r)
    assert c.call("search_tool_docs", {})["isError"] is True
    assert c.call("search_tool_docs", {"query": "x", "limit": 0})["isError"] is True
    # what search_tool_docs says works from run_python
    r = run(c, top["python"].replace("a=...", "a=2").replace("b=...", "b=3"),
            servers=["everything"])
    assert "5" in r["structuredContent"]["result"], r


# ---- progress and cancellation ---------------------------------------------------------------------

PROGRESS_CODE = "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')\n'done'"


def test_progress_streams_stdout_over_stdio():
    c = McpStdio()
    try:
        start = time.time()
        mid = c.new_id()
        c.send({"jsonrpc": "2.0", "id": mid, "method": "tools/call",
                "params": {"name": "run_python", "arguments": {"code": PROGRESS_CODE},
                           "_meta": {"progressToken": "tok-1"}}})
        first = c.recv()
        first_at = time.time() - start
        assert first["method"] == "notifications/progress", first
        assert first["params"]["progressToken"] == "tok-1"
        assert first["params"]["message"] == "first\n"
        response = c.wait_for(mid)
        assert time.time() - start - first_at >= 1.0  # streamed, not sent with the answer
        progress = [first] + c.notifications
        assert "".join(p["params"]["message"] for p in progress) == "first\nsecond\n"
        values = [p["params"]["progress"] for p in progress]
        assert values == sorted(values) and len(set(values)) == len(values)
        assert response["result"]["structuredContent"]["result"] == "'done'"
    finally:
        c.close()


def test_progress_has_no_message_before_2025_03_26():
    c = McpStdio(version="2024-11-05")
    try:
        mid = c.new_id()
        c.send({"jsonrpc": "2.0", "id": mid, "method": "tools/call",
                "params": {"name": "run_python", "arguments": {"code": "print('x')"},
                           "_meta": {"progressToken": 7}}})
        response = c.wait_for(mid)
        assert text_of(response["result"]).startswith("x")
        assert c.notifications and all(
            set(n["params"]) == {"progressToken", "progress"} for n in c.notifications)
    finally:
        c.close()


def test_progress_streams_stdout_over_http_as_sse(srv):
    c = McpHttp(srv)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "run_python", "arguments": {"code": PROGRESS_CODE},
                                      "_meta": {"progressToken": 7}}})
        start = time.time()
        conn.request("POST", "/mcp", body, {
            "Content-Type": "application/json", "Accept": McpHttp.ACCEPT,
            "MCP-Session-Id": c.session, "MCP-Protocol-Version": MCP_VERSION})
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.getheader("Content-Type").startswith("text/event-stream")
        events, stamps = [], []
        data = []
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                events.append(json.loads("\n".join(data)))
                stamps.append(time.time() - start)
                data = []
        conn.close()
        assert events[0]["method"] == "notifications/progress"
        assert events[0]["params"] == {"progressToken": 7, "progress": 1, "message": "first\n"}
        assert stamps[-1] - stamps[0] >= 1.0
        assert events[-1]["id"] == 1
        assert events[-1]["result"]["structuredContent"]["stdout"] == "first\nsecond\n"
    finally:
        c.delete()


def test_cancellation_interrupts_and_sends_no_answer_over_stdio():
    c = McpStdio()
    try:
        run(c, "kept = 5")
        c.send({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                "params": {"name": "run_python", "_meta": {"progressToken": "p"}, "arguments": {
                    "code": "import time\nprint('go', flush=True)\nwhile True:\n    time.sleep(0.05)"}}})
        assert c.recv()["params"]["message"] == "go\n"
        start = time.time()
        c.notify("notifications/cancelled", {"requestId": 77, "reason": "changed my mind"})
        assert c.request("ping")["result"] == {}  # read while the call runs
        r = run(c, "kept")  # waits for the interrupted execution, then runs
        assert r["structuredContent"]["result"] == "5"
        assert time.time() - start < 5
        c.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        assert c.recv(10)["id"] == "after"  # nothing for id 77 was ever sent
    finally:
        logs = c.close()
    assert "request cancelled by the client: changed my mind" in logs


def test_cancellation_of_code_that_ignores_interrupts_ends_its_session():
    c = McpStdio()
    try:
        run(c, "kept = 5", session_id="stubborn")
        c.send({"jsonrpc": "2.0", "id": 78, "method": "tools/call", "params": {
            "name": "run_python", "_meta": {"progressToken": "p"}, "arguments": {
                "session_id": "stubborn",
                "code": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                        "print('go', flush=True)\nwhile True:\n    pass"}}})
        assert c.recv()["params"]["message"] == "go\n"
        start = time.time()
        c.notify("notifications/cancelled", {"requestId": 78})
        r = run(c, "'kept' in dir()", session_id="stubborn")
        assert time.time() - start < 10
        assert r["structuredContent"]["result"] == "False"
        assert "had ended" in text_of(r)
    finally:
        c.close()


def test_cancellation_over_http(srv):
    c = McpHttp(srv)
    try:
        run(c, "kept = 6")
        answer = {}

        def long_call():
            answer["r"] = c.post({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {
                "name": "run_python", "arguments": {"code": "while True:\n    pass"}}})

        t = threading.Thread(target=long_call)
        t.start()
        time.sleep(1.5)
        r = c.notify("notifications/cancelled", {"requestId": 50})
        assert r.status == 202
        t.join(15)
        assert not t.is_alive()
        assert answer["r"].status == 202 and answer["r"].raw == b""  # no answer: it was cancelled
        assert run(c, "kept")["structuredContent"]["result"] == "6"
    finally:
        c.delete()


# ---- stdio transport -----------------------------------------------------------------------------

def test_stdio_eof_ends_running_executions_and_exits_cleanly():
    c = McpStdio()
    c.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "run_python", "arguments": {"code": "import time\ntime.sleep(60)"}}})
    time.sleep(1)
    start = time.time()
    logs = c.close()
    assert time.time() - start < 15
    assert "stdin closed, shutting down" in logs


def test_stdio_sigterm_exits_cleanly():
    c = McpStdio()
    run(c, "1")
    c.proc.terminate()
    c.proc.wait(30)
    logs = c.close()
    assert "SIGTERM received" in logs


def test_stdio_oversized_line_is_a_parse_error_and_the_connection_goes_on():
    c = McpStdio()
    try:
        c.send("[" + "1," * (9 << 20) + "1]")
        r = c.recv()
        assert r["error"]["code"] == -32700 and "16 MiB" in r["error"]["message"]
        assert c.request("ping")["result"] == {}
    finally:
        c.close()


def test_stdio_blank_lines_are_ignored():
    c = McpStdio()
    try:
        c.send("")
        c.send("   \r")
        assert c.request("ping")["result"] == {}
    finally:
        c.close()


def test_mcp_help_and_bad_options():
    p = subprocess.run([BIN, "mcp", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "Usage: sandboxd mcp" in p.stdout and "--mcp-config" in p.stdout
    for args in (["--mcp-output", "xml"], ["--pool-size", "x"], ["extra"],
                 ["--mcp-workspace", "../x"]):
        p = subprocess.run([BIN, "mcp"] + args, capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (args, p.stderr)


# ---- Streamable HTTP -----------------------------------------------------------------------------

def post(srv, body, **headers):
    h = {"Content-Type": "application/json", "Accept": McpHttp.ACCEPT}
    h.update(headers)
    return srv.request("POST", "/mcp", json.dumps(body), h, fresh=True)


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def test_http_initialize_issues_a_session_id(srv):
    c = McpHttp(srv)
    try:
        # The instance id (the host name by default, docs/DEPLOY.md), '.', 32 random hex digits.
        assert re.fullmatch(r"[A-Za-z0-9-]{1,31}\.[0-9a-f]{32}", c.session), c.session
        assert McpHttp(srv).session != c.session
    finally:
        c.delete()


def test_http_session_id_is_required_and_must_exist(srv):
    r = post(srv, PING)
    assert r.status == 400 and "MCP-Session-Id" in r.json["error"]["message"]
    r = post(srv, PING, **{"MCP-Session-Id": "0" * 32})
    assert r.status == 404 and r.json["error"]["code"] == -32001
    r = post(srv, PING, **{"MCP-Session-Id": "x"})
    assert r.status == 404


def test_http_delete_ends_the_session_and_its_sandboxes(srv):
    c = McpHttp(srv)
    before = len(srv.request("GET", "/v1/sessions").json["sessions"])
    run(c, "a = 1")
    run(c, "b = 1", session_id="other")
    assert len(srv.request("GET", "/v1/sessions").json["sessions"]) == before + 2
    r = c.delete()
    assert r.status == 204
    assert len(srv.request("GET", "/v1/sessions").json["sessions"]) == before
    assert c.post(PING).status == 404
    assert c.delete().status == 404
    assert srv.request("DELETE", "/mcp", None, {}, fresh=True).status == 400


def test_http_get_is_405(srv):
    c = McpHttp(srv)
    try:
        r = srv.request("GET", "/mcp", None, {"Accept": "text/event-stream",
                                               "MCP-Session-Id": c.session}, fresh=True)
        assert r.status == 405 and r.header("Allow") == "POST, DELETE"
        assert srv.request("PUT", "/mcp", None, {}, fresh=True).status == 405
    finally:
        c.delete()


def test_http_protocol_version_header_is_checked(srv):
    c = McpHttp(srv)
    try:
        assert c.post(PING, {"MCP-Protocol-Version": "1999-01-01"}).status == 400
        r = c.post(PING, {"MCP-Protocol-Version": "2025-06-18"})  # not what was negotiated
        assert r.status == 400 and "2025-11-25" in r.json["error"]["message"]
        c.version = None  # no header: the negotiated version is assumed
        assert c.post(PING).json["result"] == {}
    finally:
        c.delete()


def test_http_content_type_and_accept(srv):
    c = McpHttp(srv)
    try:
        r = c.post(json.dumps(PING), {"Content-Type": "text/plain"}, raw=True)
        assert r.status == 415
        assert c.post(PING, {"Accept": "text/html"}).status == 406
        r = c.post(PING, {"Accept": "text/event-stream"})  # SSE only: one event
        assert r.status == 200 and r.header("Content-Type").startswith("text/event-stream")
        assert r.events == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
        r = c.post(PING, {"Accept": "application/json"})
        assert r.header("Content-Type").startswith("application/json") and r.json["result"] == {}
    finally:
        c.delete()


@pytest.mark.parametrize("headers, status", [
    ({"Origin": "http://evil.example"}, 403),
    ({"Host": "evil.example"}, 403),
    ({"Host": "evil.example:8080", "Origin": "http://localhost"}, 403),
    ({"Origin": "null"}, 403),
    ({"Origin": "http://localhost/path"}, 403),
    ({"Origin": "http://localhost:1234"}, 200),
    ({"Origin": "https://127.0.0.1", "Host": "127.0.0.1"}, 200),
    ({"Origin": "http://[::1]:99", "Host": "[::1]:99"}, 200),
    ({"Host": "LOCALHOST:5"}, 200),
])
def test_http_host_and_origin_are_checked(srv, headers, status):
    r = post(srv, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": MCP_VERSION, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}, **headers)
    assert r.status == status, r
    if status == 403:
        assert r.json["error"]["code"] == -32600 and r.json["id"] is None
    else:
        sid = r.header("MCP-Session-Id")
        assert srv.request("DELETE", "/mcp", None, {"MCP-Session-Id": sid}, fresh=True).status == 204


def test_http_allowlists_can_be_extended(make_server):
    s = make_server("--mcp-allowed-host", "sandbox.internal", "--mcp-allowed-host",
                    "pinned.example:8443", "--mcp-allowed-origin", "https://app.example")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    for headers, status in (({"Host": "sandbox.internal:9999"}, 200),
                            ({"Host": "pinned.example:8443"}, 200),
                            ({"Host": "pinned.example:8444"}, 403),
                            ({"Origin": "https://app.example"}, 200),
                            ({"Origin": "https://sandbox.internal"}, 200),
                            ({"Origin": "https://other.example"}, 403)):
        assert post(s, init, **headers).status == status, headers


@pytest.mark.parametrize("via_env", [False, True])
def test_http_bearer_token(make_server, via_env):
    if via_env:
        s = make_server(env={"SANDBOXD_MCP_TOKEN": "s3cret"})
    else:
        s = make_server("--mcp-token", "s3cret")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = post(s, init)
    assert r.status == 401 and r.header("WWW-Authenticate") == 'Bearer realm="sandboxd"'
    r = post(s, init, Authorization="Bearer wrong")
    assert r.status == 401 and 'error="invalid_token"' in r.header("WWW-Authenticate")
    assert post(s, init, Authorization="Bearer s3cret!").status == 401
    c = McpHttp(s, headers={"Authorization": "Bearer s3cret"})
    assert run(c, "1 + 1")["structuredContent"]["result"] == "2"
    assert c.delete().status == 204
    assert s.request("GET", "/healthz").status == 200  # the health probe needs no token
    assert s.request("GET", "/v1/sessions").status == 401  # the token guards every other route


def test_http_sessions_expire_when_idle(make_server):
    s = make_server("--session-idle-s", "1")
    c = McpHttp(s)
    run(c, "x = 1")
    time.sleep(2.5)
    assert c.post(PING).status == 404
    # the sandbox session went with it (the session reaper or the MCP session's end)
    deadline = time.time() + 5
    while s.request("GET", "/v1/sessions").json["sessions"] and time.time() < deadline:
        time.sleep(0.2)
    assert s.request("GET", "/v1/sessions").json["sessions"] == []


def test_http_sessions_are_capped(make_server):
    s = make_server("--mcp-max-sessions", "2")
    a, b = McpHttp(s), McpHttp(s)
    r = McpHttp(s, initialize=False).post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                           "params": {"protocolVersion": MCP_VERSION,
                                                      "capabilities": {}, "clientInfo": {
                                                          "name": "t", "version": "1"}}})
    assert r.status == 503 and r.header("Retry-After")
    a.delete()
    c = McpHttp(s)
    assert c.session
    b.delete()
    c.delete()


def test_http_shutdown_with_a_running_execution_is_clean():
    # The call outlives the drain deadline: it is ended, and says why.
    s = Server("--pool-size", "1", "--drain-timeout-s", "2")
    c = McpHttp(s)
    seen = []

    def long_call():
        try:
            seen.append(c.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                "name": "run_python", "arguments": {"code": "import time\ntime.sleep(60)"}}}))
        except (http.client.HTTPException, OSError) as e:
            seen.append(e)

    t = threading.Thread(target=long_call)
    t.start()
    time.sleep(1.5)
    start = time.time()
    s.stop()  # SIGTERM; asserts exit status 0 and a clean sanitizer log
    assert time.time() - start < 20
    t.join(20)
    assert seen and not t.is_alive()
    r = seen[0]
    assert r.status == 200, r
    assert r.json["result"]["isError"] is True
    assert "shutting down" in r.json["result"]["content"][0]["text"]



# ---- tool identifiers: one rule, computed by the host, used by the sandbox ------------------------

def test_tool_identifiers_advertised_are_the_ones_that_work(tmp_path):
    """Names that are not Python identifiers (an em dash, é, a keyword, a leading digit, a dot):
    what list_servers and search_tool_docs advertise is what session code can call. Before,
    the host kept non-ASCII bytes (`get—sum`) where the sandbox wrote `get_sum`."""
    from mcp_peers import FLAKY
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"named—tools": {
        "command": "/usr/bin/python3", "args": [str(FLAKY), "names"]}}}))
    c = McpStdio("--mcp-config", str(cfg), "--no-mcp-discovery", "--mcp-tools", "full")
    try:
        assert "Python: mcp_named_tools" in text_of(c.call("list_servers", {}))
        calls = {}
        for tool, alias in [("get—sum", "get_sum"), ("café", "caf_"), ("class", "class_"),
                            ("2fa", "_2fa"), ("a.b", "a_b")]:
            hits = c.call("search_tool_docs", {"query": "answers with its name: " + tool,
                                               "limit": 1, "servers": ["named—tools"]}
                          )["structuredContent"]["results"]
            assert hits[0]["tool"] == tool, hits
            python = hits[0]["python"]
            assert python == "await mcp_named_tools.%s(a=...)" % alias, python
            calls[tool] = python.replace("a=...", "a=1")
        code = "import json\nout = []\n" + "".join(
            "out.append((%s)['tool'])\n" % call for call in calls.values()) + "print(json.dumps(out))\n"
        r = run(c, code + "r = await mcp_named_tools.café(a=2)\nprint(r['tool'])\n",
                servers=["named—tools"])
        assert r.get("isError") is not True, text_of(r)
        lines = r["structuredContent"]["stdout"].splitlines()
        assert json.loads(lines[0]) == list(calls), lines
        assert lines[1] == "café"  # the tool's own name still reaches it
        r = run(c, "sorted(t['alias'] for t in list_tools('named—tools'))", servers=["named—tools"])
        assert r["structuredContent"]["result"] == repr(sorted(
            ["get_sum", "caf_", "class_", "_2fa", "a_b"])), r
    finally:
        c.close()
