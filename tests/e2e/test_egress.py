# SPDX-License-Identifier: MIT
"""Network egress by policy (docs/NETWORK.md), driven like a client would: a real `sandboxd
serve` with --egress-allow, executions and sessions that ask for allow lists, and HTTP and TLS
origins on the host's loopback standing in for the internet through --egress-resolve pins.
The attacks on the policy are in tests/attacks/test_egress_attacks.py."""
import base64
import hashlib
import io
import json
import pathlib
import sys
import zipfile

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import McpHttp, McpStdio, Server, executor_request  # noqa: E402
from origins import fixtures  # noqa: E402

SECRET = "s3cret-api-key-never-in-the-sandbox"


certs, web, tls = fixtures()


def egress_args(web, tls, certs):
    return ["--egress-allow", "api.test:%d" % web.port, "--egress-allow", "tls.test:%d" % tls.port,
            "--egress-allow", "*.wild.test:%d" % web.port,
            "--egress-resolve", "api.test:%d:127.0.0.1" % web.port,
            "--egress-resolve", "tls.test:%d:127.0.0.1" % tls.port,
            "--egress-resolve", "a.wild.test:%d:127.0.0.1" % web.port,
            "--egress-header", "api.test:%d=X-Api-Key: %s" % (web.port, SECRET),
            "--egress-ca-file", certs.ca]


@pytest.fixture(scope="module")
def srv(web, tls, certs):
    s = Server("--pool-size", "2", *egress_args(web, tls, certs))
    yield s
    s.stop()


def allow(*patterns):
    return {"allow": list(patterns)}


def run(srv, code, network=None, **task):
    if network is not None:
        task["network"] = network
    r = srv.execute(executor_request(code, timeoutMs=20000, **task))
    assert r.status == 200, r
    return r.json


def result(resp):
    assert resp["resultType"] == "generic", resp
    return resp["data"]["result"]


def metric(resp, name, direction=None):
    for m in resp["metrics"]:
        if m["name"] == name and (direction is None or m["attributes"]["direction"] == direction):
            return m["value"]
    raise AssertionError("no metric %s in %r" % (name, resp["metrics"]))


def test_urllib_reaches_an_allowed_host_and_it_is_counted(srv, web):
    before = len(web.seen)
    code = f"""
import json, os, urllib.request
r = urllib.request.urlopen("http://api.test:{web.port}/hello?x=1", timeout=10)
body = json.loads(r.read())
{{"status": r.status, "body": body, "proxy": os.environ["HTTP_PROXY"]}}
"""
    resp = run(srv, code, allow("api.test:%d" % web.port))
    out = result(resp)
    assert out["status"] == 200
    assert out["body"]["origin"] == "web" and out["body"]["path"] == "/hello?x=1"
    assert out["body"]["headers"]["Host"] == "api.test:%d" % web.port
    assert out["proxy"] == "http://127.0.0.1:3128"
    assert len(web.seen) == before + 1
    assert metric(resp, "net.egress_requests") == 1
    assert metric(resp, "net.egress_denied") == 0
    assert metric(resp, "net.egress_bytes", "up") > 50
    assert metric(resp, "net.egress_bytes", "down") > len(json.dumps(out["body"]))


def test_a_network_execution_returns_its_artifacts_and_its_counts(srv, web):
    """The result passes through as text, and the response still carries the artifacts (data
    work) and the egress counts side by side."""
    code = f"""
import json, urllib.request
class Table:
    def _repr_html_(self):
        return "<b>fetched</b>"
display(Table())
json.loads(urllib.request.urlopen("http://api.test:{web.port}/art", timeout=10).read())["path"]
"""
    resp = run(srv, code, allow("api.test:%d" % web.port))
    assert result(resp) == "/art"
    assert [(a["name"], a["mimeType"]) for a in resp["artifacts"]] == [("display-1.html",
                                                                          "text/html")]
    assert metric(resp, "net.egress_requests") == 1


