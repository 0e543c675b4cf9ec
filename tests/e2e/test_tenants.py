# SPDX-License-Identifier: MIT
"""Tenants (`serve --tenants FILE`, CONTRACT §10): sessions, MCP sessions, workspaces, memories
and saved tools belong to their tenant (also over /v1/workspaces/...); another tenant gets 404
and never sees them listed;
per-tenant limits on sessions and running executions; the tenant as a label in /metrics; the
operator token sees everything; a bad file refuses the start. Each test is an attempt of one
tenant on another's things over real HTTP."""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from harness import McpHttp, Server, executor_request, write_tenants

ALPHA = "alpha-token-0123456789"
BETA = "beta-token-0123456789"
OPERATOR = "operator-token-0123456789"
TENANTS = {"tenants": {"alpha": {"token": ALPHA, "maxSessions": 2, "maxRunning": 1},
                       "beta": {"token": BETA}}}


def auth(token):
    return {"Authorization": "Bearer " + token}


@pytest.fixture(scope="module")
def state_dir():
    d = tempfile.mkdtemp(prefix="sandboxd-state-")
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def tsrv(state_dir):
    path = write_tenants(TENANTS)
    s = Server("--pool-size", "2", "--tenants", path, "--api-token", OPERATOR,
               "--state-dir", str(state_dir))
    yield s
    s.stop()
    os.unlink(path)


def call(srv, token, method, path, body=None):
    return srv.request(method, path, body, auth(token), fresh=True)


def create(srv, token, **body):
    r = call(srv, token, "POST", "/v1/sessions", body)
    assert r.status == 201, r
    return r.json["sessionId"]


