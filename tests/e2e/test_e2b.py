# SPDX-License-Identifier: MIT
"""E2B's SDKs, unchanged, against sandboxd (CONTRACT §15, docs/E2B.md).

tests/node/e2b-suite.mjs drives e2b and @e2b/code-interpreter (the pinned npm packages) through
what E2B's docs show; this file starts `sandboxd serve` with an API token in E2B's key format,
runs the suite once with E2B_API_URL = E2B_SANDBOX_URL = http://127.0.0.1:PORT/e2b, and turns
each case into a test. What the SDKs cannot show (the wire itself) is checked with raw HTTP
below; the attacks are in tests/attacks/test_e2b_attacks.py."""
import base64
import json
import os
import secrets
import struct
import subprocess

import pytest

from harness import wait_until
from mcp_peers import NODE, NODE_DIR
from origins import fixtures

certs, web, tls = fixtures()  # an HTTP origin on the host's loopback stands in for the internet

SUITE = NODE_DIR / "e2b-suite.mjs"
SDK = NODE_DIR / "node_modules" / "@e2b" / "code-interpreter" / "package.json"
CASES = ["create_info_timeout", "files", "commands", "run_code", "contexts", "connect_kill",
         "wrong_key", "isolation", "no_network"]
KEY = "e2b_" + secrets.token_hex(20)


def e2b_env(port, key=KEY):
    url = "http://127.0.0.1:%d/e2b" % port
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("E2B_"):
            del env[k]
    env.update({"E2B_API_URL": url, "E2B_SANDBOX_URL": url, "E2B_API_KEY": key})
    return env


@pytest.fixture(scope="module")
def e2b_server(make_module_server):
    return make_module_server("--api-token", KEY)


@pytest.fixture(scope="module")
def make_module_server():
    from harness import Server
    started = []

    def make(*args):
        s = Server(*args)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