def test_https_goes_through_connect_and_trusts_the_operator_ca(srv, tls):
    code = f"""
import json, os, urllib.request
r = urllib.request.urlopen("https://tls.test:{tls.port}/secure", timeout=10)
[r.status, json.loads(r.read())["origin"], os.environ["SSL_CERT_FILE"]]
"""
    resp = run(srv, code, allow("tls.test:%d" % tls.port))
    assert result(resp) == [200, "tls", "/etc/ssl/certs/ca-certificates.crt"]
    assert metric(resp, "net.egress_requests") == 1
    assert metric(resp, "net.egress_bytes", "down") > 1000  # the certificate chain came through


def test_requests_as_pip_vendors_it_honours_the_proxy_and_the_bundle(srv, tls, web):
    # pip's own requests/urllib3: what `pip install` uses, proxy and CA from the environment
    code = f"""
from pip._vendor import requests
a = requests.get("https://tls.test:{tls.port}/via-requests", timeout=10)
b = requests.post("http://api.test:{web.port}/post", data=b"payload", timeout=10)
[a.status_code, a.json()["path"], b.json()["body"], b.json()["method"]]
"""
    resp = run(srv, code, allow("tls.test:%d" % tls.port, "api.test:%d" % web.port))
    assert result(resp) == [200, "/via-requests", "payload", "POST"]
    assert metric(resp, "net.egress_requests") == 2


def test_large_bodies_and_parallel_tunnels_keep_every_byte(srv, web, tls):
    # back-pressure both ways: bodies far larger than the proxy's buffers, several at once
    code = f"""
import concurrent.futures, hashlib, json, os, urllib.request
up = os.urandom(3 << 20)
req = urllib.request.Request("http://api.test:{web.port}/sha256", data=up, method="POST")
posted = json.loads(urllib.request.urlopen(req, timeout=30).read())
want = (bytes(range(256)) * (5 << 12))[:5 << 20]
def get(i):
    return urllib.request.urlopen("https://tls.test:{tls.port}/pattern?n=%d" % (5 << 20),
                                  timeout=30).read() == want
with concurrent.futures.ThreadPoolExecutor(6) as pool:
    same = list(pool.map(get, range(6)))
[posted["sha256"] == hashlib.sha256(up).hexdigest(), posted["length"], same]
"""
    resp = run(srv, code, allow("api.test:%d" % web.port, "tls.test:%d" % tls.port),
               memoryMb=512)
    assert result(resp) == [True, 3 << 20, [True] * 6]
    assert metric(resp, "net.egress_requests") == 7
    assert metric(resp, "net.egress_bytes", "up") > 3 << 20
    assert metric(resp, "net.egress_bytes", "down") > 6 * (5 << 20)


def wheel(name, version, source):
    """A pure-Python wheel, made in memory."""
    buf = io.BytesIO()
    info = "%s-%s.dist-info" % (name, version)
    files = {"%s/__init__.py" % name: source,
             info + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version),
             info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = ""
    with zipfile.ZipFile(buf, "w") as z:
        for path, text in files.items():
            data = text.encode()
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record += "%s,sha256=%s,%d\n" % (path, digest.decode(), len(data))
        z.writestr(info + "/RECORD", record + info + "/RECORD,,\n")
    return buf.getvalue()