def run(srv, token, sid, code):
    r = call(srv, token, "POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    assert r.status == 200, r
    assert r.json["status"] == "ok", r.json
    return r.json


def listed(srv, token):
    r = call(srv, token, "GET", "/v1/sessions")
    assert r.status == 200, r
    return {s["sessionId"]: s for s in r.json["sessions"]}


def test_sessions_are_invisible_to_other_tenants(tsrv):
    sid = create(tsrv, ALPHA, workspace="w1")
    try:
        run(tsrv, ALPHA, sid, "x = 'alpha-private'")
        # beta: the session does not exist, whatever it tries
        assert call(tsrv, BETA, "GET", "/v1/sessions/" + sid).status == 404
        r = call(tsrv, BETA, "POST", "/v1/sessions/%s/execute" % sid, {"code": "x"})
        assert r.status == 404 and b"alpha-private" not in r.raw
        assert call(tsrv, BETA, "DELETE", "/v1/sessions/" + sid).status == 404
        assert sid not in listed(tsrv, BETA)
        # alpha: its own
        assert call(tsrv, ALPHA, "GET", "/v1/sessions/" + sid).json["workspace"] == "w1"
        assert listed(tsrv, ALPHA)[sid]["tenant"] == "alpha"
        assert run(tsrv, ALPHA, sid, "x")["result"] == "'alpha-private'"
        # the operator sees every tenant's, with its tenant
        assert listed(tsrv, OPERATOR)[sid]["tenant"] == "alpha"
        # no token, a wrong one: 401
        assert tsrv.request("GET", "/v1/sessions", fresh=True).status == 401
        assert call(tsrv, ALPHA + "x", "GET", "/v1/sessions").status == 401
    finally:
        assert call(tsrv, ALPHA, "DELETE", "/v1/sessions/" + sid).status == 204


def test_session_files_are_invisible_to_other_tenants(tsrv):
    """/v1/sessions/{id}/files/...: beta can neither list, read, write nor delete the files of
    alpha's session (404, as if it did not exist), and nothing beta tried reached them."""
    sid = create(tsrv, ALPHA)
    files = "/v1/sessions/%s/files" % sid
    try:
        r = tsrv.request("PUT", files + "/secret.txt", b"alpha-private", auth(ALPHA), fresh=True)
        assert r.status == 201, r
        # beta: no such session, whatever it tries
        r = call(tsrv, BETA, "GET", files)
        assert r.status == 404 and b"secret.txt" not in r.raw, r
        r = call(tsrv, BETA, "GET", files + "/secret.txt")
        assert r.status == 404 and b"alpha-private" not in r.raw, r
        r = tsrv.request("PUT", files + "/secret.txt", b"beta-was-here", auth(BETA), fresh=True)
        assert r.status == 404, r
        r = tsrv.request("PUT", files + "/planted.txt", b"beta-was-here", auth(BETA), fresh=True)
        assert r.status == 404, r
        assert call(tsrv, BETA, "DELETE", files + "/secret.txt").status == 404
        # no token: 401, as on every route
        assert tsrv.request("GET", files, fresh=True).status == 401
        # alpha: its file is intact, and beta's were never written
        r = call(tsrv, ALPHA, "GET", files + "/secret.txt")
        assert r.status == 200 and r.raw == b"alpha-private", r
        names = [f["path"] for f in call(tsrv, ALPHA, "GET", files).json["files"]]
        assert names == ["secret.txt"], names
        out = run(tsrv, ALPHA, sid, "open('/tmp/secret.txt').read()")
        assert out["result"] == "'alpha-private'", out
        # the operator may reach every tenant's
        assert call(tsrv, OPERATOR, "GET", files + "/secret.txt").raw == b"alpha-private"
        assert call(tsrv, ALPHA, "DELETE", files + "/secret.txt").status == 204
    finally:
        assert call(tsrv, ALPHA, "DELETE", "/v1/sessions/" + sid).status == 204


def test_workspaces_of_tenants_are_apart(tsrv, state_dir):
    """Same workspace name, two tenants: two directories. Beta neither reads alpha's memory nor
    gets alpha's saved tool planted into its sessions."""
    a = create(tsrv, ALPHA, workspace="shared")
    run(tsrv, ALPHA, a, "save_memory('k', 'alpha-secret')\n"
                        "def helper():\n    return 'alpha tool'\nsave_tool(helper)")
    assert call(tsrv, ALPHA, "DELETE", "/v1/sessions/" + a).status == 204
    b = create(tsrv, BETA, workspace="shared")
    info = call(tsrv, BETA, "GET", "/v1/sessions/" + b).json
    assert info["workspace"] == "shared"
    out = run(tsrv, BETA, b, "(load_memory('k'), 'helper' in globals())")
    assert out["result"] == "(None, False)", out
    run(tsrv, BETA, b, "save_memory('k', 'beta-value')")
    assert call(tsrv, BETA, "DELETE", "/v1/sessions/" + b).status == 204
    a = create(tsrv, ALPHA, workspace="shared")
    try:
        out = run(tsrv, ALPHA, a, "(load_memory('k'), helper())")
        assert out["result"] == "('alpha-secret', 'alpha tool')", out
    finally:
        assert call(tsrv, ALPHA, "DELETE", "/v1/sessions/" + a).status == 204
    assert (state_dir / "tenants" / "alpha" / "workspaces" / "shared" / "tools").is_dir()
    assert (state_dir / "tenants" / "beta" / "workspaces" / "shared" / "memory").is_dir()
    assert not (state_dir / "workspaces" / "shared").exists()  # the operator's namespace


def test_workspace_routes_see_only_the_callers_workspace(tsrv):
    """/v1/workspaces/{name}/... with two tenants holding a workspace of the same name: each lists
    only its own saved tools and memories, and neither can delete the other's (404), not even
    with the other's tool name or memory key; a name only the other tenant holds does not exist
    for the caller; without a token it is 401, as on every route."""
    def ws(token, method, rest):
        return call(tsrv, token, method, "/v1/workspaces/same-name" + rest)

    a = create(tsrv, ALPHA, workspace="same-name")
    run(tsrv, ALPHA, a, "save_memory('k', 'alpha-secret')\nsave_memory('alpha-only', 1)\n"
                        "def alpha_tool():\n    return 'a'\nsave_tool(alpha_tool)")
    assert call(tsrv, ALPHA, "DELETE", "/v1/sessions/" + a).status == 204
    b = create(tsrv, BETA, workspace="same-name")
    run(tsrv, BETA, b, "save_memory('k', 'beta-value')\n"
                       "def beta_tool():\n    return 'b'\nsave_tool(beta_tool)")
    assert call(tsrv, BETA, "DELETE", "/v1/sessions/" + b).status == 204

    def tools(token):
        r = ws(token, "GET", "/tools")
        assert r.status == 200, r
        assert r.json["workspace"] == "same-name"
        return {t["name"]: t["source"] for t in r.json["tools"]}

    def memories(token):
        r = ws(token, "GET", "/memories")
        assert r.status == 200, r
        return sorted(m["key"] for m in r.json["memories"])

    assert list(tools(ALPHA)) == ["alpha_tool"]
    assert list(tools(BETA)) == ["beta_tool"]
    assert memories(ALPHA) == ["alpha-only", "k"]
    assert memories(BETA) == ["k"]
    # beta reaches for alpha's things by name: there are none in its workspace
    assert ws(BETA, "DELETE", "/tools/alpha_tool").status == 404
    assert ws(BETA, "DELETE", "/memories/alpha-only").status == 404
    # a key both hold: beta deletes its own, alpha's stays
    assert ws(BETA, "DELETE", "/memories/k").status == 204
    assert memories(BETA) == []
    assert memories(ALPHA) == ["alpha-only", "k"]
    assert list(tools(ALPHA)) == ["alpha_tool"]
    # a workspace only alpha has does not exist for beta, nor for the operator (whose
    # workspaces are outside every tenant's)
    c = create(tsrv, ALPHA, workspace="alpha-ws")
    run(tsrv, ALPHA, c, "save_memory('x', 1)")
    assert call(tsrv, ALPHA, "DELETE", "/v1/sessions/" + c).status == 204
    assert call(tsrv, ALPHA, "GET", "/v1/workspaces/alpha-ws/memories").status == 200
    assert call(tsrv, BETA, "GET", "/v1/workspaces/alpha-ws/memories").status == 404
    assert call(tsrv, OPERATOR, "GET", "/v1/workspaces/same-name/tools").status == 404
    # the policy applies: no token, a wrong one
    assert tsrv.request("GET", "/v1/workspaces/same-name/tools", fresh=True).status == 401
    assert ws(BETA + "x", "DELETE", "/tools/beta_tool").status == 401
    # alpha removes its own tool; the sources beta saw never held alpha's code
    assert ws(ALPHA, "DELETE", "/tools/alpha_tool").status == 204
    assert tools(ALPHA) == {}
    assert "return 'a'" not in json.dumps(tools(BETA))


def test_mcp_sessions_belong_to_their_tenant(tsrv):
    c = McpHttp(tsrv, headers=auth(ALPHA))
    try:
        r = c.call("run_python", {"code": "y = 7"})
        assert r["structuredContent"]["status"] == "ok", r
        # beta with alpha's MCP-Session-Id: no such session
        hdr = {"Content-Type": "application/json", "Accept": c.ACCEPT,
               "MCP-Session-Id": c.session, **auth(BETA)}
        ping = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert tsrv.request("POST", "/mcp", ping, hdr, fresh=True).status == 404
        assert tsrv.request("DELETE", "/mcp", None, {"MCP-Session-Id": c.session, **auth(BETA)},
                            fresh=True).status == 404
        # the sandbox session run_python made is alpha's: listed for alpha, not for beta
        alphas = [s for s in listed(tsrv, ALPHA).values() if s["workspace"] == "default"]
        assert len(alphas) == 1 and alphas[0]["tenant"] == "alpha"
        assert not [s for s in listed(tsrv, BETA).values() if s.get("tenant") == "alpha"]
        assert c.call("run_python", {"code": "y * 6"})["structuredContent"]["result"] == "42"
    finally:
        assert c.delete().status == 204


def test_tenant_limits(tsrv):
    """alpha: at most 2 live sessions and 1 running execution; beta is not held back by them."""
    s1, s2 = create(tsrv, ALPHA), create(tsrv, ALPHA)
    try:
        r = call(tsrv, ALPHA, "POST", "/v1/sessions", {})
        assert r.status == 429 and r.json["error"]["code"] == "TENANT_LIMIT", r
        b = create(tsrv, BETA)
        assert call(tsrv, BETA, "DELETE", "/v1/sessions/" + b).status == 204
        done = {}

        def slow():
            done["r"] = call(tsrv, ALPHA, "POST", "/v1/sessions/%s/execute" % s1,
                             {"code": "import time\ntime.sleep(3)\n'slept'"})

        t = threading.Thread(target=slow)
        t.start()
        time.sleep(1)  # the slow execution holds alpha's one running slot now
        r = call(tsrv, ALPHA, "POST", "/execute", executor_request("1 + 1"))
        assert r.status == 429 and r.json["error"]["code"] == "TENANT_LIMIT", r
        assert r.header("Retry-After") == "1"
        r = call(tsrv, ALPHA, "POST", "/v1/sessions/%s/execute" % s2, {"code": "1"})
        assert r.status == 429, r
        r = call(tsrv, BETA, "POST", "/execute", executor_request("2 + 2"))
        assert r.status == 200 and r.json["data"]["result"] == 4, r
        t.join(30)
        assert done["r"].status == 200 and done["r"].json["result"] == "'slept'"
        r = call(tsrv, ALPHA, "POST", "/execute", executor_request("1 + 1"))
        assert r.status == 200 and r.json["data"]["result"] == 2, r
    finally:
        for sid in (s1, s2):
            call(tsrv, ALPHA, "DELETE", "/v1/sessions/" + sid)
    metrics = call(tsrv, OPERATOR, "GET", "/metrics").raw.decode()
    assert 'sandboxd_tenant_refused_total{tenant="alpha",limit="maxRunning"} 2' in metrics
    assert 'sandboxd_tenant_refused_total{tenant="alpha",limit="maxSessions"} 1' in metrics
    assert 'sandboxd_tenant_executions_total{tenant="beta",handler="EXECUTOR"} 1' in metrics
    mine = call(tsrv, BETA, "GET", "/metrics").raw.decode()
    assert 'tenant="beta"' in mine and "alpha" not in mine


def test_tenants_alone_accept_only_tenant_tokens(make_server):
    path = write_tenants(TENANTS)
    try:
        s = make_server("--tenants", path, "--host", "0.0.0.0")  # tenants are authentication
        assert s.request("GET", "/v1/sessions", fresh=True).status == 401
        assert s.request("GET", "/v1/sessions", None, auth(OPERATOR), fresh=True).status == 401
        assert s.request("GET", "/v1/sessions", None, auth(BETA), fresh=True).status == 200
        assert s.request("GET", "/healthz", fresh=True).status == 200
    finally:
        os.unlink(path)


@pytest.mark.parametrize("doc, mode, args, message", [
    ({"tenants": {"a": {"token": "same-token-1"}, "b": {"token": "same-token-1"}}}, 0o600, [],
     "tenants 'a' and 'b' have the same token"),
    ({"tenants": {"a": {"token": "t-1", "maxSessoins": 2}}}, 0o600, [],
     "unknown key \"maxSessoins\""),
    ({"tenants": {"a": {"token": ""}}}, 0o600, [], "\"token\" must be a string"),
    ({"tenants": {"../a": {"token": "t-1"}}}, 0o600, [], "tenant name '../a'"),
    ({"tenants": {"a": {"token": "t-1"}}, "extra": 1}, 0o600, [], "unknown key \"extra\""),
    ('{"tenants": {"a": {"token": "t-1"}, "a": {"token": "t-2"}}}', 0o600, [], "duplicate"),
    ({"tenants": {"a": {"token": "t-1"}}}, 0o666, [], "writable by its group or by others"),
    ({"tenants": {"a": {"token": "t-1"}}}, 0o600, ["--api-token", "t-1"],
     "also the token of tenant 'a'"),
])
def test_bad_tenants_file_refuses_to_start(doc, mode, args, message):
    path = write_tenants(doc, mode)
    s = Server("--tenants", path, *args, wait=False)
    try:
        s.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("sandboxd started with a bad tenants file")
    finally:
        logs = s.logs()
        s.stop(check=False)
        os.unlink(path)
    assert s.proc.returncode != 0
    msgs = [json.loads(line)["msg"] for line in logs.splitlines() if line.startswith("{")]
    assert any(message in m for m in msgs), msgs