@pytest.fixture(scope="module")
def suite(e2b_server):
    assert NODE.exists() and SDK.exists(), (
        "E2B's SDKs are not installed: run `npm ci` in tests/node (tests/run.sh does)")
    p = subprocess.run([str(NODE), str(SUITE)] + CASES, cwd=NODE_DIR, env=e2b_env(e2b_server.port),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, "the suite failed to run:\n%s\n%s" % (p.stdout, p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", CASES)
def test_sdk(suite, case):
    result = suite[case]
    assert result["ok"], "%s: %s\n%s" % (case, result.get("error"), result.get("stack", ""))


# ---- the wire, as the SDKs' source defines it ---------------------------------------------------

def create(srv, key=KEY, **body):
    body.setdefault("templateID", "base")
    body.setdefault("timeout", 60)
    r = srv.request("POST", "/e2b/v2/sandboxes", body=body, headers={"X-API-Key": key}, fresh=True)
    assert r.status == 201, r
    return r.json


def envd(srv, sb, path, body=b"", headers=None, port="49983", method="POST"):
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": port,
         "X-Access-Token": sb["envdAccessToken"]}
    h.update(headers or {})
    return srv.request(method, "/e2b" + path, body=body, headers=h, fresh=True)


def envelope(msg, flags=0):
    data = json.dumps(msg).encode()
    return struct.pack(">BI", flags, len(data)) + data


def envelopes(raw):
    out = []
    while raw:
        flags, n = struct.unpack(">BI", raw[:5])
        out.append((flags, json.loads(raw[5:5 + n])))
        raw = raw[5 + n:]
    return out


def test_create_answers_e2b_sandbox(e2b_server):
    sb = create(e2b_server)
    try:
        assert sb["templateID"] == "base" and sb["envdVersion"] == "0.5.7"
        assert sb["envdAccessToken"] == sb["trafficAccessToken"] and len(sb["envdAccessToken"]) == 64
        # An E2B sandbox is a sandboxd session: listed there, with its tenant and limits.
        def info():
            r = e2b_server.request("GET", "/v1/sessions/" + sb["sandboxID"],
                                   headers={"Authorization": "Bearer " + KEY}, fresh=True)
            assert r.status == 200 and r.json["alive"], r
            return r.json
        # Busy once its agent thread serves it (at once, but after the create answered).
        wait_until(lambda: info()["busy"], 10, "the sandbox's session to be served")
        # It runs no /execute of the session API: it serves E2B's protocol.
        r = e2b_server.request("POST", "/v1/sessions/%s/execute" % sb["sandboxID"],
                               body={"code": "1"}, headers={"Authorization": "Bearer " + KEY},
                               fresh=True)
        assert r.status == 400 and r.json["error"]["code"] == "AGENT_SESSION", r
    finally:
        r = e2b_server.request("DELETE", "/e2b/sandboxes/" + sb["sandboxID"],
                               headers={"X-API-Key": KEY}, fresh=True)
        assert r.status == 204, r


def test_unknown_template_names_the_served_ones(e2b_server):
    r = e2b_server.request("POST", "/e2b/v2/sandboxes", body={"templateID": "nodejs"},
                           headers={"X-API-Key": KEY}, fresh=True)
    assert r.status == 400 and r.json["code"] == 400, r
    assert "code-interpreter-v1" in r.json["message"] and "base" in r.json["message"], r
    # and the server's other profiles, each a template of its name (make deps installs numpy,
    # so the built-in datascience profile is there)
    assert ", datascience" in r.json["message"], r


def test_errors_have_e2b_shape(e2b_server):
    r = e2b_server.request("GET", "/e2b/sandboxes/vm.nothere", headers={"X-API-Key": KEY}, fresh=True)
    assert r.status == 404 and r.json == {"code": 404, "message": "sandbox vm.nothere not found"}, r
    r = e2b_server.request("GET", "/e2b/v2/sandboxes", headers={"X-API-Key": "e2b_00"}, fresh=True)
    assert r.status == 401 and r.json["code"] == 401, r
    r = e2b_server.request("GET", "/e2b/v2/sandboxes", fresh=True)
    assert r.status == 401 and r.json["code"] == 401, r


def test_connect_streaming_wire(e2b_server):
    """process.Process/Start as connect-web sends it: one envelope in, start/data/end events out,
    then the end-of-stream message; keepalives while the command is silent."""
    sb = create(e2b_server)
    body = envelope({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "sleep 1.5; echo hi"]}})
    r = envd(e2b_server, sb, "/process.Process/Start", body,
             {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
              "Keepalive-Ping-Interval": "1"})
    assert r.status == 200 and r.header("Content-Type") == "application/connect+json", r
    events = envelopes(r.raw)
    assert events[0][1]["event"]["start"]["pid"] > 0
    kinds = [list(e["event"])[0] for flags, e in events[:-1]]
    assert "keepalive" in kinds and kinds[-1] == "end", kinds
    data = [e["event"]["data"]["stdout"] for f, e in events if "data" in e.get("event", {})]
    assert data == ["aGkK"], data  # base64 of "hi\n"
    end = events[-2][1]["event"]["end"]
    assert end["exitCode"] == 0 and end["exited"] and end["status"] == "exit status 0", end
    assert events[-1] == (2, {}), events[-1]
    # A malformed envelope: a clear error, as the end of the stream.
    r = envd(e2b_server, sb, "/process.Process/Start", b"\x00\x00\x00\x00\x09{}",
             {"Content-Type": "application/connect+json"})
    flags, end = envelopes(r.raw)[-1]
    assert r.status == 200 and flags == 2 and end["error"]["code"] == "invalid_argument", r
    # Unary calls: JSON in and out, Connect's error codes.
    r = envd(e2b_server, sb, "/filesystem.Filesystem/Stat", json.dumps({"path": "nope"}),
             {"Content-Type": "application/json"})
    assert r.status == 404 and r.json["code"] == "not_found", r
    r = envd(e2b_server, sb, "/filesystem.Filesystem/WatchDir", envelope({"path": "/home/user"}),
             {"Content-Type": "application/connect+json"})
    assert envelopes(r.raw)[-1][1]["error"]["code"] == "unimplemented", r
    r = envd(e2b_server, sb, "/health", method="GET")
    assert r.status == 204, r
    e2b_server.request("DELETE", "/e2b/sandboxes/" + sb["sandboxID"], headers={"X-API-Key": KEY},
                       fresh=True)
    r = envd(e2b_server, sb, "/health", method="GET")
    assert r.status == 502, r  # isRunning() reads this as "not running"


def test_execute_ndjson_wire(e2b_server):
    sb = create(e2b_server)
    try:
        r = envd(e2b_server, sb, "/execute", json.dumps({"code": "print('a')\n1+1"}),
                 {"Content-Type": "application/json"}, port="49999")
        assert r.status == 200, r
        lines = [json.loads(x) for x in r.raw.decode().splitlines()]
        types = [x["type"] for x in lines]
        assert types == ["number_of_executions", "stdout", "result", "end_of_execution"], lines
        assert lines[2]["text"] == "2" and lines[2]["is_main_result"] is True, lines
        r = envd(e2b_server, sb, "/execute", json.dumps({"code": "1", "context_id": "x",
                                                         "language": "python"}),
                 {"Content-Type": "application/json"}, port="49999")
        assert r.status == 400 and b"Only one of" in r.raw, r
        r = envd(e2b_server, sb, "/execute", json.dumps({"code": "1", "context_id": "nope"}),
                 {"Content-Type": "application/json"}, port="49999")
        assert r.status == 404 and r.raw == b"Context nope not found", r
    finally:
        e2b_server.request("DELETE", "/e2b/sandboxes/" + sb["sandboxID"],
                           headers={"X-API-Key": KEY}, fresh=True)


