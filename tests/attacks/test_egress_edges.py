# SPDX-License-Identifier: MIT
"""Attacks on the edges of the egress proxy (docs/NETWORK.md), issue 24 items 3 to 6: methods
that make an origin echo the operator's secret, Proxy-* fields, a secret sent to another port
of its host, a byte count that measures the secret, audit lines that bytes which are no UTF-8
used to erase, an IP pattern that opened every port of its address, and one execution or
tenant taking every connection of the proxy or every resolver thread. Origins run on the
host's loopback, reached through --egress-resolve pins; the `base` server takes only options
the proxy had before these fixes (so the same attacks can be run against an older build), the
`shares` server the options and tenants-file fields that state the shares."""
import ast
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import BIN, Server, executor_request, wait_until, write_tenants  # noqa: E402
from origins import fixtures  # noqa: E402

SECRET = "s3cret-operator-key-0123456789"
ALPHA = "alpha-token-0123456789abcdef"
BETA = "beta-token-0123456789abcdef"
OPERATOR = "operator-token-0123456789abcdef"  # sees /healthz's details

certs, web, tls = fixtures()


@pytest.fixture(scope="module")
def tenants_file():
    path = write_tenants({"tenants": {"alpha": {"token": ALPHA}, "beta": {"token": BETA}}})
    yield path
    os.unlink(path)


@pytest.fixture(scope="module")
def srv(web, tls, tenants_file):
    """Options of the proxy as it was: the header for api.test written without a port, every
    other port of 127.0.0.1 but tls.port unnamed, a connection cap high enough for one
    execution to reach the whole pool."""
    p = web.port
    s = Server("--pool-size", "1", "--tenants", tenants_file, "--api-token", OPERATOR,
               "--egress-allow", "api.test:%d" % p, "--egress-allow", "other.test:%d" % p,
               "--egress-allow", "localhost:%d" % p, "--egress-allow", "127.0.0.1:%d" % tls.port,
               "--egress-resolve", "api.test:%d:127.0.0.1" % p,
               "--egress-resolve", "other.test:%d:127.0.0.1" % p,
               "--egress-header", "api.test=X-Api-Key: " + SECRET,
               "--egress-max-connections", "4096")
    yield s
    s.stop()


def auth(token):
    return {"Authorization": "Bearer " + token}


def run(srv, code, allow, token=ALPHA, request_id="r-edge", timeout_ms=30000):
    r = srv.execute(executor_request(code, request_id=request_id, timeoutMs=timeout_ms,
                                     network={"allow": list(allow)}),
                    headers=auth(token), fresh=True)
    assert r.status == 200, r
    resp = r.json
    assert resp["resultType"] == "generic", resp
    counts = {}
    for m in resp["metrics"]:
        if m["name"] == "net.egress_bytes":
            counts["up" if m["attributes"]["direction"] == "up" else "down"] = m["value"]
        elif m["name"].startswith("net."):
            counts[m["name"]] = m["value"]
    return resp["data"]["result"], counts


RAW = """
import socket
def ask(data, port=3128):
    # one request on a connection of its own (the proxy's, in a sandbox); the whole answer
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out.decode(errors="replace")
        out += chunk
"""


def egress_lines(srv):
    return [json.loads(line) for line in srv.logs().splitlines()
            if line.startswith("{") and '"msg":"egress"' in line]


# ---- item 3: methods, Proxy-* fields, where the secret goes, what the counts say -------------

def test_trace_and_other_methods_are_refused_before_the_origin(srv, web):
    """An origin that reflects TRACE would hand the sandbox the operator's header."""
    p = web.port
    targets = [b"TRACE http://api.test:%d/t HTTP/1.1\r\n\r\n" % p,
               b"TRACK http://api.test:%d/t HTTP/1.1\r\n\r\n" % p,
               b"PROPFIND http://api.test:%d/t HTTP/1.1\r\n\r\n" % p,
               b"CONNECT http://api.test:%d/t HTTP/1.1\r\n\r\n" % p]
    before = web.accepted
    out, counts = run(srv, RAW + "[ask(x) for x in %r]" % targets, ["api.test:%d" % p])
    for req, answer in zip(targets, out):
        assert SECRET not in answer, (req, answer)
        assert answer.startswith("HTTP/1.1 405 Method Not Allowed (sandboxd egress:"), (req, answer)
        assert "\r\nAllow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT\r\n" in answer
    assert web.accepted == before, "a refused method reached the origin"
    assert counts["net.egress_denied"] == len(targets)
    # the methods on the list still go through
    code = RAW + ("[ask(m + b' http://other.test:%d/m HTTP/1.1\\r\\n\\r\\n').split(' ')[1] "
                  "for m in (b'OPTIONS', b'DELETE', b'PATCH')]" % p)
    out, _ = run(srv, code, ["other.test:%d" % p])
    assert out == ["200", "200", "200"], out


