# SPDX-License-Identifier: MIT
"""The OpenAPI document (docs/openapi.yaml, served at /openapi.json) against a real validator
(@redocly/cli lint, every recommended rule as an error), and the server's answers against the
document: a request of every documented operation, with its successes and its refusals, is
checked by tests/node/openapi-check.mjs (ajv, JSON Schema 2020-12). A status, a content type
or a body the document does not describe fails; so does a documented operation the router
does not serve, or one no request here reached. (tests/unit/test_routes.c holds the route
table and the document together in the other direction.)"""
import json
import pathlib
import re
import subprocess
import tempfile
import threading
import time

import pytest
import yaml

from harness import ROOT, Server, executor_request, jit_request, sse_events

NODE_DIR = ROOT / "tests" / "node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
REDOCLY = NODE_DIR / "node_modules" / "@redocly" / "cli" / "bin" / "cli.js"
CHECK = NODE_DIR / "openapi-check.mjs"
SPEC = ROOT / "docs" / "openapi.yaml"
TOKEN = "openapi-operator-token"
AUTH = {"Authorization": "Bearer " + TOKEN}
# Offline and quiet: no telemetry, no update check.
NODE_ENV = {"REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
            "PATH": "/usr/bin:/bin"}
EGRESS_HOST = "api.test:9"  # discard: nothing listens there


class Loader(yaml.SafeLoader):
    """As src/web/embed.py reads it: no YAML timestamps."""


Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def node(*args, timeout=120):
    assert NODE.exists() and REDOCLY.exists(), \
        "tests/node has no @redocly/cli: npm ci there (tests/run.sh does)"
    return subprocess.run([str(NODE)] + [str(a) for a in args], cwd=NODE_DIR, env=NODE_ENV,
                          capture_output=True, text=True, timeout=timeout)


def lint(doc):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        return node(REDOCLY, "lint", "--config", NODE_DIR / "redocly.yaml", "--format", "stylish",
                    f.name)
    finally:
        pathlib.Path(f.name).unlink()


def check(doc, records):
    with tempfile.TemporaryDirectory() as d:
        spec, rec = pathlib.Path(d, "spec.json"), pathlib.Path(d, "records.jsonl")
        spec.write_text(json.dumps(doc))
        rec.write_text("".join(json.dumps(r) + "\n" for r in records))
        return node(CHECK, spec, rec)


@pytest.fixture(scope="module")
def served(mcp_config):
    """The server, and the document it serves (without a token). Every tool of "everything"
    waits for a person (the approvals routes); the egress proxy allows one host (pinned to a
    port of the loopback where nothing listens), so that /healthz has decisions to show."""
    s = Server("--pool-size", "2", "--api-token", TOKEN, "--mcp-config", mcp_config,
               "--approval", "everything.*=ask", "--egress-allow", EGRESS_HOST,
               "--egress-resolve", EGRESS_HOST + ":127.0.0.1",
               definitions=pathlib.Path(__file__).resolve().parent / "apps")
    r = s.request("GET", "/openapi.json", fresh=True)
    assert r.status == 200 and r.header("Content-Type") == "application/json", r
    yield s, r.json
    s.stop()


def test_served_document_is_the_repository_one(served):
    _, doc = served
    with open(SPEC, encoding="utf-8") as f:
        assert doc == yaml.load(f, Loader=Loader)  # noqa: S506 (a SafeLoader)
    assert doc["openapi"].startswith("3.1")


def test_document_passes_redocly_lint(served):
    p = lint(served[1])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "valid" in p.stdout + p.stderr


def test_lint_refuses_a_broken_document(served):
    """The validator is real: planted mistakes fail it."""
    doc = json.loads(json.dumps(served[1]))
    del doc["paths"]["/v1/workspaces/{name}/tools/{tool}"]["parameters"][1]  # {tool} undeclared
    assert lint(doc).returncode != 0
    doc = json.loads(json.dumps(served[1]))
    doc["paths"]["/livez"]["get"]["operationId"] = "health"  # a duplicate operation id
    assert lint(doc).returncode != 0
    doc = json.loads(json.dumps(served[1]))
    doc["components"]["schemas"]["Metric"]["properties"]["value"] = {"type": "decimal"}
    assert lint(doc).returncode != 0