def test_pip_installs_from_an_allowed_index_over_https(srv, tls):
    whl = wheel("tinypkg", "1.0", "VALUE = 42\n")
    name = "tinypkg-1.0-py3-none-any.whl"
    tls.files["/simple/tinypkg/"] = ("text/html", (
        '<html><body><a href="/files/%s#sha256=%s">%s</a></body></html>'
        % (name, hashlib.sha256(whl).hexdigest(), name)).encode())
    tls.files["/files/" + name] = ("application/octet-stream", whl)
    code = f"""
import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-cache-dir",
                    "--disable-pip-version-check", "--break-system-packages", "--target",
                    "/tmp/site", "--index-url", "https://tls.test:{tls.port}/simple/", "tinypkg"],
                   capture_output=True, text=True)
sys.path.insert(0, "/tmp/site")
import tinypkg
[p.returncode, tinypkg.VALUE, p.stderr[-2000:]]
"""
    seen = len(tls.seen)
    resp = run(srv, code, allow("tls.test:%d" % tls.port), memoryMb=512)
    out = result(resp)
    assert out[:2] == [0, 42], out
    paths = [x["path"] for x in tls.seen[seen:]]
    assert "/simple/tinypkg/" in paths and "/files/" + name in paths, paths
    assert all("pip/" in x["headers"].get("User-Agent", "") for x in tls.seen[seen:])


def test_wildcards_match_names_below_the_domain(srv, web):
    code = f"""
import json, urllib.request
json.loads(urllib.request.urlopen("http://a.wild.test:{web.port}/w", timeout=10).read())["path"]
"""
    assert result(run(srv, code, allow("*.wild.test:%d" % web.port))) == "/w"


def test_the_operator_header_reaches_the_host_but_never_the_sandbox(srv, web):
    code = f"""
import json, os, urllib.request
req = urllib.request.Request("http://api.test:{web.port}/h", headers={{"X-Api-Key": "forged"}})
seen = json.loads(urllib.request.urlopen(req, timeout=10).read())["headers"]
env = "\\n".join("%s=%s" % kv for kv in os.environ.items())
in_files = False
# file by file, as bytes: /etc also holds links to the BLAS/LAPACK libraries (tens of MB)
for root, dirs, names in os.walk("/etc"):
    for n in names:
        try:
            with open(os.path.join(root, n), "rb") as f:
                in_files = in_files or b"{SECRET}" in f.read()
        except OSError:
            pass
[seen.get("X-Api-Key"), "{SECRET}" in env or in_files]
"""
    assert result(run(srv, code, allow("api.test:%d" % web.port))) == [SECRET, False]
    assert web.seen[-1]["headers"]["X-Api-Key"] == SECRET


def test_without_a_policy_there_is_no_network_even_on_an_egress_server(srv, web):
    code = """
import os, socket
out = {"env": os.environ.get("HTTP_PROXY")}
for name, addr in [("proxy", ("127.0.0.1", 3128)), ("origin", ("127.0.0.1", %d))]:
    try:
        socket.create_connection(addr, timeout=2)
        out[name] = "connected"
    except OSError as e:
        out[name] = e.errno
out
""" % web.port
    before = web.accepted
    # EPERM: without a policy not even a TCP socket can be made
    assert result(run(srv, code)) == {"env": None, "proxy": 1, "origin": 1}
    assert web.accepted == before


def test_a_policy_outside_the_ceiling_is_400(srv, web):
    cases = [
        (allow("api.test"), "a pattern without a port means ports 80 and 443"),
        (allow("api.test:%d" % (web.port + 1)), "is not within"),
        (allow("evil.test:%d" % web.port), "'evil.test:%d' is not within" % web.port),
        (allow("127.0.0.1:%d" % web.port), "allow[0]"),
        (allow(), "1 to 64 patterns"),
        ({"allow": "api.test"}, "must be an array"),
        ({"alow": ["api.test"]}, "unknown member 'alow'"),
        ("api.test", "must be an object"),
    ]
    for network, needle in cases:
        r = srv.execute(executor_request("1", network=network))
        assert r.status == 400, (network, r)
        err = r.json["error"]
        if isinstance(network, dict):
            assert err["code"] == "NETWORK_NOT_ALLOWED", r
            assert err["field"] == "context.taskDetails.network"
        assert needle in err["message"], (needle, err)
    llm = {"requestId": "r", "requestData": {"source": "t"},
           "context": {"appId": "demo", "handlerType": "LLM", "mcp_endpoint": "local",
                       "taskDetails": {"promptTemplate": "p.yaml",
                                       "network": allow("api.test:%d" % web.port)}}}
    r = srv.execute(llm)
    assert r.status == 400 and "only JIT and EXECUTOR" in r.json["error"]["message"], r


