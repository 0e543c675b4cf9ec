# SPDX-License-Identifier: MIT
"""The console (/ui) in headless Chromium, driven by puppeteer-core (tests/node/console.mjs)
through what a person does: load it (no console errors, no request leaving the machine),
log in, create a session (choosing MCP servers and a profile), run code and see its output,
result, traceback and a chart; decide tool calls waiting for approval; watch the server with
the operator's token; understand a bad token, an ended session and a restart. A screenshot
of each step is kept in tests/artifacts/console/. Also what the page is served with (CSP,
no token needed, the Host and Origin checks) and its weight (docs/CONSOLE.md)."""
import gzip
import json
import re
import threading
from unittest import mock

import pytest

import browser
import harness
from harness import Server, session_create
from origins import Origin

TOKEN = "console-operator-token-5f1e"
AUTH = {"Authorization": "Bearer " + TOKEN}
PLOT = ("import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(4, 3))\n"
        "ax.plot([1, 2, 3, 4], [3, 1, 4, 1])\n"
        "ax.set_title('from the console')\n"
        "plt.show()\n")
PAGE_BUDGET = 300 * 1024  # bytes of the page and its modules, gzip -9 (docs/CONSOLE.md)


@pytest.fixture(scope="module")
def console_server(mcp_config):
    s = Server("--pool-size", "2", "--api-token", TOKEN, "--mcp-config", mcp_config)
    yield s
    s.stop()


def base(srv):
    return "http://127.0.0.1:%d" % srv.port


def off_machine(seen, srv):
    """The requests the page made anywhere but this sandboxd (blob: and data: stay inside)."""
    return [q["url"] for q in seen["requests"]
            if not q["url"].startswith((base(srv) + "/", "blob:", "data:"))]


def test_walk_through(console_server):
    srv = console_server
    r = browser.drive("flow", {"base": base(srv), "token": TOKEN, "operator": True,
                               "profile": "datascience", "servers": ["everything"],
                               "plotCode": PLOT})
    seen = r["seen"]
    # It loads clean, asks for a token and asks the API nothing before it has one.
    assert r["loginShown"] and not r["mainShownBeforeLogin"]
    assert all(re.match(re.escape(base(srv)) + r"/ui(/|$)", u) for u in r["requestsBeforeLogin"]), \
        r["requestsBeforeLogin"]
    assert not [m for m in r["consoleAtLoad"] if m["type"] == "error"], r["consoleAtLoad"]
    assert not browser.console_errors(seen), browser.console_errors(seen)
    assert not seen["pageErrors"] and not seen["dialogs"], seen
    assert not off_machine(seen, srv), off_machine(seen, srv)
    # Logged in: health, sessions and approvals are in the page.
    assert r["health"].startswith("sandboxd 0.1.0: ok"), r["health"]
    assert r["approvalsShown"]
    # The session, with its full id, the profile and the server chosen.
    sid = r["sessionId"]
    assert re.fullmatch(r"[\w.-]+\.[0-9a-f]{32}", sid), sid
    info = srv.request("GET", "/v1/sessions/" + sid, headers=AUTH, fresh=True).json
    assert info["profile"] == "datascience" and info["servers"] == ["everything"], info
    assert sid in r["sessionsText"] and "datascience" in r["sessionsText"]
    # print("hi") and 6*7: the printed line and the value.
    assert "hi\n" in r["printRun"] and "42" in r["printRun"].split("hi", 1)[1], r["printRun"]
    assert ["t-bi", "print"] in r["highlighted"] and ["t-str", '"hi"'] in r["highlighted"]
    # An exception: its type, message and traceback.
    assert "ZeroDivisionError: division by zero" in r["errorRun"]
    assert "Traceback (most recent call last)" in r["errorRun"] and "line 2, in f" in r["errorRun"]
    # The chart: an image artifact, decoded by the browser.
    assert [a["mime"] for a in r["artifacts"]] == ["image/png"], r["artifacts"]
    width, height = r["artifacts"][0]["img"]
    assert width >= 300 and height >= 200, r["artifacts"]
    # Operate: the chart of /metrics, the pool, sessions per tenant, egress.
    for part in ("executions/s", "p95 latency", "pool", "profile datascience",
                 "Sessions per tenant", "(operator)", "Egress decisions"):
        assert part in r["operate"], (part, r["operate"])
    # The token: in this tab's sessionStorage, nowhere else.
    assert r["storage"]["session"] == {"sandboxd.token": TOKEN}
    assert r["storage"]["cookie"] == "" and r["storage"]["local"] == {}
    assert len(seen["shots"]) >= 7, seen["shots"]