def test_error_codes_of_the_docs_are_in_the_document(served):
    """Every error code docs/API.md and docs/SESSIONS.md name is an enum value of the
    document (error.code, a result's data.code, a verdict's status, a handler type)."""
    enums = set()

    def walk(node):
        if isinstance(node, dict):
            enums.update(v for v in node.get("enum", []) if isinstance(v, str))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(served[1])
    # docs/API.md: every backticked upper-case word and every "code": "..." of its examples
    # (less the few that are not codes); docs/SESSIONS.md: the codes it gives with a status
    # (`404 X`, or `503` ... (`X`)) and those of its examples.
    not_codes = {"GET", "DELETE", "RESOLVE_BENEATH", "RLIMIT_NOFILE"}
    api = (ROOT / "docs" / "API.md").read_text()
    sessions = (ROOT / "docs" / "SESSIONS.md").read_text()
    words = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", api))
    words |= set(re.findall(r'"code":\s*"([A-Z][A-Z0-9_]+)"', api + sessions))
    words |= {a or b for a, b in re.findall(r"`\d{3} ([A-Z][A-Z_]+)`|\(`([A-Z]+_[A-Z_]+)`\)",
                                            sessions)}
    missing = words - not_codes - enums
    assert len(words) > 30, sorted(words)
    assert not missing, "named in docs/ but not in docs/openapi.yaml: %s" % sorted(missing)
    assert {"ARTIFACT_LIMIT", "INVALID_ARTIFACT"} <= enums  # they are, as artifactsError codes


def record(srv, method, path, body=None, headers=None, auth=True, raw=False):
    h = dict(AUTH if auth else {})
    h.update(headers or {})
    if body is not None and not raw:
        body = json.dumps(body)
        h.setdefault("Content-Type", "application/json")
    r = srv.request(method, path, body=body, headers=h, fresh=True)
    ctype = r.header("Content-Type")
    parsed = r.json if ctype and ctype.startswith("application/json") else None
    return {"method": method, "path": path, "status": r.status, "contentType": ctype,
            "body": parsed, "bodyLength": len(r.raw), "allow": r.header("Allow"),
            "raw": r.raw[:2000].decode("utf-8", "replace")}