def test_every_proxy_field_is_dropped(srv, web):
    p = web.port
    code = RAW + ("ask(b'GET http://other.test:%d/pf HTTP/1.1\\r\\nProxy-Foo: 1\\r\\n"
                  "Proxy-Authorization: Basic eA==\\r\\nPROXY-Status: x\\r\\nX-Kept: 1\\r\\n\\r\\n')"
                  % p)
    seen = len(web.seen)
    out, _ = run(srv, code, ["other.test:%d" % p])
    assert out.startswith("HTTP/1.1 200"), out
    got = web.seen[seen:]
    assert len(got) == 1 and got[0]["path"] == "/pf"
    headers = {k.lower() for k in got[0]["headers"]}
    assert "x-kept" in headers
    assert not [h for h in headers if h.startswith("proxy-")], got[0]["headers"]


def test_the_secret_goes_to_the_port_it_was_given_for_only(srv, web):
    """`--egress-header api.test=...` means api.test on port 80: another service of the same
    host (here: web.port) must not receive it, nor a host that only shares its address."""
    p = web.port
    code = RAW + "[ask(b'GET http://api.test:%d/k HTTP/1.1\\r\\n\\r\\n')]" % p
    seen = len(web.seen)
    out, counts = run(srv, code, ["api.test:%d" % p])
    assert out[0].startswith("HTTP/1.1 200"), out
    got = web.seen[seen:]
    assert len(got) == 1
    assert "X-Api-Key" not in got[0]["headers"] and SECRET not in json.dumps(got[0]), got


def test_the_byte_count_does_not_measure_the_secret(srv, web):
    """bytesUp is what the sandbox sees: the same request to a host with an injected header and
    to one without must count the same (but for the host names' lengths)."""
    p = web.port
    req = "GET http://%s:%d/same HTTP/1.1\r\nAccept: */*\r\n\r\n"
    ups = {}
    for host in ("api.test", "other.test"):
        _, counts = run(srv, RAW + "ask(%r)" % (req % (host, p)).encode(), ["%s:%d" % (host, p)])
        ups[host] = counts["up"]
    assert ups["api.test"] - len("api.test") == ups["other.test"] - len("other.test"), ups


@pytest.fixture(scope="module")
def ported(web):
    """The header given for a host and port, the syntax the fix added."""
    p = web.port
    s = Server("--pool-size", "1",
               "--egress-allow", "api.test:%d" % p, "--egress-allow", "api.test:%d" % (p + 1),
               "--egress-resolve", "api.test:%d:127.0.0.1" % p,
               "--egress-resolve", "api.test:%d:127.0.0.1" % (p + 1),
               "--egress-header", "api.test:%d=X-Api-Key: %s" % (p, SECRET))
    yield s
    s.stop()


def test_a_header_given_with_a_port_is_counted_out_and_reflected_by_no_trace(ported, web):
    p = web.port
    # /bytes answers bytes, not the request (the default path echoes it: what an allowed host
    # does with what it is sent is its business)
    req = "GET http://api.test:%d/bytes?n=1 HTTP/1.1\r\nAccept: */*\r\n\r\n" % p
    seen = len(web.seen)
    r = ported.execute(executor_request(RAW + "[ask(%r), ask(%r)]" % (
        req.encode(), b"TRACE http://api.test:%d/t HTTP/1.1\r\n\r\n" % p),
        timeoutMs=20000, network={"allow": ["api.test:%d" % p]}))
    assert r.status == 200, r
    out = r.json["data"]["result"]
    assert out[0].startswith("HTTP/1.1 200") and out[1].startswith("HTTP/1.1 405"), out
    assert SECRET not in json.dumps(out)
    got = web.seen[seen:]
    assert [x["headers"].get("X-Api-Key") for x in got] == [SECRET]  # it did go upstream
    up = [m["value"] for m in r.json["metrics"]
          if m["name"] == "net.egress_bytes" and m["attributes"]["direction"] == "up"][0]
    # exactly the head the proxy built, less the operator's line
    sent = ("GET /bytes?n=1 HTTP/1.1\r\nHost: api.test:%d\r\nAccept: */*\r\n"
            "Connection: close\r\n\r\n" % p)
    assert up == len(sent), (up, len(sent))
    assert ported.health()["egress"]["headersFor"] == ["api.test:%d" % p]