def test_tenant_sees_its_own_sessions_and_no_operator_data(make_server, tmp_path):
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({"tenants": {"a": {"token": "tenant-a-token-1234"},
                                               "b": {"token": "tenant-b-token-1234"}}}))
    srv = make_server("--pool-size", "1", "--tenants", str(tenants))
    mine = session_create(srv_with(srv, "tenant-a-token-1234"))["sessionId"]
    theirs = session_create(srv_with(srv, "tenant-b-token-1234"))["sessionId"]
    r = browser.drive("overview", {"base": base(srv), "token": "tenant-a-token-1234",
                                   "expect": [mine]})
    assert mine in r["sessionsText"] and theirs not in r["sessionsText"], r["sessionsText"]
    assert r["health"].startswith("sandboxd: ok") and "operator" in r["health"], r["health"]
    assert not r["operateShown"]
    assert not browser.console_errors(r["seen"]), r["seen"]["console"]


def test_without_a_token_configured_an_empty_login_enters(make_server):
    """`make run` has no token: logging in with none gives the operator's view."""
    srv = make_server("--pool-size", "1")
    sid = session_create(srv)["sessionId"]
    r = browser.drive("overview", {"base": base(srv), "token": "", "expect": [sid]})
    assert r["health"].startswith("sandboxd 0.1.0: ok"), r["health"]
    assert r["operateShown"] and sid in r["sessionsText"]
    assert r["who"] == "no token (this sandboxd has none)", r["who"]
    assert not browser.console_errors(r["seen"]), r["seen"]["console"]


class srv_with:
    """srv, with a token on every request (for harness.session_create)."""

    def __init__(self, srv, tok):
        self.srv, self.tok = srv, tok

    def request(self, method, path, body=None, headers=None, **kw):
        return self.srv.request(method, path, body,
                                dict(headers or {}, Authorization="Bearer " + self.tok), **kw)


def test_failures_are_explained():
    """A refused token, a session that ended, and a restart: a message, never a blank page."""
    box = {"srv": Server("--pool-size", "1", "--api-token", TOKEN)}
    port = box["srv"].port

    def end_session(msg):
        r = box["srv"].request("DELETE", "/v1/sessions/" + msg["session"], headers=AUTH, fresh=True)
        assert r.status == 204, r

    def stop(msg):
        box["srv"].stop()
        box["srv"] = None

    def start(msg):
        with mock.patch.object(harness, "free_port", return_value=port):
            box["srv"] = Server("--pool-size", "1", "--api-token", TOKEN)

    try:
        r = browser.drive("failures", {"base": "http://127.0.0.1:%d" % port, "token": TOKEN},
                          {"end-session": end_session, "stop-server": stop, "start-server": start})
    finally:
        if box["srv"]:
            box["srv"].stop()
    assert "token was refused" in r["badToken"] and r["loginShownAgain"], r["badToken"]
    # Whether the run or the sessions poll saw it first, the page says so.
    dead = r["deadRun"] + " " + r["deadBanner"]
    assert "no longer exists" in dead and r["sessionId"] in dead, dead
    assert "Cannot reach sandboxd" in r["unreachable"], r["unreachable"]
    assert r["bodyWhileDown"] > 200  # the page stays, with the message
    assert "Cannot reach" not in r["afterRestart"], r["afterRestart"]
    assert "restarted" in r["afterRestart"], r["afterRestart"]
    assert not r["seen"]["pageErrors"], r["seen"]["pageErrors"]


