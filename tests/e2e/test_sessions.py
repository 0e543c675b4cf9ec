# SPDX-License-Identifier: MIT
"""Persistent sessions ("code mode", CONTRACT §3 and §9) driven over HTTP like an agent
would, with real MCP servers behind the RPC bridge."""
import http.client
import json
import os
import pathlib
import tempfile
import threading
import time

import pytest

from harness import Server
from mcp_peers import EverythingHTTP, config


@pytest.fixture(scope="module")
def everything_http():
    s = EverythingHTTP()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def state_dir():
    d = tempfile.mkdtemp(prefix="sandboxd-state-")
    yield pathlib.Path(d)


@pytest.fixture(scope="module")
def srv(everything_http, state_dir):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(config(everything_http.url), cfg)
    cfg.close()
    s = Server("--pool-size", "4", "--mcp-config", cfg.name, "--no-mcp-discovery",
               "--state-dir", str(state_dir), "--session-timeout-ms", "10000")
    yield s
    s.stop()
    os.unlink(cfg.name)


def create(srv, **body):
    r = srv.request("POST", "/v1/sessions", body=body)
    assert r.status == 201, r
    return r.json["sessionId"]


def run(srv, sid, code, **extra):
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code, **extra})
    assert r.status == 200, r
    return r.json


def ok(srv, sid, code, **extra):
    out = run(srv, sid, code, **extra)
    assert out["status"] == "ok", out
    return out


# ---- the interpreter --------------------------------------------------------------------------

def test_variables_persist_between_executions(srv):
    sid = create(srv)
    assert ok(srv, sid, "x = 40")["result"] is None
    out = ok(srv, sid, "x = x + 2\nx")
    assert out["result"] == "42"
    assert out["sessionAlive"] is True
    info = srv.request("GET", "/v1/sessions/" + sid).json
    assert info["executions"] == 2 and info["alive"] is True


def test_top_level_await(srv):
    sid = create(srv)
    out = ok(srv, sid, "import asyncio\nawait asyncio.sleep(0.01)\nvalue = await asyncio.gather("
                       "*(asyncio.sleep(0.01, result=i) for i in range(3)))\nvalue")
    assert out["result"] == "[0, 1, 2]"


def test_output_is_captured(srv):
    sid = create(srv)
    out = ok(srv, sid, "import sys\nprint('to out')\nprint('to err', file=sys.stderr)")
    assert out["stdout"] == "to out\n" and out["stderr"] == "to err\n"


def test_exception_is_an_error_and_the_session_survives(srv):
    sid = create(srv)
    ok(srv, sid, "keep = 'me'")
    out = run(srv, sid, "def f():\n    return 1 / 0\nf()")
    assert out["status"] == "error"
    assert out["error"]["type"] == "ZeroDivisionError"
    assert "in f" in out["error"]["traceback"] and "return 1 / 0" in out["error"]["traceback"]
    assert out["sessionAlive"] is True
    assert ok(srv, sid, "keep")["result"] == "'me'"


def test_syntax_error(srv):
    sid = create(srv)
    out = run(srv, sid, "x = (")
    assert out["status"] == "error" and out["error"]["type"] == "SyntaxError"
    assert out["error"]["line"] == 1


def test_timeout_interrupts_and_the_session_survives(srv):
    sid = create(srv)
    ok(srv, sid, "state = [1, 2, 3]")
    start = time.time()
    out = run(srv, sid, "while True:\n    pass", timeoutMs=500)
    assert time.time() - start < 5
    assert out["status"] == "timeout"
    assert out["sessionAlive"] is True
    assert "intact" in out["error"]["message"]
    assert ok(srv, sid, "len(state)")["result"] == "3"
    out = run(srv, sid, "import time\ntime.sleep(60)", timeoutMs=300)
    assert out["status"] == "timeout" and out["sessionAlive"] is True