def answers(srv):
    """A request of every documented operation, its successes and refusals."""
    out = []

    def rec(*a, **kw):
        r = record(srv, *a, **kw)
        out.append(r)
        return r

    # /execute: each result type, and the refusals
    rec("POST", "/execute", jit_request("handlers/basic.py", "add", {"a": 2, "b": 3}))
    rec("POST", "/execute", jit_request("handlers/basic.py", "http_ok"))
    rec("POST", "/execute", jit_request("handlers/basic.py", "raises"))
    rec("POST", "/execute", jit_request("handlers/nothing.py", "f"))
    rec("POST", "/execute", executor_request("print('x')\nclass C:\n    def m(self):\n"
                                             "        return 1\n", className="C",
                                             methodName="m"))
    rec("POST", "/execute", {"requestId": "r"})
    rec("POST", "/execute", "{not json", headers={"Content-Type": "application/json"}, raw=True)
    rec("POST", "/execute", "x", headers={"Content-Type": "text/plain"}, raw=True)
    rec("POST", "/execute", jit_request("handlers/basic.py", "add"), headers={"Accept": "text/html"})
    rec("POST", "/execute", jit_request("handlers/basic.py", "add", endpoint="http://192.0.2.1/"))
    rec("POST", "/execute", jit_request("handlers/basic.py", "add"), auth=False)
    rec("POST", "/execute", jit_request("handlers/basic.py", "add"),
        headers={"Authorization": "Bearer wrong"})
    rec("POST", "/execute", jit_request("handlers/basic.py", "add"), headers={"Host": "evil.example"})
    rec("GET", "/execute")
    # probes, health (with egress decisions: one allowed whose connection failed, one denied),
    # metrics, definitions
    egress = ("import urllib.request\nfor url in ('http://%s/', 'http://evil.test:9/'):\n"
              "    try:\n        urllib.request.urlopen(url, timeout=10)\n"
              "    except Exception as e:\n        print(e)\n" % EGRESS_HOST)
    rec("POST", "/execute", executor_request(egress, network={"allow": [EGRESS_HOST]}))
    health = rec("GET", "/healthz")
    recent = health["body"]["egress"]["recent"]
    assert [(d["decision"], d["host"]) for d in recent[:2]] == \
        [("denied", "evil.test"), ("allowed", "api.test")], recent
    rec("GET", "/healthz", auth=False)
    rec("GET", "/livez", auth=False)
    rec("GET", "/readyz", auth=False)
    rec("GET", "/readyz", headers={"Origin": "http://evil.example"})
    rec("GET", "/metrics")
    rec("GET", "/metrics", auth=False)
    rec("POST", "/_framework/load_code", {"appId": "testapp"})
    rec("POST", "/_framework/load_code", {"appId": "testapp", "files": ["handlers/basic.py"]})
    rec("POST", "/_framework/load_code", {"files": 1})
    rec("DELETE", "/_framework/load_code")
    # sessions
    rec("GET", "/v1/session-options")
    rec("GET", "/v1/sessions")
    sid = rec("POST", "/v1/sessions", {"workspace": "oa"})["body"]["sessionId"]
    rec("POST", "/v1/sessions", {"servers": ["nope"]})
    rec("POST", "/v1/sessions", {"profile": "nope"})
    rec("POST", "/v1/sessions", {"idleTimeoutS": "x"})
    rec("PUT", "/v1/sessions")
    rec("GET", "/v1/sessions")
    rec("GET", "/v1/sessions/" + sid)
    rec("GET", "/v1/sessions/vm.00000000000000000000000000000000")
    rec("PUT", "/v1/sessions/" + sid)
    base = "/v1/sessions/%s" % sid
    rec("POST", base + "/execute", {"code": "print('hi')\n6*7"})
    rec("POST", base + "/execute", {"code": "1/0"})
    rec("POST", base + "/execute", {"code": "import os\nos.makedirs('d', exist_ok=True)\n"
                                    "save_memory('k/1', 1)\n"
                                    "def double(x):\n    return 2 * x\nsave_tool(double)"})
    sse = rec("POST", base + "/execute", {"code": "print(1)"}, headers={"Accept": "text/event-stream"})
    assert sse["contentType"] == "text/event-stream", sse
    assert [e.get("status") for e in sse_events(sse["raw"].encode())][-1] == "ok", sse
    rec("POST", base + "/execute", {"code": "  "})
    rec("POST", base + "/execute", {"code": "1"}, headers={"Accept": "text/html"})
    rec("POST", "/v1/sessions/vm.00000000000000000000000000000000/execute", {"code": "1"})
    rec("GET", base + "/execute")
    # files
    rec("PUT", base + "/files/a/b.txt", b"hello", headers={"Content-Type": "application/octet-stream"},
        raw=True)
    rec("GET", base + "/files")
    rec("GET", base + "/files/a/b.txt")
    rec("GET", base + "/files/d")
    rec("GET", base + "/files/nothing.txt")
    rec("DELETE", base + "/files/a/b.txt")
    rec("PUT", base + "/files/..%2Fx", b"x", raw=True)
    rec("POST", base + "/files/a.txt", b"x", raw=True)
    rec("POST", base + "/files")
    # workspaces
    rec("GET", "/v1/workspaces/oa/tools")
    rec("GET", "/v1/workspaces/oa/memories")
    rec("DELETE", "/v1/workspaces/oa/memories/k%2F1")
    rec("DELETE", "/v1/workspaces/oa/tools/double")
    rec("DELETE", "/v1/workspaces/oa/tools/double")
    rec("GET", "/v1/workspaces/none/tools")
    rec("GET", "/v1/workspaces/bad%20name/tools")
    rec("POST", "/v1/workspaces/oa/tools")
    rec("DELETE", base)
    rec("DELETE", base)
    approvals(srv, rec)
    # MCP
    init = rec("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "openapi", "version": "1"}}},
        headers={"Accept": "application/json, text/event-stream"})
    mcp_session = srv.request("POST", "/mcp", body=json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "openapi", "version": "1"}}}),
        headers=dict(AUTH, **{"Content-Type": "application/json",
                              "Accept": "application/json, text/event-stream"}),
        fresh=True).header("MCP-Session-Id")
    assert init["status"] == 200 and mcp_session, init
    rec("DELETE", "/mcp", headers={"MCP-Session-Id": mcp_session})
    rec("DELETE", "/mcp")
    rec("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, auth=False)
    rec("GET", "/mcp")
    e2b(rec)
    # the console and this document
    ui = rec("GET", "/ui", auth=False)
    etag = srv.request("GET", "/ui", fresh=True).header("ETag")
    rec("GET", "/ui", headers={"If-None-Match": etag}, auth=False)
    rec("GET", "/ui/", auth=False)
    rec("GET", "/ui/app.js", auth=False)
    rec("GET", "/ui/console.css", auth=False)
    rec("GET", "/ui/nothing.js", auth=False)
    rec("GET", "/ui/app.js", headers={"Host": "evil.example"}, auth=False)
    rec("POST", "/ui", auth=False)
    rec("GET", "/openapi.json", auth=False)
    rec("GET", "/openapi.json", headers={"If-None-Match": '"0000", ' + srv.request(
        "GET", "/openapi.json", fresh=True).header("ETag")}, auth=False)
    # not routes
    rec("GET", "/nothing")
    rec("GET", "/v1/sessions/%s/nothing" % sid)
    assert ui["status"] == 200
    return out


def e2b(rec):
    """E2B's API under /e2b (docs/E2B.md): its control plane with the key, a sandbox's envd,
    Connect calls and code interpreter with the sandbox's own token, and the refusals."""
    made = rec("POST", "/e2b/v2/sandboxes", {"templateID": "base", "timeout": 60})
    assert made["status"] == 201, made
    sid, token = made["body"]["sandboxID"], made["body"]["envdAccessToken"]
    envd = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": token}
    interp = dict(envd, **{"E2b-Sandbox-Port": "49999"})
    rec("GET", "/e2b/v2/sandboxes")
    rec("GET", "/e2b/sandboxes/" + sid)
    rec("POST", "/e2b/sandboxes/%s/timeout" % sid, {"timeout": 120})
    rec("POST", "/e2b/v2/sandboxes", {"templateID": "no-such-template"})
    rec("POST", "/e2b/v2/sandboxes", {"templateID": "base"}, auth=False)
    rec("GET", "/e2b/sandboxes/vm.00000000000000000000000000000000")
    rec("PUT", "/e2b/sandboxes/%s/network" % sid, {"allowOut": []})
    rec("GET", "/e2b/health", headers=envd, auth=False)
    rec("POST", "/e2b/files?path=/home/user/a.txt", b"hello",
        headers=dict(envd, **{"Content-Type": "application/octet-stream"}), auth=False, raw=True)
    got = rec("GET", "/e2b/files?path=/home/user/a.txt", headers=envd, auth=False)
    assert got["status"] == 200 and got["raw"] == "hello", got
    rec("GET", "/e2b/files?path=/etc/passwd", headers=envd, auth=False)
    rec("POST", "/e2b/filesystem.Filesystem/Stat", {"path": "/home/user/none"},
        headers=envd, auth=False)
    ran = rec("POST", "/e2b/execute", {"code": "6*7"}, headers=interp, auth=False)
    assert ran["contentType"] == "application/x-ndjson" and '"42"' in ran["raw"], ran
    rec("GET", "/e2b/contexts", headers=interp, auth=False)
    rec("DELETE", "/e2b/contexts/00000000-0000-0000-0000-000000000000", headers=interp,
        auth=False)
    rec("GET", "/e2b/health", headers=dict(envd, **{"X-Access-Token": "0" * 64}), auth=False)
    rec("DELETE", "/e2b/sandboxes/" + sid)
    rec("DELETE", "/e2b/sandboxes/" + sid)
    rec("PATCH", "/e2b/sandboxes/" + sid)  # not a method of the route table: 405
    rec("GET", "/e2b")


def approvals(srv, rec):
    """A tool call that waits for a person, listed, refused a bad body, approved, and
    approved again (gone)."""
    sid = rec("POST", "/v1/sessions", {"servers": ["everything"]})["body"]["sessionId"]
    base = "/v1/sessions/%s/approvals" % sid
    rec("GET", base)
    rec("GET", "/v1/approvals", auth=False)
    rec("POST", "/v1/approvals", {})
    done = {}
    t = threading.Thread(target=lambda: done.update(r=srv.request(
        "POST", "/v1/sessions/%s/execute" % sid, json.dumps(
            {"code": "print(await mcp_everything.get_sum(a=1, b=2))"}),
        dict(AUTH, **{"Content-Type": "application/json"}), fresh=True)))
    t.start()
    deadline = time.time() + 60
    while time.time() < deadline:
        waiting = rec("GET", base)["body"]["approvals"]
        if waiting:
            break
        time.sleep(0.1)
    assert waiting, "no call waited for approval"
    every = rec("GET", "/v1/approvals")["body"]["approvals"]
    assert [(a["id"], a["sessionId"]) for a in every] == [(waiting[0]["id"], sid)], every
    one = base + "/" + waiting[0]["id"]
    rec("POST", one, {"approve": "yes"})
    rec("POST", one, "x", headers={"Content-Type": "text/plain"}, raw=True)
    rec("GET", one)
    rec("POST", one, {"approve": True})
    t.join(60)
    assert done["r"].status == 200 and done["r"].json["status"] == "ok", done
    rec("POST", one, {"approve": True})
    rec("GET", "/v1/sessions/vm.00000000000000000000000000000000/approvals")
    rec("DELETE", "/v1/sessions/" + sid)


def test_answers_match_the_document(served):
    srv, doc = served
    records = answers(srv)
    p = check(doc, records)
    assert p.returncode == 0, p.stdout + p.stderr
    statuses = {(r["method"], r["status"]) for r in records}
    # The requests reached what they were written for: successes and refusals alike.
    for want in [("POST", 200), ("POST", 201), ("POST", 400), ("POST", 401), ("POST", 403),
                 ("POST", 404), ("POST", 406), ("POST", 415), ("GET", 304), ("GET", 405),
                 ("PUT", 201), ("DELETE", 204), ("GET", 409), ("GET", 404)]:
        assert want in statuses, (want, sorted(statuses))


def test_conditional_get(served):
    srv, _ = served
    r = srv.request("GET", "/openapi.json", fresh=True)
    again = srv.request("GET", "/openapi.json", headers={"If-None-Match": r.header("ETag")},
                        fresh=True)
    assert again.status == 304 and again.raw == b"", again
    assert srv.request("GET", "/openapi.json", headers={"If-None-Match": '"other"'},
                       fresh=True).status == 200


def test_the_checker_finds_drift(served):
    """openapi-check.mjs fails on each way the server could drift from the document."""
    srv, doc = served
    good = record(srv, "GET", "/v1/session-options")
    assert good["status"] == 200
    cases = [
        (dict(good, status=418), "status 418 is not documented"),
        (dict(good, body={"servers": "all"}), "does not match the schema"),
        (dict(good, contentType="text/html"), "Content-Type text/html is not documented"),
        (dict(good, method="DELETE", status=200), "DELETE /v1/session-options is not documented"),
        (dict(good, path="/v1/sessions/x", status=404,
              body={"error": {"code": "NOT_FOUND", "message": "no route GET /v1/sessions/x"}}),
         "the router has no such route"),
        (dict(good, path="/v2/new", status=200), "the path is not documented"),
    ]
    for bad, why in cases:
        p = check(doc, [good, bad])
        assert p.returncode == 1 and why in p.stdout, (bad, p.stdout)
    p = check(doc, [good])  # answered once: every other operation is reported unchecked
    assert p.returncode == 1 and "POST /execute: documented, but no answer" in p.stdout