def test_approvals_are_decided_in_the_page(mcp_config):
    """Two executions made through the API wait for a person; the page shows both without a
    reload; Approve lets one finish, Deny makes the other raise ApprovalDenied."""
    srv = Server("--pool-size", "1", "--api-token", TOKEN, "--mcp-config", mcp_config,
                 "--approval", "everything.*=ask")
    try:
        sids = [srv.request("POST", "/v1/sessions", {"servers": ["everything"]}, AUTH,
                            fresh=True).json["sessionId"] for _ in range(2)]
        results = {}

        def run(sid):
            r = srv.request("POST", "/v1/sessions/%s/execute" % sid, {
                "code": "print(await mcp_everything.get_sum(a=2, b=3))"}, AUTH, fresh=True,
                timeout=120)
            results[sid] = r.json

        threads = []

        def start(msg):
            for sid in sids:
                threads.append(threading.Thread(target=run, args=(sid,)))
                threads[-1].start()

        def finished(msg):
            for t in threads:
                t.join(60)
            return True

        r = browser.drive("approvals", {"base": base(srv), "token": TOKEN, "waiting": 2,
                                        "decide": [[sids[0], True], [sids[1], False]]},
                          {"start": start, "finished": finished})
    finally:
        srv.stop()
    assert "everything.get-sum" in r["approvalsText"] and '"a": 2' in r["approvalsText"], r
    assert r["clicked-" + sids[0]] and r["clicked-" + sids[1]]
    ok, denied = results[sids[0]], results[sids[1]]
    assert ok["status"] == "ok" and "5" in ok["stdout"], ok
    assert denied["status"] == "error" and denied["error"]["type"] == "ApprovalDenied", denied
    assert "No tool call is waiting" in r["approvalsAfter"]


def test_operate_shows_the_recent_egress_decisions():
    """A session's requests through the egress proxy, one allowed and one denied, made while
    the page is open: the Operate part's table shows both (time, who, decision, host:port,
    reason) after the health poll, without a reload, newest first."""
    web = Origin("web")
    allowed = "api.test:%d" % web.port
    srv = Server("--pool-size", "1", "--api-token", TOKEN, "--egress-allow", allowed,
                 "--egress-resolve", allowed + ":127.0.0.1")
    try:
        sid = srv.request("POST", "/v1/sessions", {"network": {"allow": [allowed]}}, AUTH,
                          fresh=True).json["sessionId"]
        code = ("import urllib.error, urllib.request\n"
                "print(urllib.request.urlopen('http://%s/from-console', timeout=10).status)\n"
                "try:\n    urllib.request.urlopen('http://evil.test:%d/', timeout=10)\n"
                "except urllib.error.HTTPError as e:\n    print(e.code)\n" % (allowed, web.port))

        def requests(msg):
            r = srv.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code}, AUTH,
                            fresh=True)
            assert r.status == 200 and r.json["stdout"] == "200\n403\n", r.json
            return True

        r = browser.drive("egress", {"base": base(srv), "token": TOKEN,
                                     "expect": [allowed, "evil.test:%d" % web.port]},
                          {"requests": requests})
    finally:
        srv.stop()
        web.close()
    assert "no egress decision yet" in r["before"], r["before"]
    assert r["headers"] == ["time", "who", "decision", "host:port", "reason"], r["headers"]
    rows = [x["cells"] for x in r["rows"]]
    assert len(rows) == 2, rows
    denied, ok = rows  # newest first
    assert denied[1:4] == ["session " + sid, "denied", "evil.test:%d" % web.port], denied
    assert "is not in this execution's network allow list" in denied[4], denied
    assert ok[1:4] == ["session " + sid, "allowed", allowed] and ok[4] == "", ok
    assert re.fullmatch(r"\d{1,2}:\d{2}:\d{2}(\s?[AP]M)?", ok[0]), ok
    assert [x["cls"] for x in r["rows"]] == ["egress-denied", "egress-allowed"]
    assert [q["path"] for q in web.seen] == ["/from-console"]  # the denied one never left
    # With --egress-allow the pools of network cells show: the server's, and each profile's
    # (started on its first use, so not yet here).
    pools = dict(r["pool"])
    assert re.fullmatch(r"\d+ ready of \d+", pools.get("network pool", "")), r["pool"]
    assert any(k.startswith("profile ") for k in pools), r["pool"]
    assert all(v.endswith("with a network: not started") for k, v in pools.items()
               if k.startswith("profile ")), r["pool"]
    assert not browser.console_errors(r["seen"]), r["seen"]["console"]
    assert not r["seen"]["pageErrors"], r["seen"]["pageErrors"]