# ---- item 4: audit lines whatever the bytes ----------------------------------------------------

def test_a_request_id_cut_mid_character_still_logs_every_decision(srv, web):
    rid = "a" * 94 + "\u00e9"
    p = web.port
    code = RAW + ("[ask(b'GET http://api.test:%d/rid HTTP/1.1\\r\\n\\r\\n')[:12], "
                  "ask(b'GET http://denied.test:%d/ HTTP/1.1\\r\\n\\r\\n')[:12]]" % (p, p))
    out, counts = run(srv, code, ["api.test:%d" % p], request_id=rid)
    assert out == ["HTTP/1.1 200", "HTTP/1.1 403"], out

    def mine():
        return [x for x in egress_lines(srv) if x.get("execution") == rid]

    wait_until(lambda: len(mine()) == 2, 10, "both egress lines of the execution")
    lines = {x["decision"]: x for x in mine()}
    assert lines["allowed"]["host"] == "api.test" and lines["allowed"]["port"] == p
    assert lines["allowed"]["bytesUp"] > 0 and lines["allowed"]["bytesDown"] > 0
    assert lines["denied"]["host"] == "denied.test"
    assert "not in this execution's network allow list" in lines["denied"]["reason"]
    assert not [x for x in egress_lines(srv) if "decision" not in x], "a line lost its fields"


def test_a_host_header_that_is_no_utf8_is_logged_escaped(srv):
    here = {}
    exec(RAW, here)  # ask(), on the host: to sandboxd's own port
    answer = here["ask"](b"GET /healthz HTTP/1.1\r\nHost: \xffevil\\x.test\r\n"
                         b"Connection: close\r\n\r\n", srv.port)
    assert answer.startswith("HTTP/1.1 403"), answer[:200]

    def refused():
        out = []
        for line in srv.logs().splitlines():
            if line.startswith("{") and '"level":"warn"' in line:
                x = json.loads(line)
                if "refused Host" in x.get("msg", ""):
                    out.append(x)
        return out

    wait_until(lambda: refused(), 10, "the refusal's log line")
    # the byte that is no UTF-8 is shown as \xff, the backslash that was there doubled
    assert "'\\xffevil\\\\x.test'" in refused()[-1]["msg"], refused()
    assert not [line for line in srv.logs().splitlines()
                if line.startswith("{") and '"msg"' not in line], "a line lost its message"


# ---- item 5: an IP pattern names its ports, not every port ------------------------------------

def test_an_ip_pattern_does_not_open_the_other_ports_of_its_address(srv, web, tls):
    """127.0.0.1 is named on tls.port; localhost is allowed on web.port and resolves (on the
    host, unpinned) to 127.0.0.1: that address is not named on web.port."""
    before = web.accepted
    code = RAW + "ask(b'GET http://localhost:%d/ip HTTP/1.1\\r\\n\\r\\n')" % web.port
    out, counts = run(srv, code, ["127.0.0.1:%d" % tls.port, "localhost:%d" % web.port])
    assert out.startswith("HTTP/1.1 403"), out
    assert "resolves to 127.0.0.1, a loopback address" in out, out
    assert web.accepted == before, "the name reached a port its address was not named on"
    assert counts["net.egress_denied"] == 1


# ---- item 6: shares -------------------------------------------------------------------------------