def test_uninterruptible_code_ends_the_session_and_says_so(srv):
    sid = create(srv)
    out = run(srv, sid, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                        "while True:\n    pass", timeoutMs=300)
    assert out["status"] == "timeout"
    assert out["sessionAlive"] is False
    assert "ended" in out["error"]["message"]
    assert srv.request("GET", "/v1/sessions/" + sid).status == 404
    assert srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": "1"}).status == 404


def test_memory_error_leaves_the_session_usable(srv):
    sid = create(srv, memoryMb=64)
    ok(srv, sid, "a = 5")
    out = run(srv, sid, "big = bytearray(400 << 20)")
    assert out["status"] in ("error", "memory_limit"), out
    if out["sessionAlive"]:
        assert ok(srv, sid, "a")["result"] == "5"


def test_session_is_isolated(srv):
    sid = create(srv)
    out = ok(srv, sid, "import os, socket\ntry:\n    socket.create_connection(('127.0.0.1', 22), 1)\n"
                       "    net = 'open'\nexcept OSError as e:\n    net = e.errno\n(os.getuid(), net)")
    assert out["result"] == "(65534, 1)"
    # the sessions' own pool confines like every other: read-only root, own pid namespace,
    # no host files
    out = ok(srv, sid, "import os\ntry:\n    open('/escape', 'w')\n    w = 'written'\n"
                       "except OSError as e:\n    w = e.errno\n"
                       "(w, len([p for p in os.listdir('/proc') if p.isdigit()]) < 5,"
                       " os.path.exists('/root'), os.path.exists('%s'))" % __file__)
    assert out["result"] == "(30, True, False, False)"


# ---- MCP tools through the bridge -----------------------------------------------------------

def test_mcp_tool_call_over_stdio(srv):
    sid = create(srv, servers=["everything"])
    out = ok(srv, sid, "await mcp_everything.echo(message='hello')")
    assert out["result"] == "'Echo: hello'"
    assert out["mcpCalls"] == 1
    out = ok(srv, sid, "await mcp_everything.get_sum(a=2, b=3)")  # tool name get-sum
    assert "5" in out["result"]


def test_structured_content_is_preferred(srv):
    sid = create(srv, servers=["everything"])
    out = ok(srv, sid, "r = await mcp_everything.get_structured_content(location='New York')\n"
                       "type(r).__name__, sorted(r)")
    assert out["result"].startswith("('dict',")


def test_concurrent_calls_are_multiplexed(srv):
    sid = create(srv, servers=["everything"])
    out = ok(srv, sid, "import asyncio, time\nt = time.time()\n"
                       "r = await asyncio.gather(*(mcp_everything.trigger_long_running_operation("
                       "duration=1, steps=2) for _ in range(3)))\n"
                       "(len(r), round(time.time() - t, 1))")
    n, elapsed = eval(out["result"])
    assert n == 3
    assert elapsed < 2.5, "three 1-second calls ran one after another"
    assert out["mcpCalls"] == 3
    out = ok(srv, sid, "len(await asyncio.gather(*(mcp_everything.echo(message=str(i)) "
                       "for i in range(20))))")
    assert out["result"] == "20"


def test_streamable_http_server(srv):
    sid = create(srv, servers=["everything-http"])
    out = ok(srv, sid, "await mcp_everything_http.echo(message='over http')")
    assert out["result"] == "'Echo: over http'"


def test_tool_errors_raise_mcperror(srv):
    sid = create(srv, servers=["flaky"])
    out = ok(srv, sid, "try:\n    await mcp_flaky.fail()\nexcept MCPError as e:\n    msg = str(e)\nmsg")
    assert "failed on purpose" in out["result"]
    out = ok(srv, sid, "try:\n    await mcp_flaky.rpc_error()\nexcept MCPError as e:\n    msg = str(e)\nmsg")
    assert "flaky says no" in out["result"]


