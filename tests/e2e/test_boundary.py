# SPDX-License-Identifier: MIT
"""The boundary around `sandboxd serve` (CONTRACT §10, docs/SECURITY.md "Who may call"): one
policy for every endpoint — Host and Origin (DNS rebinding), the bearer token, the refusal of an
unauthenticated non-loopback bind — the framework endpoint allowlist, and what URLs may say in
messages. Each test performs the attack over real HTTP against a real server."""
import json
import socket
import subprocess
import threading
import time

import pytest

from harness import BIN, MCP_VERSION, McpHttp, Server, executor_request, jit_request

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}

# (method, path, body) of every endpoint but /mcp; bodies that would succeed when admitted
ENDPOINTS = [
    ("GET", "/v1/sessions", None),
    ("POST", "/v1/sessions", {}),
    ("GET", "/v1/sessions/0123456789abcdef0123456789abcdef", None),
    ("POST", "/v1/sessions/0123456789abcdef0123456789abcdef/execute", {"code": "1"}),
    ("DELETE", "/v1/sessions/0123456789abcdef0123456789abcdef", None),
    ("POST", "/execute", executor_request("1 + 1")),
    ("GET", "/metrics", None),
    ("POST", "/_framework/load_code", {"appId": "testapp"}),
]


def post_mcp(srv, body, **headers):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers)
    return srv.request("POST", "/mcp", json.dumps(body), h, fresh=True)


def refused(*args, env=None):
    """Start sandboxd expecting it to refuse: (exit status, log)."""
    s = Server(*args, env=env, wait=False)
    try:
        s.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        s.stop(check=False)
        pytest.fail("sandboxd started although it should have refused")
    status, log = s.proc.returncode, s.logs()
    s.stop(check=False)
    return status, log