def test_timeout_ends_the_sandbox(e2b_server):
    sb = create(e2b_server, timeout=1)
    r = envd(e2b_server, sb, "/health", method="GET")
    assert r.status == 204, r
    import time
    deadline = time.time() + 10
    while time.time() < deadline:
        r = e2b_server.request("GET", "/e2b/sandboxes/" + sb["sandboxID"],
                               headers={"X-API-Key": KEY}, fresh=True)
        if r.status == 404:
            assert "timeout ran out" in r.json["message"], r
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the sandbox outlived its timeout of 1 s")
    r = e2b_server.request("GET", "/v1/sessions/" + sb["sandboxID"],
                           headers={"Authorization": "Bearer " + KEY}, fresh=True)
    assert r.status == 404, r  # its session ended with it


def execute(srv, sb, code):
    """The NDJSON lines of one /execute."""
    r = envd(srv, sb, "/execute", json.dumps({"code": code}), {"Content-Type": "application/json"},
             port="49999")
    assert r.status == 200, r
    return [json.loads(x) for x in r.raw.decode().splitlines()]


def command(srv, sb, cmd):
    """(exit code, stdout) of a shell command in the sandbox, through process.Process/Start."""
    r = envd(srv, sb, "/process.Process/Start",
             envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}),
             {"Content-Type": "application/connect+json"})
    out, code = b"", None
    for _, msg in envelopes(r.raw):
        ev = msg.get("event", {})
        out += base64.b64decode(ev.get("data", {}).get("stdout", ""))
        code = ev["end"]["exitCode"] if "end" in ev else code
    return code, out.decode()


def main_text(lines):
    return next((x.get("text") for x in lines if x.get("is_main_result")), lines)


def test_network_follows_the_operators_policy(make_module_server, web):
    """No network unless the create asks and --egress-allow permits: network.allowOut (hosts
    within the ceiling), allow_internet_access (all of it), E2B's ALL_TRAFFIC."""
    host = "api.test:%d" % web.port
    srv = make_module_server("--api-token", KEY, "--egress-allow", host,
                             "--egress-resolve", "api.test:%d:127.0.0.1" % web.port)
    fetch = ("import urllib.request\n"
             "try:\n"
             "    r = str(urllib.request.urlopen('http://%s/hello', timeout=10).status)\n"
             "except Exception as e:\n"
             "    r = type(e).__name__\n"
             "r" % host)
    r = srv.request("POST", "/e2b/v2/sandboxes", headers={"X-API-Key": KEY}, fresh=True,
                    body={"templateID": "base", "network": {"allowOut": ["other.test"]}})
    assert r.status == 400 and r.json["code"] == 400 and "other.test" in r.json["message"], r
    plain = create(srv)
    assert main_text(execute(srv, plain, fetch)) != "200"  # none by default
    seen = len(web.seen)
    for body in ({"network": {"allowOut": [host]}}, {"allow_internet_access": True},
                 {"network": {"allowOut": ["0.0.0.0/0"]}}):
        sb = create(srv, **body)
        assert main_text(execute(srv, sb, fetch)) == "200", body
        # Commands go through the same proxy (HTTP_PROXY and friends are set for them).
        get = "import urllib.request as u; print(u.urlopen('http://%s/hi', timeout=10).status)"
        assert command(srv, sb, 'python3 -c "%s"' % (get % host)) == (0, "200\n"), body
        info = srv.request("GET", "/e2b/sandboxes/" + sb["sandboxID"],
                           headers={"X-API-Key": KEY}, fresh=True).json
        assert info["allowInternetAccess"] is True and info["network"]["allowOut"] == [host], info
        srv.request("DELETE", "/e2b/sandboxes/" + sb["sandboxID"], headers={"X-API-Key": KEY},
                    fresh=True)
    assert len(web.seen) == seen + 6
    srv.request("DELETE", "/e2b/sandboxes/" + plain["sandboxID"], headers={"X-API-Key": KEY},
                fresh=True)