def test_a_server_that_dies_is_restarted(srv):
    sid = create(srv, servers=["flaky"])
    first = ok(srv, sid, "(await mcp_flaky.ok())['pid']")["result"]
    out = ok(srv, sid, "try:\n    await mcp_flaky.die()\n    r = 'no error'\nexcept MCPError as e:\n"
                       "    r = 'MCPError'\nr")
    assert out["result"] == "'MCPError'"
    second = ok(srv, sid, "(await mcp_flaky.ok())['pid']")["result"]
    assert second != first


def test_only_requested_servers_are_reachable(srv):
    sid = create(srv)  # no servers
    out = ok(srv, sid, "import mcp.runtime as rt\ntry:\n    await rt.call_tool('everything', 'echo', "
                       "message='x')\n    r = 'reached'\nexcept MCPError as e:\n    r = str(e)\nr")
    assert "not available" in out["result"]
    assert ok(srv, sid, "LOADED_MCP_SERVERS")["result"] == "()"


def test_unknown_or_broken_server_at_creation(srv):
    r = srv.request("POST", "/v1/sessions", body={"servers": ["nope"]})
    assert r.status == 400 and r.json["error"]["field"] == "servers"
    assert "everything" in r.json["error"]["message"]
    r = srv.request("POST", "/v1/sessions", body={"servers": ["broken"]})
    assert r.status == 502 and r.json["error"]["code"] == "MCP_ERROR"


def test_namespace_helpers(srv):
    sid = create(srv, servers=["everything"])
    out = ok(srv, sid, "import mcp.runtime as rt\n"
                       "(sorted(mcp_servers), LOADED_MCP_SERVERS, rt.list_servers(), "
                       "mcp.servers.everything is mcp_everything)")
    assert out["result"] == "(['everything'], ('everything',), ('everything',), True)"
    out = ok(srv, sid, "[t['tool'] for t in search_tool_docs('sum of two numbers', limit=3)][0]")
    assert out["result"] == "'get-sum'"
    out = ok(srv, sid, "tools = await list_tools('everything')\nsorted(t['alias'] for t in tools)[:3]")
    assert "echo" in out["result"]
    out = ok(srv, sid, "d = rt.query_tool_docs('everything', 'get-sum', detail='full')\n"
                       "sorted(d['inputSchema']['properties'])")
    assert out["result"] == "['a', 'b']"
    out = ok(srv, sid, "capability_summary()")
    assert "mcp_everything" in out["result"] and "get_sum" in out["result"]
    out = ok(srv, sid, "rt.call_tool_sync('everything', 'echo', message='sync')")
    assert out["result"] == "'Echo: sync'"
    out = ok(srv, sid, "mcp_everything.sync.echo(message='s2')")
    assert out["result"] == "'Echo: s2'"


# ---- memory, saved tools, files ---------------------------------------------------------------