HOG = """
import os, select, socket, time
P = %d
SLOW = b"GET http://api.test:%%d/slow?s=40 HTTP/1.1\\r\\n\\r\\n" %% P
deadline = time.time() + 15
def refused(s):
    try:
        return bool(select.select([s], [], [], 0)[0]) and s.recv(12, socket.MSG_PEEK) == b"HTTP/1.1 429"
    except OSError:
        return False  # closed by the proxy: it had no room
def hog(n):
    held = []
    while len(held) < n and time.time() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", 3128), timeout=2.5)
        except OSError:
            break  # the proxy stopped taking this execution's connections
        s.sendall(SLOW)  # a request the origin answers late: held past any head deadline
        held.append(s)
        if any(refused(x) for x in held[-4:]):
            break  # the proxy answers this execution's new connections with its cap
    return held
# The signal that A holds all it could: a request whose body comes last, on the connection
# made first (before any cap).
marker = socket.create_connection(("127.0.0.1", 3128), timeout=5)
marker.sendall(b"POST http://api.test:%%d/mark-hogged HTTP/1.1\\r\\nContent-Length: 4\\r\\n\\r\\n" %% P)
held = 0
for _ in range(5):  # RLIMIT_NOFILE is per process: five of them hold up to 1150, one by one
    r, w = os.pipe()
    if os.fork() == 0:
        mine = hog(230)  # held until this process ends
        os.write(w, b"%%d\\n" %% len(mine))
        time.sleep(50)
        os._exit(0)
    got = int(os.read(r, 64))
    held += got
    if got < 230:
        break
marker.sendall(b"done")
answer = marker.recv(12).decode()
deadline = time.time() + 1
more = hog(8)  # and the place the marker's answer freed
time.sleep(5)
[held, answer]
"""


def test_one_execution_cannot_take_every_connection_of_the_proxy(srv, web):
    """Execution A opens as many connections as it can and holds them with requests an origin
    answers late; execution B, of another tenant, must still get through (the pool held 1024
    for everyone together, and one execution could take them all)."""
    p = web.port
    seen = len(web.seen)
    box = {}

    def hog():
        box["a"] = run(srv, HOG % p, ["api.test:%d" % p], token=ALPHA, request_id="r-hog",
                       timeout_ms=60000)

    def slow_requests():
        return sum(1 for x in web.seen[seen:] if x["path"].startswith("/slow"))

    t = threading.Thread(target=hog)
    t.start()
    try:
        wait_until(lambda: any(x["path"] == "/mark-hogged" for x in web.seen[seen:]), 60,
                   "the hog's connections")
        last = slow_requests()
        out, _ = run(srv, RAW + "ask(b'GET http://other.test:%d/b HTTP/1.1\\r\\n\\r\\n')[:12]"
                     % p, ["other.test:%d" % p], token=BETA, request_id="r-other")
    finally:
        t.join()
    assert out == "HTTP/1.1 200", (out, last)
    (held, marked), counts = box["a"]
    assert marked == "HTTP/1.1 200", marked
    cap = srv.health(OPERATOR)["egress"]["shares"]["execution"]
    assert cap <= 1024 // 2
    assert last <= cap, (last, cap)  # no more of its requests reached the origin at once
    assert counts["net.egress_denied"] > 0, counts  # the others were answered 429


def test_what_a_session_leaves_running_counts_against_its_cap(srv, web):
    """A session's connections outlive its executions: what one execution leaves holding them
    counts when the next asks (17 sessions x 72 held the whole pool)."""
    p = web.port
    r = srv.request("POST", "/v1/sessions", body={"network": {"allow": ["api.test:%d" % p]}},
                    headers=auth(BETA), fresh=True)
    assert r.status == 201, r
    sid = r.json["sessionId"]
    cap = 8  # the default with --max-sessions 64: half the pool over 64, at most 8
    first = """
import socket, threading, time
held = []
def hold():
    for _ in range(%d):
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(b"GET http://api.test:%d/slow?s=15 HTTP/1.1\\r\\n\\r\\n")
        held.append(s)
threading.Thread(target=hold, daemon=True).start()
time.sleep(1)
len(held)
""" % (cap + 4, p)
    second = RAW + "ask(b'GET http://api.test:%d/second HTTP/1.1\\r\\n\\r\\n')" % p
    try:
        for code in (first, second):
            r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code},
                            headers=auth(BETA), fresh=True)
            assert r.status == 200 and r.json["status"] == "ok", r
        out = ast.literal_eval(r.json["result"])
    finally:
        srv.request("DELETE", "/v1/sessions/" + sid, headers=auth(BETA), fresh=True)
    assert out.startswith("HTTP/1.1 429 Too Many Requests (sandboxd egress: this session holds "
                          "%d connections through the proxy, its cap" % cap), out
    assert srv.health(OPERATOR)["egress"]["shares"]["session"] == cap


