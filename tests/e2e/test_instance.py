# SPDX-License-Identifier: MIT
"""--instance-id (CONTRACT §11): every response names the instance, session ids and MCP
session ids begin with "ID." so that a proxy can route them, bad ids are refused at start."""
import re
import socket
import subprocess

from harness import BIN, McpHttp, executor_request

HEX32 = "[0-9a-f]{32}"


def test_every_response_names_the_instance(make_server):
    srv = make_server("--pool-size", "1", "--instance-id", "node-a", "--max-body-kb", "1")
    answers = [
        srv.request("GET", "/healthz"),
        srv.request("GET", "/metrics"),
        srv.execute(executor_request("def f():\n    return 1\n", functionName="f")),
        srv.request("GET", "/no/such/route"),
        srv.request("POST", "/execute", "x" * 4096, {"Content-Type": "application/json"}),
        srv.request("POST", "/execute", "{", {"Content-Type": "application/json"}),
        srv.request("GET", "/v1/sessions/node-a.%s" % ("0" * 32)),
    ]
    assert [r.status for r in answers] == [200, 200, 200, 404, 413, 400, 404]
    for r in answers:
        assert r.header("X-Sandboxd-Instance") == "node-a", r.headers


def test_session_ids_carry_the_instance_prefix(make_server):
    srv = make_server("--pool-size", "1", "--session-pool-size", "1", "--instance-id", "node-b")
    r = srv.request("POST", "/v1/sessions", body={})
    assert r.status == 201, r
    sid = r.json["sessionId"]
    assert re.fullmatch("node-b\\." + HEX32, sid), sid
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": "x = 41\nx + 1"})
    assert r.status == 200 and r.json["status"] == "ok", r
    assert srv.request("GET", "/v1/sessions/" + sid).json["sessionId"] == sid
    assert sid in [s["sessionId"] for s in srv.request("GET", "/v1/sessions").json["sessions"]]
    assert srv.request("DELETE", "/v1/sessions/" + sid).status == 204
    assert srv.request("GET", "/v1/sessions/" + sid).status == 404

    mcp = McpHttp(srv)
    assert re.fullmatch("node-b\\." + HEX32, mcp.session), mcp.session
    tools = mcp.request("tools/list")["result"]["tools"]
    assert "run_python" in [t["name"] for t in tools]
    # The same random part under another instance's name is another (unknown) session.
    other = McpHttp(srv, initialize=False)
    other.session = "node-c." + mcp.session.split(".", 1)[1]
    other.version = mcp.version
    r = other.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status == 404, r
    assert mcp.delete().status in (200, 204)


def test_default_is_the_host_name(make_server):
    srv = make_server("--pool-size", "1")
    host = socket.gethostname().split(".")[0]
    got = srv.request("GET", "/healthz").header("X-Sandboxd-Instance")
    if re.fullmatch("[A-Za-z0-9]([A-Za-z0-9-]{0,29}[A-Za-z0-9])?", host):
        assert got == host
    else:  # a host name that is no valid id becomes one (tests/unit/test_instance.c)
        assert re.fullmatch("[A-Za-z0-9][A-Za-z0-9-]{0,29}[A-Za-z0-9]", got), got


def test_bad_instance_ids_are_refused_at_start():
    for bad in ["a.b", "x" * 32, "a_b", "-a", "", "a/b", "caf\u00e9"]:
        p = subprocess.run([BIN, "serve", "--port", "0", "--instance-id", bad, "--pool-size", "0"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (bad, p.returncode, p.stderr[-2000:])
        assert "--instance-id" in p.stderr, p.stderr
    p = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert "--instance-id ID" in p.stdout