def test_memory_persists_per_workspace_on_the_host(srv, state_dir):
    a = create(srv, workspace="w1")
    ok(srv, a, "save_memory('prefs', {'unit': 'C', 'n': 1}, metadata={'by': 'test'})")
    ok(srv, a, "update_memory('prefs', lambda v: {**v, 'n': v['n'] + 1})")
    b = create(srv, workspace="w1")
    assert ok(srv, b, "load_memory('prefs')")["result"] == "{'unit': 'C', 'n': 2}"
    assert ok(srv, b, "memory_exists('prefs'), memory_exists('nope')")["result"] == "(True, False)"
    info = ok(srv, b, "get_memory_info('prefs')['metadata']")["result"]
    assert info == "{'by': 'test'}"
    assert ok(srv, b, "[m['key'] for m in list_memories()]")["result"] == "['prefs']"
    other = create(srv, workspace="w2")
    assert ok(srv, other, "load_memory('prefs', default='none')")["result"] == "'none'"
    files = list((state_dir / "workspaces" / "w1" / "memory").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["value"] == {"unit": "C", "n": 2}
    assert ok(srv, b, "delete_memory('prefs'), memory_exists('prefs')")["result"] == "(True, False)"


def test_memory_keys_cannot_escape(srv, state_dir):
    sid = create(srv, workspace="w3")
    ok(srv, sid, "save_memory('../../../../etc/evil', 1)\nsave_memory('a/b', 2)")
    names = [p.name for p in (state_dir / "workspaces" / "w3" / "memory").iterdir()]
    assert len(names) == 2 and all("/" not in n and not n.startswith(".") for n in names)
    assert ok(srv, sid, "load_memory('../../../../etc/evil'), load_memory('a/b')")["result"] == "(1, 2)"
    out = run(srv, sid, "save_memory('big', 'x' * (2 << 20))")
    assert out["status"] == "error" and out["error"]["type"] == "MCPError"


def test_saved_tools_are_loaded_into_later_sessions(srv):
    a = create(srv, workspace="tools-ws")
    ok(srv, a, "def double(x):\n    '''twice x'''\n    return 2 * x\n")
    assert "saved" in ok(srv, a, "save_tool(double)")["result"]
    r = srv.request("POST", "/v1/sessions", body={"workspace": "tools-ws"})
    assert r.status == 201 and r.json["toolsLoaded"] == ["double"]
    assert ok(srv, r.json["sessionId"], "double(21)")["result"] == "42"
    fresh = create(srv, workspace="other-tools-ws")
    assert run(srv, fresh, "double(1)")["error"]["type"] == "NameError"


def test_files(srv, state_dir):
    sid = create(srv, workspace="files-ws")
    ok(srv, sid, "save_file('report.txt', 'hello file')\nsave_file('data.bin', b'\\x00\\x01')")
    out = ok(srv, sid, "sorted((f['name'], f['size']) for f in list_execution_files())")
    assert out["result"] == "[('data.bin', 2), ('report.txt', 10)]"
    assert (state_dir / "workspaces" / "files-ws" / "files" / "report.txt").read_text() == "hello file"
    bad = run(srv, sid, "save_file('../escape', 'x')")
    assert bad["status"] == "error"


# ---- the HTTP API ------------------------------------------------------------------------------

def test_sse_streams_output_as_it_happens(srv):
    sid = create(srv, servers=["everything"])
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    body = json.dumps({"code": "import time\nprint('first', flush=True)\ntime.sleep(0.5)\n"
                               "r = await mcp_everything.echo(message='x')\nprint('second')\nr"})
    conn.request("POST", "/v1/sessions/%s/execute" % sid, body=body,
                 headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type").startswith("text/event-stream")
    events, times = [], []
    event = None
    for raw in resp:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            events.append((event, json.loads(line[6:])))
            times.append(time.time())
    conn.close()
    kinds = [e for e, _ in events]
    assert kinds == ["stdout", "rpc", "stdout", "execution_done"], events
    assert events[0][1]["data"] == "first\n"
    assert events[1][1]["tool"] == "echo"
    assert events[-1][1]["status"] == "ok" and events[-1][1]["result"] == "'Echo: x'"
    assert times[2] - times[0] >= 0.4  # 'first' arrived before the sleep ended


def test_delete_and_unknown(srv):
    sid = create(srv)
    assert srv.request("DELETE", "/v1/sessions/" + sid).status == 204
    assert srv.request("GET", "/v1/sessions/" + sid).status == 404
    assert srv.request("DELETE", "/v1/sessions/" + sid).status == 404
    assert srv.request("POST", "/v1/sessions/nope/execute", body={"code": "1"}).status == 404
    assert srv.request("PUT", "/v1/sessions/" + sid).status == 405


def test_validation(srv):
    for body, field in (({"workspace": "../x"}, "workspace"), ({"servers": "everything"}, "servers"),
                        ({"idleTimeoutS": 0}, "idleTimeoutS"), ({"memoryMb": "a"}, "memoryMb")):
        r = srv.request("POST", "/v1/sessions", body=body)
        assert r.status == 400 and r.json["error"]["field"] == field, (body, r)
    sid = create(srv)
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"nocode": 1})
    assert r.status == 400 and r.json["error"]["field"] == "code"
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": "1", "timeoutMs": -1})
    assert r.status == 400 and r.json["error"]["field"] == "timeoutMs"