@pytest.fixture(scope="module")
def shares(web):
    path = write_tenants({"tenants": {"alpha": {"token": ALPHA, "egressConnections": 3},
                                      "beta": {"token": BETA}}})
    p = web.port
    s = Server("--pool-size", "1", "--tenants", path, "--api-token", OPERATOR,
               "--egress-max-open", "4",
               "--egress-allow", "api.test:%d" % p, "--egress-resolve", "api.test:%d:127.0.0.1" % p)
    yield s
    s.stop()
    os.unlink(path)


SLOW = RAW + """
import socket, time
P = %d
def slow(n, seconds):
    # n requests the origin answers after some seconds: n connections held that long
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(b"GET http://api.test:%%d/slow?s=%%d HTTP/1.1\\r\\n\\r\\n" %% (P, seconds))
        out.append(s)
    time.sleep(0.5)
    return out
"""


def test_an_execution_over_its_cap_is_answered_429_and_logged(shares, web):
    h = shares.health(OPERATOR)
    assert h["egress"]["shares"]["execution"] == 4 and h["egress"]["shares"]["pool"] == 1024
    code = SLOW % web.port + ("held = slow(4, 4)\n"
                              "ask(b'GET http://api.test:%d/over HTTP/1.1\\r\\n\\r\\n')" % web.port)
    out, counts = run(shares, code, ["api.test:%d" % web.port], token=BETA, request_id="r-cap")
    assert out.startswith("HTTP/1.1 429 Too Many Requests (sandboxd egress: this execution holds "
                          "4 connections through the proxy, its cap"), out
    assert "\r\nRetry-After: 1\r\n" in out
    assert counts["net.egress_denied"] == 1 and counts["net.egress_requests"] == 4
    wait_until(lambda: [x for x in egress_lines(shares) if x.get("execution") == "r-cap"
                        and x["decision"] == "denied"], 10, "the denial's line")
    denied = [x for x in egress_lines(shares) if x.get("execution") == "r-cap"
              and x["decision"] == "denied"]
    assert "its cap" in denied[0]["reason"] and denied[0]["host"] == "api.test", denied


def test_a_tenant_over_its_share_is_answered_429_and_the_others_are_not(shares, web):
    p = web.port
    box = {}
    code = SLOW % p + "held = slow(3, 8)\ntime.sleep(8)\n0"

    def fill():
        box["a"] = run(shares, code, ["api.test:%d" % p], token=ALPHA, request_id="r-share-1")

    t = threading.Thread(target=fill)
    t.start()
    try:
        wait_until(lambda: "sandboxd_tenant_egress_connections{tenant=\"alpha\"} 3" in
                   shares.request("GET", "/metrics", headers=auth(ALPHA), fresh=True).raw.decode(),
                   20, "alpha's three connections")
        over, _ = run(shares, RAW + "ask(b'GET http://api.test:%d/x HTTP/1.1\\r\\n\\r\\n')" % p,
                      ["api.test:%d" % p], token=ALPHA, request_id="r-share-2")
        other, _ = run(shares, RAW + "ask(b'GET http://api.test:%d/y HTTP/1.1\\r\\n\\r\\n')" % p,
                       ["api.test:%d" % p], token=BETA, request_id="r-share-3")
    finally:
        t.join()
    assert over.startswith("HTTP/1.1 429 Too Many Requests (sandboxd egress: tenant 'alpha' "
                           "holds 3 connections through the proxy, its share"), over
    assert other.startswith("HTTP/1.1 200"), other
    metrics = shares.request("GET", "/metrics", headers=auth(ALPHA), fresh=True).raw.decode()
    assert 'sandboxd_tenant_refused_total{tenant="alpha",limit="egressConnections"} 1' in metrics