class Listener:
    """A loopback TCP socket that accepts and says nothing (a TLS handshake never completes),
    counting the connections it got."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.conns = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(c)

    def close(self):
        # shutdown first: it wakes the accept() of the thread (close alone would not, and the
        # socket would go on taking connections)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)
        for c in self.conns:
            c.close()


@pytest.fixture
def listener():
    ls = Listener()
    yield ls
    ls.close()


# ---- Host and Origin on every endpoint ---------------------------------------------------------

@pytest.mark.parametrize("method, path, body", ENDPOINTS + [("GET", "/healthz", None)])
@pytest.mark.parametrize("headers", [{"Host": "attacker.example"},
                                     {"Host": "attacker.example:8080"},
                                     {"Origin": "http://attacker.example"},
                                     {"Origin": "null"}])
def test_rebinding_is_refused_on_every_endpoint(server, method, path, body, headers):
    """A page on attacker.example that rebinds its name to 127.0.0.1 sends its own Host (and
    Origin): no endpoint may answer it, not only /mcp."""
    r = server.request(method, path, body, headers, fresh=True)
    assert r.status == 403, r
    assert r.json["error"]["code"] == "FORBIDDEN"


def test_rebinding_cannot_list_or_create_sessions(server):
    r = server.request("POST", "/v1/sessions", {}, {"Host": "attacker.example"}, fresh=True)
    assert r.status == 403
    assert server.request("GET", "/v1/sessions", fresh=True).json["sessions"] == []
    # the same requests with a loopback Host (or an allowed one) go through
    for host in ("localhost:%d" % server.port, "127.0.0.7", "[::1]:1"):
        assert server.request("GET", "/v1/sessions", None, {"Host": host}, fresh=True).status == 200


def test_allowed_hosts_and_origins_extend_the_policy(make_server):
    s = make_server("--allowed-host", "sandbox.internal", "--allowed-origin",
                    "https://app.example", "--mcp-allowed-host", "old.internal:8443")
    for headers, status in (({"Host": "sandbox.internal:1"}, 200),
                            ({"Host": "old.internal:8443"}, 200),
                            ({"Host": "old.internal:8444"}, 403),
                            ({"Origin": "https://app.example"}, 200),
                            ({"Origin": "http://localhost:3000"}, 200),
                            ({"Origin": "https://app.example.evil"}, 403)):
        assert s.request("GET", "/metrics", None, headers, fresh=True).status == status, headers


# ---- the bearer token -----------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["option", "env", "old-option", "old-env"])
def test_api_token_guards_every_endpoint(make_server, how):
    token = "tok-3f9c0a1b2c"
    args, env = {"option": (["--api-token", token], None),
                 "env": ([], {"SANDBOXD_API_TOKEN": token}),
                 "old-option": (["--mcp-token", token], None),
                 "old-env": ([], {"SANDBOXD_MCP_TOKEN": token})}[how]
    s = make_server(*args, env=env)
    good = {"Authorization": "Bearer " + token}
    for method, path, body in ENDPOINTS:
        r = s.request(method, path, body, fresh=True)
        assert r.status == 401, (path, r)
        assert r.json["error"]["code"] == "UNAUTHORIZED"
        assert r.header("WWW-Authenticate") == 'Bearer realm="sandboxd"'
        r = s.request(method, path, body, {"Authorization": "Bearer " + token + "x"}, fresh=True)
        assert r.status == 401 and 'error="invalid_token"' in r.header("WWW-Authenticate")
        r = s.request(method, path, body, {"Authorization": "Basic " + token}, fresh=True)
        assert r.status == 401
        assert s.request(method, path, body, good, fresh=True).status != 401, path
    r = post_mcp(s, INIT)
    assert r.status == 401 and r.json["error"]["code"] == -32600
    # probes stay open
    assert s.request("GET", "/healthz", fresh=True).status == 200


def test_token_holders_sessions_are_not_open_to_others(make_server):
    """A session an MCP client made with the token must not be reachable without it (before,
    /v1/sessions listed it, ran code in it and read its variables)."""
    s = make_server("--api-token", "k-1234567890")
    good = {"Authorization": "Bearer k-1234567890"}
    c = McpHttp(s, headers=good)
    r = c.call("run_python", {"code": "secret = 'the-agent-data'"})
    assert r["structuredContent"]["status"] == "ok", r
    listed = s.request("GET", "/v1/sessions", None, good, fresh=True).json["sessions"]
    assert len(listed) == 1
    sid = listed[0]["sessionId"]
    assert s.request("GET", "/v1/sessions", fresh=True).status == 401
    r = s.request("POST", "/v1/sessions/%s/execute" % sid, {"code": "secret"}, fresh=True)
    assert r.status == 401 and b"the-agent-data" not in r.raw
    assert c.delete().status == 204


def test_non_loopback_bind_without_auth_refuses_to_start(make_server):
    status, log = refused("--host", "0.0.0.0")
    assert status != 0
    assert "refusing to listen on 0.0.0.0 without authentication" in log
    assert "--insecure-no-auth" in log
    s = make_server("--host", "0.0.0.0", "--insecure-no-auth")
    assert "without authentication (--insecure-no-auth)" in s.logs()
    # without --allowed-host a non-loopback bind answers any Host (clients use many names)
    assert s.request("GET", "/metrics", None, {"Host": "sandbox.example"}, fresh=True).status == 200
    s = make_server("--host", "0.0.0.0", "--api-token", "t-0123456789")
    assert s.request("GET", "/metrics", fresh=True).status == 401


def test_bad_tokens_are_refused_at_start():
    status, log = refused("--api-token", "has space")
    assert status == 2 and "printable ASCII" in log


# ---- the framework endpoint -----------------------------------------------------------------------

def with_endpoint(body, endpoint):
    body["context"]["mcp_endpoint"] = endpoint
    return body


def all_handlers(endpoint):
    return [
        jit_request("handlers/basic.py", "add", endpoint=endpoint),
        with_endpoint(executor_request("1 + 1"), endpoint),
        {"requestId": "r-llm", "requestData": {"source": "t"},
         "context": {"appId": "testapp", "handlerType": "LLM", "mcp_endpoint": endpoint,
                     "taskDetails": {"promptTemplate": "prompts/x.yaml"}}},
        {"requestId": "r-wf", "requestData": {"source": "t"},
         "context": {"appId": "testapp", "handlerType": "WORKFLOW", "mcp_endpoint": endpoint,
                     "workflowInfo": {"workflowId": "flows/x.yaml"}}},
    ]


@pytest.mark.parametrize("endpoint", [
    "http://192.0.2.1:9/mcp",               # anywhere but loopback: a blind SSRF before
    "http://127.0.0.1.nip.io:%d/",          # looks like loopback as a raw string prefix
    "http://127.0.0.1@192.0.2.1:%d/",       # userinfo that looks like the host
    "http://localhost.attacker.example:%d/",
])
def test_framework_endpoint_outside_the_allowlist_is_refused(server, listener, endpoint):
    """The default allowlist is loopback URLs; anything else is 403 FRAMEWORK_NOT_ALLOWED for
    every handler type, before any connection."""
    ep = endpoint % listener.port if "%d" in endpoint else endpoint
    for body in all_handlers(ep):
        start = time.time()
        r = server.execute(body, fresh=True)
        assert r.status == 403, r
        assert r.json["error"]["code"] == "FRAMEWORK_NOT_ALLOWED"
        assert r.json["error"]["field"] == "context.mcp_endpoint"
        assert time.time() - start < 3  # refused at once, not after a connect timeout
    assert listener.accepted == 0


def test_framework_allow_prefixes(make_server, framework, listener):
    """--framework-allow narrows the endpoints to parsed prefixes: this framework's path is
    allowed, a sibling path and another loopback port are not, and no connection reaches
    them."""
    s = make_server("--framework-allow", framework.url)
    r = s.execute(jit_request("handlers/basic.py", "add", body={"a": 2, "b": 3},
                              endpoint=framework.url), fresh=True)
    assert r.status == 200 and r.json["data"]["sum"] == 5, r
    for ep in (framework.url + "x", framework.url.rsplit("/", 1)[0] + "/other",
               "http://127.0.0.1:%d/" % listener.port, framework.url + "/../other",
               framework.url + "/%2e%2e/other"):
        r = s.execute(jit_request("handlers/basic.py", "add", endpoint=ep), fresh=True)
        assert r.status == 403 and r.json["error"]["code"] == "FRAMEWORK_NOT_ALLOWED", (ep, r)
    assert listener.accepted == 0
    # "local" is always allowed
    r = s.execute(jit_request("handlers/basic.py", "add", body={"a": 1, "b": 1}), fresh=True)
    assert r.status == 200 and r.json["data"]["sum"] == 2, r


@pytest.mark.parametrize("prefix, why", [
    ("ftp://x/", "must be an http:// or https:// URL"),
    ("http://x/?q=1", "must be scheme://host[:port][/path], without user, query or fragment"),
    ("http://u:p@x/", "must be scheme://host[:port][/path], without user, query or fragment"),
    ("nope", "is not a URL")])
def test_bad_framework_allow_refuses_to_start(prefix, why):
    status, log = refused("--framework-allow", prefix)
    assert status == 2 and "--framework-allow '%s' %s" % (prefix, why) in log


def test_tls_stall_reports_the_connect_timeout(server, listener):
    """An https:// endpoint that accepts and never answers the handshake fails after the 5 s
    connect timeout, and the message says that limit (it used to say 10000 ms)."""
    ep = "https://127.0.0.1:%d/mcp" % listener.port
    start = time.time()
    r = server.execute(jit_request("handlers/basic.py", "add", endpoint=ep), fresh=True)
    took = time.time() - start
    assert r.status == 200 and r.json["data"]["code"] == "MCP_ERROR", r
    msg = r.json["data"]["message"]
    assert "connect timeout of 5000 ms" in msg and "10000" not in msg, msg
    assert 4.5 < took < 9, took
    assert listener.accepted >= 1


# ---- secrets in URLs -------------------------------------------------------------------------------

def test_endpoint_credentials_stay_out_of_answers_and_logs(make_server, listener):
    """A framework URL's userinfo and query never reach the response or the log."""
    s = make_server()
    listener.close()  # the port refuses connections now
    ep = "http://fw-user:PASSWORD1@127.0.0.1:%d/mcp?api_key=SECRET2" % listener.port
    r = s.execute(jit_request("handlers/basic.py", "add", endpoint=ep), fresh=True)
    assert r.status == 200 and r.json["data"]["code"] == "MCP_ERROR", r
    assert "127.0.0.1:%d/mcp" % listener.port in r.json["data"]["message"]
    for secret in (b"PASSWORD1", b"SECRET2", b"fw-user"):
        assert secret not in r.raw
    time.sleep(0.5)  # the asynchronous framework log has tried by now
    logs = s.logs()
    assert "PASSWORD1" not in logs and "SECRET2" not in logs