def test_a_server_without_egress_refuses_every_policy(make_server):
    s = make_server("--pool-size", "1")
    r = s.execute(executor_request("1", network=allow("example.com")))
    assert r.status == 400, r
    assert r.json["error"]["code"] == "NETWORK_NOT_ALLOWED"
    assert "no --egress-allow" in r.json["error"]["message"]
    assert s.health()["egress"] == {"allow": [], "recent": []}
    r = s.request("POST", "/v1/sessions", body={"network": allow("example.com")})
    assert r.status == 400 and r.json["error"]["code"] == "NETWORK_NOT_ALLOWED", r


def test_healthz_and_metrics_show_the_egress(srv, web):
    h = srv.health()["egress"]
    assert "api.test:%d" % web.port in h["allow"]
    assert {"host": "api.test", "port": web.port, "address": "127.0.0.1"} in h["resolve"]
    assert h["headersFor"] == ["api.test:%d" % web.port] and SECRET not in json.dumps(h)
    assert h["maxConnections"] == 64 and h["maxBytes"] == 256 << 20
    code = f"""
import urllib.request
for url in ["http://api.test:{web.port}/m", "http://nope.test:{web.port}/"]:
    try:
        urllib.request.urlopen(url, timeout=10).read()
    except OSError:
        pass
"""
    before = srv.request("GET", "/metrics", fresh=True).raw.decode()
    run(srv, code, allow("api.test:%d" % web.port))
    after = srv.request("GET", "/metrics", fresh=True).raw.decode()

    def value(text, series):
        for line in text.splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
        raise AssertionError("no %s in /metrics" % series)

    assert value(after, "sandboxd_egress_requests_total") == value(
        before, "sandboxd_egress_requests_total") + 1
    assert value(after, 'sandboxd_egress_denied_total{reason="policy"}') == value(
        before, 'sandboxd_egress_denied_total{reason="policy"}') + 1
    assert value(after, 'sandboxd_egress_bytes_total{direction="down"}') > value(
        before, 'sandboxd_egress_bytes_total{direction="down"}')


def test_every_decision_is_logged(srv, web):
    code = f"""
import urllib.request
urllib.request.urlopen("http://api.test:{web.port}/logged", timeout=10).read()
try:
    urllib.request.urlopen("http://logged-denied.test:{web.port}/", timeout=10)
except OSError:
    pass
"""
    run(srv, code, allow("api.test:%d" % web.port), request_id="r-logged")
    lines = [json.loads(line) for line in srv.logs().splitlines()
             if line.startswith("{") and '"msg":"egress"' in line]
    mine = [x for x in lines if x.get("execution") == "r-logged"]
    allowed = [x for x in mine if x["decision"] == "allowed" and x["host"] == "api.test"]
    denied = [x for x in mine if x["decision"] == "denied" and x["host"] == "logged-denied.test"]
    assert allowed and allowed[-1]["bytesDown"] > 0 and allowed[-1]["address"] == "127.0.0.1"
    assert denied and "not in this execution's network allow list" in denied[-1]["reason"]