def test_blank_code_is_refused_and_sys_exit_ends_only_the_execution(srv):
    sid = create(srv)
    for code in ("", " \n\t"):
        r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code})
        assert r.status == 400 and r.json["error"]["field"] == "code", r
        assert "nothing was run" in r.json["error"]["message"]
    assert srv.request("GET", "/v1/sessions/%s" % sid).json["executions"] == 0
    out = ok(srv, sid, "import sys\nprint('done')\nsys.exit(0)")
    assert out["stdout"] == "done\n" and out["error"] is None
    out = run(srv, sid, "sys.exit(2)")
    assert out["status"] == "error" and out["error"]["type"] == "SystemExit"
    assert out["error"]["exitCode"] == 2 and out["sessionAlive"] is True
    assert ok(srv, sid, "'still here'")["result"] == "'still here'"


def test_executions_of_one_session_are_serialised(srv):
    sid = create(srv)
    ok(srv, sid, "import time\nlog = []")
    results = []
    threads = []
    for i in range(3):
        t = threading.Thread(target=lambda i=i: results.append(srv.request(
            "POST", "/v1/sessions/%s/execute" % sid,
            body={"code": "log.append(%d)\ntime.sleep(0.2)\nlog.append(%d)" % (i, i)}, fresh=True)))
        threads.append(t)
        t.start()
    for t in threads:
        t.join()
    assert all(r.status == 200 and r.json["status"] == "ok" for r in results)
    log = eval(ok(srv, sid, "log")["result"])
    assert all(log[k] == log[k + 1] for k in range(0, 6, 2)), log  # never interleaved


def test_idle_sessions_are_reaped(srv):
    sid = create(srv, idleTimeoutS=1)
    time.sleep(2.5)
    assert srv.request("GET", "/v1/sessions/" + sid).status == 404


def test_session_cap(everything_http, state_dir):
    s = Server("--pool-size", "2", "--max-sessions", "2", "--no-mcp-discovery", "--state-dir",
               str(state_dir))
    try:
        a = create(s)
        create(s)
        r = s.request("POST", "/v1/sessions", body={})
        assert r.status == 503 and r.header("Retry-After") == "1"
        assert s.request("DELETE", "/v1/sessions/" + a).status == 204
        create(s)
        metrics = s.request("GET", "/metrics", fresh=True).raw.decode()
        assert "sandboxd_sessions_live 2" in metrics
    finally:
        s.stop()


def test_sessions_come_from_their_own_warm_pool(srv):
    before = srv.request("GET", "/healthz").json["sessionPool"]
    assert before["enabled"] and before["target"] == 2
    sid = create(srv)
    # the session pool's interpreters start with the session runtime imported; the JIT
    # pool's do not pay for it
    assert ok(srv, sid, "import sys\n'sandboxd_runtime.session' in sys.modules")["result"] == "True"
    after = srv.request("GET", "/healthz").json["sessionPool"]
    assert after["hits"] + after["misses"] == before["hits"] + before["misses"] + 1
    assert srv.request("DELETE", "/v1/sessions/" + sid).status == 204


def test_without_a_session_pool_sessions_use_the_main_pool(state_dir):
    s = Server("--pool-size", "2", "--session-pool-size", "0", "--no-mcp-discovery",
               "--state-dir", str(state_dir))
    try:
        h = s.request("GET", "/healthz").json
        assert h["sessionPool"] == {"enabled": False}
        taken = h["pool"]["hits"] + h["pool"]["misses"]
        sid = create(s)
        assert ok(s, sid, "x = 20\nx + 1")["result"] == "21"
        p = s.request("GET", "/healthz").json["pool"]
        assert p["hits"] + p["misses"] == taken + 1
    finally:
        s.stop()