def test_llm_url_credentials_stay_out_of_answers_and_logs(make_server, listener, tmp_path):
    listener.close()
    (tmp_path / "llmapp" / "prompts").mkdir(parents=True)
    (tmp_path / "llmapp" / "prompts" / "plain.yaml").write_text("template: 'Say hi'\n")
    s = make_server("--llm-url", "http://llm-user:PASSWORD3@127.0.0.1:%d/v1?key=SECRET4"
                    % listener.port, "--log-level", "debug", definitions=tmp_path)
    body = {"requestId": "r-1", "requestData": {"source": "t", "body": {"text": "x"}},
            "context": {"appId": "llmapp", "handlerType": "LLM", "mcp_endpoint": "local",
                        "taskDetails": {"promptTemplate": "prompts/plain.yaml"}}}
    r = s.execute(body, fresh=True)
    assert r.status == 200 and r.json["resultType"] == "error", r
    assert "127.0.0.1:%d/v1" % listener.port in r.json["data"]["message"], r
    for secret in (b"PASSWORD3", b"SECRET4", b"llm-user"):
        assert secret not in r.raw
    logs = s.logs()
    assert "PASSWORD3" not in logs and "SECRET4" not in logs


# ---- MCP: a second initialize --------------------------------------------------------------------

def test_initialize_inside_a_session_is_refused(server):
    c = McpHttp(server)
    try:
        r = c.post(INIT)  # carries the MCP-Session-Id of c
        assert r.status == 400, r
        assert r.json["error"]["code"] == -32600
        assert r.header("MCP-Session-Id") is None
        # the session itself is unharmed
        assert c.call("run_python", {"code": "6 * 7"})["structuredContent"]["result"] == "42"
        # an unknown id is refused the same way: no session is made on the side
        r = post_mcp(server, INIT, **{"MCP-Session-Id": "f" * 32})
        assert r.status == 400 and r.header("MCP-Session-Id") is None
    finally:
        assert c.delete().status == 204


def test_subcommand_help_names_the_options():
    out = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True).stdout
    for opt in ("--api-token", "--tenants", "--allowed-host", "--allowed-origin",
                "--framework-allow", "--insecure-no-auth", "--mcp-trust-project"):
        assert opt in out, opt
