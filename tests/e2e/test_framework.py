# SPDX-License-Identifier: MIT
"""The framework side (CONTRACT §4, §6 simple form): scripts fetched over real HTTP with
core.state.getDefinitionFileContent, cached until load_code, every failure of the
endpoint turned into MCP_ERROR, framework log messages delivered asynchronously."""
import time

from harness import jit_request

S = "handlers/basic.py"


def test_script_fetched_from_framework_endpoint(server, framework):
    r = server.execute(jit_request(S, "add", {"a": 4, "b": 5}, endpoint=framework.url))
    assert r.json["data"] == {"sum": 9}
    calls = framework.tool_calls("core.state.getDefinitionFileContent")
    assert calls == [{"app_id": "testapp", "file_path": S}]
    metrics = {m["name"]: m["value"] for m in r.json["metrics"]}
    assert metrics["mcp.calls"] == 1


def test_definitions_are_cached_until_load_code(server, framework):
    framework.add("cacheapp", "h.py", "def f(r, c):\n    return 1\n")
    req = jit_request("h.py", "f", app="cacheapp", endpoint=framework.url)
    assert server.execute(req).json["data"] == 1
    framework.add("cacheapp", "h.py", "def f(r, c):\n    return 2\n")
    r = server.execute(req)
    assert r.json["data"] == 1  # cached
    assert {m["name"]: m["value"] for m in r.json["metrics"]}["mcp.calls"] == 0
    lc = server.request("POST", "/_framework/load_code", body={"appId": "cacheapp", "files": ["h.py"]})
    assert lc.status == 200 and lc.json == {"invalidated": 1}
    assert server.execute(req).json["data"] == 2
    assert len(framework.tool_calls("core.state.getDefinitionFileContent")) == 2


def test_load_code_without_files_drops_the_whole_app(server, framework):
    framework.add("app2", "a.py", "def f(r, c):\n    return 'a'\n")
    framework.add("app2", "b.py", "def f(r, c):\n    return 'b'\n")
    for p in ("a.py", "b.py"):
        server.execute(jit_request(p, "f", app="app2", endpoint=framework.url))
    lc = server.request("POST", "/_framework/load_code", body={"appId": "app2"})
    assert lc.json == {"invalidated": 2}


def test_not_found_from_framework_is_script_not_found(server, framework):
    r = server.execute(jit_request("handlers/ghost.py", "f", endpoint=framework.url))
    assert r.json["data"]["code"] == "SCRIPT_NOT_FOUND"


def test_endpoint_down_is_mcp_error(server):
    r = server.execute(jit_request(S, "add", endpoint="http://127.0.0.1:9/mcp"))
    d = r.json["data"]
    assert r.status == 200 and d["code"] == "MCP_ERROR"
    assert d["details"]["kind"] == "transport"


def test_slow_endpoint_times_out_as_mcp_error(make_server, framework):
    s = make_server("--framework-timeout-ms", "500", "--pool-size", "1")
    framework.mode = "slow"
    framework.delay = 3
    start = time.time()
    r = s.execute(jit_request(S, "add", endpoint=framework.url))
    assert time.time() - start < 2.5
    assert r.json["data"]["code"] == "MCP_ERROR"
    assert r.json["data"]["details"]["kind"] == "timeout"


def test_garbage_from_endpoint_is_mcp_error(server, framework):
    framework.mode = "garbage"
    r = server.execute(jit_request("handlers/x1.py", "f", endpoint=framework.url))
    assert r.json["data"]["code"] == "MCP_ERROR"
    assert r.json["data"]["details"]["kind"] == "protocol"


def test_http_500_from_endpoint_is_mcp_error(server, framework):
    framework.mode = "http500"
    r = server.execute(jit_request("handlers/x2.py", "f", endpoint=framework.url))
    d = r.json["data"]
    assert d["code"] == "MCP_ERROR"
    assert d["details"]["httpStatus"] == 500


def test_tool_error_is_mcp_error_with_code(server, framework):
    framework.mode = "tool_error"
    r = server.execute(jit_request("handlers/x3.py", "f", endpoint=framework.url))
    d = r.json["data"]
    assert d["code"] == "MCP_ERROR"
    assert d["details"]["code"] == "BOOM"


def test_oversized_answer_is_mcp_error(server, framework):
    framework.mode = "huge"
    r = server.execute(jit_request("handlers/x4.py", "f", endpoint=framework.url))
    assert r.json["data"]["code"] == "MCP_ERROR"
    assert "limit" in r.json["data"]["message"]


def test_errors_are_logged_to_the_framework(server, framework):
    r = server.execute(jit_request(S, "raises", {"n": 1}, endpoint=framework.url, request_id="log-1"))
    assert r.json["data"]["code"] == "APPLICATION_ERROR"
    deadline = time.time() + 5
    while time.time() < deadline:
        logs = framework.tool_calls("core.framework.logFrameworkMessage")
        if any(p.get("requestId") == "log-1" for p in logs):
            break
        time.sleep(0.05)
    entry = [p for p in framework.tool_calls("core.framework.logFrameworkMessage")
             if p.get("requestId") == "log-1"][0]
    assert entry["level"] == "warn"
    assert entry["appId"] == "testapp" and entry["code"] == "APPLICATION_ERROR"
    assert "ValueError" in entry["message"]


def test_slow_log_endpoint_does_not_slow_requests(server, framework):
    framework.log_delay = 5
    start = time.time()
    for i in range(3):
        r = server.execute(jit_request(S, "raises", {"n": i}, endpoint=framework.url))
        assert r.json["data"]["code"] == "APPLICATION_ERROR"
    assert time.time() - start < 3, "requests waited for the framework log"


def test_local_definitions_refuse_symlinks_out_of_the_directory(tmp_path, make_server):
    app = tmp_path / "apps" / "evil"
    app.mkdir(parents=True)
    (app / "link.py").symlink_to("/etc/passwd")
    s = make_server("--pool-size", "1", definitions=tmp_path / "apps")
    r = s.execute(jit_request("link.py", "f", app="evil"))
    assert r.json["data"]["code"] in ("SCRIPT_NOT_FOUND", "MCP_ERROR")
    assert "root:" not in r.raw.decode()