def test_healthz_keeps_the_last_64_decisions_newest_first(srv, web):
    """The operator's /healthz lists the proxy's last 64 decisions (docs/NETWORK.md "The last
    decisions"): 64 of one execution, then 6 of another push the oldest 6 out."""
    code = f"""
import urllib.error, urllib.request
urllib.request.urlopen("http://api.test:{web.port}/recent", timeout=10).read()
for i in range(N):
    try:
        urllib.request.urlopen("http://recent-denied.test:{web.port}/%d" % i, timeout=10)
    except urllib.error.HTTPError as e:
        assert e.code == 403, e
"""
    run(srv, "N = 63\n" + code, allow("api.test:%d" % web.port), request_id="r-recent-1")
    recent = srv.health()["egress"]["recent"]
    assert len(recent) == 64 and recent[-1]["decision"] == "allowed", recent[-1]
    run(srv, "N = 5\n" + code, allow("api.test:%d" % web.port), request_id="r-recent-2")
    recent = srv.health()["egress"]["recent"]
    assert len(recent) == 64, len(recent)
    assert [x["execution"] for x in recent] == ["r-recent-2"] * 6 + ["r-recent-1"] * 58
    assert [x["decision"] for x in recent] == ["denied"] * 5 + ["allowed"] + ["denied"] * 58
    assert min(x["time"] for x in recent[:6]) >= max(x["time"] for x in recent[6:])
    ok, no = recent[5], recent[0]
    assert (ok["method"], ok["host"], ok["port"], ok["tenant"], ok["reason"]) == \
        ("GET", "api.test", web.port, None, None), ok
    assert ok["bytesUp"] > 50 and ok["bytesDown"] > 0 and ok["durationMs"] >= 0, ok
    assert (no["host"], no["port"], no["bytesUp"], no["bytesDown"]) == \
        ("recent-denied.test", web.port, 0, 0), no
    assert no["reason"] == "recent-denied.test:%d is not in this execution's network allow " \
        "list" % web.port, no
    assert set(no) == {"time", "execution", "tenant", "decision", "method", "host", "port",
                       "reason", "bytesUp", "bytesDown", "durationMs"}, no


def test_caps_on_bytes_and_connections(make_server, web, tls, certs):
    s = make_server("--pool-size", "1", "--egress-max-mb", "1", "--egress-max-connections", "3",
                    *egress_args(web, tls, certs))
    code = f"""
import urllib.request
out = []
try:
    out.append(len(urllib.request.urlopen("http://api.test:{web.port}/bytes?n=3000000", timeout=10).read()))
except Exception as e:
    out.append(type(e).__name__)
try:
    urllib.request.urlopen("http://api.test:{web.port}/after", timeout=10)
    out.append("allowed")
except urllib.error.HTTPError as e:
    out.append([e.code, e.reason])
out
"""
    resp = run(s, code, allow("api.test:%d" % web.port))
    out = result(resp)
    assert out[0] != 3000000, out  # cut at the byte cap
    assert out[1][0] == 403 and "byte cap (1048576 bytes)" in out[1][1], out
    assert metric(resp, "net.egress_denied") == 2
    assert metric(resp, "net.egress_bytes", "down") < 1048576 + 64 * 1024
    code = f"""
import urllib.request
out = []
for i in range(5):
    try:
        out.append(urllib.request.urlopen("http://api.test:{web.port}/c%d" % i, timeout=10).status)
    except urllib.error.HTTPError as e:
        out.append([e.code, e.reason])
out
"""
    resp = run(s, code, allow("api.test:%d" % web.port))
    out = result(resp)
    assert out[:3] == [200, 200, 200], out
    assert out[3][0] == 403 and "cap of 3 connections" in out[3][1], out
    assert metric(resp, "net.egress_requests") == 3 and metric(resp, "net.egress_denied") == 2
    # the caps are per execution: the next one starts afresh
    resp = run(s, code, allow("api.test:%d" % web.port))
    assert result(resp)[:3] == [200, 200, 200]


# ---- sessions and MCP ----------------------------------------------------------------------------