def test_the_shares_are_checked_at_start(web):
    p = web.port
    s = Server("--pool-size", "0", "--max-sessions", "64", "--egress-session-max-open", "9",
               "--egress-allow", "api.test:%d" % p, wait=False)
    try:
        assert s.proc.wait(timeout=60) != 0
        assert "--max-sessions 64 x --egress-session-max-open 9 = 576 connections, more than " \
            "half of --egress-pool 1024" in s.logs()
    finally:
        s.stop(check=False)


# ---- item 6: the resolver threads -------------------------------------------------------------

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* Names under slow.test take as long as a resolver that does not answer (each call leaves a
 * file in $SLOW_DNS_DIR; $SLOW_DNS_DIR/release ends the wait early). */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    if (!real)
        real = dlsym(RTLD_NEXT, "getaddrinfo");
    size_t n = node ? strlen(node) : 0;
    const char *dir = getenv("SLOW_DNS_DIR");
    if (dir && n > 10 && strcmp(node + n - 10, ".slow.test") == 0) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, node);
        FILE *f = fopen(path, "w");
        if (f)
            fclose(f);
        snprintf(path, sizeof(path), "%s/release", dir);
        for (int i = 0; i < 240 && access(path, F_OK) != 0; i++)
            usleep(50000);
        return EAI_NONAME;
    }
    return real(node, service, hints, res);
}
"""


@pytest.fixture(scope="module")
def slow_dns(web, tenants_file):
    d = tempfile.mkdtemp(prefix="sandboxd-slowdns-")
    os.chmod(d, 0o755)
    src = os.path.join(d, "shim.c")
    with open(src, "w") as f:
        f.write(SHIM)
    lib = os.path.join(d, "shim.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", lib, src, "-ldl"], check=True)
    # A sanitizer build wants its runtime first among what is preloaded.
    runtimes = [line.split("=>")[1].split()[0] for line in subprocess.run(
        ["ldd", BIN], capture_output=True, text=True).stdout.splitlines()
        if "=>" in line and ("libasan" in line or "libubsan" in line)]
    p = web.port
    s = Server("--pool-size", "1", "--tenants", tenants_file, "--api-token", OPERATOR,
               "--egress-allow", "*.slow.test:%d" % p, "--egress-allow", "localhost:%d" % p,
               env={"LD_PRELOAD": " ".join(runtimes + [lib]), "SLOW_DNS_DIR": d})
    yield s, d
    open(os.path.join(d, "release"), "w").close()
    s.stop()
    shutil.rmtree(d, ignore_errors=True)


def test_slow_names_of_one_tenant_leave_resolver_threads_to_the_others(slow_dns, web):
    """Tenant alpha asks for eight names that take a resolver's full timeout; beta's lookup must
    not wait behind them (the proxy had 4 threads for everyone, and 10 s per lookup)."""
    srv, d = slow_dns
    p = web.port
    box = {}
    code = """
import threading, urllib.request
out = []
def get(i):
    try:
        urllib.request.urlopen("http://n%%d.slow.test:%d/" %% i, timeout=25)
    except OSError as e:
        out.append(str(e)[:60])
ts = [threading.Thread(target=get, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
len(out)
""" % p

    def slow():
        box["a"] = run(srv, code, ["*.slow.test:%d" % p], token=ALPHA, request_id="r-slow")

    t = threading.Thread(target=slow)
    t.start()
    try:
        wait_until(lambda: len([n for n in os.listdir(d) if n.endswith(".slow.test")]) >= 2, 30,
                   "alpha's lookups to start")
        time.sleep(1)  # and any more of them that may run
        out, _ = run(srv, RAW + "ask(b'GET http://localhost:%d/ HTTP/1.1\\r\\n\\r\\n')" % p,
                     ["localhost:%d" % p], token=BETA, request_id="r-fast")
        started = len([n for n in os.listdir(d) if n.endswith(".slow.test")])
    finally:
        open(os.path.join(d, "release"), "w").close()
        t.join()
    # beta's name was looked up (and its loopback address refused), not left to time out
    assert out.startswith("HTTP/1.1 403") and "resolves to 127.0.0.1" in out, out
    # alpha had two threads of the four, the others waited in the queue
    assert started == srv.health(OPERATOR)["egress"]["shares"]["resolverTenantThreads"] == 2, started
    assert box["a"][0] == 8