def test_console_is_served_without_a_token_under_the_policy(console_server):
    srv = console_server
    r = srv.request("GET", "/ui", fresh=True)
    assert r.status == 200 and r.header("Content-Type") == "text/html; charset=utf-8"
    csp = r.header("Content-Security-Policy")
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, csp
    assert r.header("X-Frame-Options") == "DENY"
    assert r.header("X-Content-Type-Options") == "nosniff"
    for testid in ("token-input", "token-save", "new-session", "code-input", "run", "output",
                   "sessions", "approvals", "health"):
        assert ('data-testid="%s"' % testid).encode() in r.raw, testid
    # The data is the API's: it needs the token.
    assert srv.request("GET", "/v1/sessions", fresh=True).status == 401
    # Host and Origin are checked as for every route.
    assert srv.request("GET", "/ui", headers={"Host": "evil.example"}, fresh=True).status == 403
    assert srv.request("GET", "/ui/app.js", headers={"Origin": "http://evil.example"},
                       fresh=True).status == 403
    assert srv.request("GET", "/ui/nothing.js", fresh=True).status == 404
    assert srv.request("POST", "/ui", fresh=True).status == 405
    # The open paths lead nowhere else: dot segments are not resolved, and the route table
    # sends what starts with /ui to the console's files only.
    for path in ("/ui/../v1/sessions", "/ui/..%2Fv1%2Fsessions", "/ui%2F..%2Fmetrics",
                 "/ui/%2e%2e/metrics", "/openapi.json/../v1/sessions", "/ui/./app.js"):
        r = srv.request("GET", path, fresh=True)
        assert r.status in (401, 404) and b"sessions\":" not in r.raw, (path, r)


def page_files(srv):
    """The page and every file it loads: its links and scripts, then each module's imports."""
    todo, files = ["/ui"], {}
    while todo:
        path = todo.pop()
        if path in files:
            continue
        r = srv.request("GET", path, fresh=True)
        assert r.status == 200, (path, r)
        files[path] = r.raw
        text = r.raw.decode()
        todo += re.findall(r'(?:href|src)="(/ui/[^"]+)"', text)
        todo += ["/ui/" + m for m in re.findall(r'from "\./([\w.-]+)"', text)]
    return files


def test_page_weight_is_within_budget(console_server):
    files = page_files(console_server)
    assert {"/ui", "/ui/app.js", "/ui/console.css", "/ui/highlight.js"} <= set(files)
    raw = sum(len(b) for b in files.values())
    packed = sum(len(gzip.compress(b, 9)) for b in files.values())
    print("console page weight: %d files, %d bytes, %d gzip -9" % (len(files), raw, packed))
    assert packed <= PAGE_BUDGET, (packed, PAGE_BUDGET)


def test_readme_try_it_points_at_the_console():
    readme = (harness.ROOT / "README.md").read_text()
    try_it = readme.split("## Try it", 1)[1].split("\n## ", 1)[0]
    assert "http://127.0.0.1:8080/ui" in try_it and "docs/CONSOLE.md" in try_it
    assert (harness.ROOT / "docs" / "CONSOLE.md").exists()
    assert "300 KB" in (harness.ROOT / "docs" / "CONSOLE.md").read_text()