def test_sessions_honour_their_policy(srv, web):
    r = srv.request("POST", "/v1/sessions", body={"network": allow("api.test:%d" % web.port)})
    assert r.status == 201, r
    sid = r.json["sessionId"]
    info = srv.request("GET", "/v1/sessions/" + sid).json
    assert info["network"] == {"allow": ["api.test:%d" % web.port]}
    code = f"""
import json, urllib.request
first = json.loads(urllib.request.urlopen("http://api.test:{web.port}/s1", timeout=10).read())["path"]
try:
    urllib.request.urlopen("http://evil.test:{web.port}/", timeout=10)
    second = "allowed"
except urllib.error.HTTPError as e:
    second = e.code
print(first, second)
"""
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code})
    assert r.status == 200, r
    out = r.json
    assert out["status"] == "ok", out
    assert out["stdout"].strip() == "/s1 403"
    assert metric(out, "net.egress_requests") == 1 and metric(out, "net.egress_denied") == 1
    assert out["artifacts"] == [], out  # a session result always carries them (data work)
    # variables persist, and so does the network; counts are per execution
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid,
                    body={"code": "import urllib.request\nurllib.request.urlopen("
                                  "'http://api.test:%d/s2', timeout=10).status" % web.port})
    assert r.json["result"] == "200" and metric(r.json, "net.egress_requests") == 1, r.json
    assert srv.request("DELETE", "/v1/sessions/" + sid).status == 204
    r = srv.request("POST", "/v1/sessions", body={"network": allow("evil.test:80")})
    assert r.status == 400 and r.json["error"]["code"] == "NETWORK_NOT_ALLOWED", r
    assert r.json["error"]["field"] == "network"
    # a session without a policy has none
    r = srv.request("POST", "/v1/sessions", body={})
    sid = r.json["sessionId"]
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid,
                    body={"code": "import os\nos.environ.get('HTTPS_PROXY')"})
    assert r.json["result"] is None and "metrics" not in r.json, r.json
    srv.request("DELETE", "/v1/sessions/" + sid)


def test_mcp_run_python_asks_for_a_network(srv, web):
    c = McpHttp(srv)
    tools = c.request("tools/list")["result"]["tools"]
    schema = [t for t in tools if t["name"] == "run_python"][0]["inputSchema"]
    assert "api.test:%d" % web.port in schema["properties"]["network"]["description"]
    code = f"""
import urllib.request
try:
    print(urllib.request.urlopen("http://api.test:{web.port}/mcp", timeout=10).status)
except Exception as e:
    print(type(e).__name__, e)
"""
    out = c.call("run_python", {"code": code, "network": allow("api.test:%d" % web.port),
                                "output": "json"})
    assert json.loads(out["content"][0]["text"])["stdout"].strip() == "200", out
    assert web.seen[-1]["path"] == "/mcp"
    # the default session (no network) is another session: no proxy there
    out = c.call("run_python", {"code": code, "output": "json"})
    assert "URLError" in json.loads(out["content"][0]["text"])["stdout"], out
    # a named session keeps the list it was made with
    c.call("run_python", {"code": "1", "session_id": "n1", "network": allow("api.test:%d" % web.port)})
    out = c.call("run_python", {"code": "1", "session_id": "n1"})
    assert out["isError"] and "network allow list" in out["content"][0]["text"], out
    out = c.call("run_python", {"code": "1", "network": allow("evil.test:1")})
    assert out["isError"] and "NETWORK_NOT_ALLOWED" not in out["content"][0]["text"] and \
        "not within" in out["content"][0]["text"], out
    out = c.call("run_python", {"code": "1", "network": {"allow": []}})
    assert out["isError"] and "network" in out["content"][0]["text"], out
    c.delete()


def test_mcp_stdio_server_has_the_same_egress(web, tls, certs):
    m = McpStdio(*egress_args(web, tls, certs))
    try:
        code = f"""
import json, urllib.request
print(json.loads(urllib.request.urlopen("https://tls.test:{tls.port}/stdio", timeout=10).read())["path"])
"""
        out = m.call("run_python", {"code": code, "network": allow("tls.test:%d" % tls.port),
                                    "output": "json"})
        assert json.loads(out["content"][0]["text"])["stdout"].strip() == "/stdio", out
    finally:
        m.close()
