# SPDX-License-Identifier: MIT
"""Attacks on the egress policy (docs/NETWORK.md): code that was given a network allow list
tries to reach something else through the proxy or around it. Each attempt must fail with a
clear error inside the sandbox, be counted, and never reach the origin it aimed at. Run as
root and as an unprivileged user (tests/rootless.sh). Executions without a policy are the
rest of this suite, unchanged."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import Server, executor_request  # noqa: E402
from origins import fixtures  # noqa: E402


certs, web, tls = fixtures()


@pytest.fixture(scope="module")
def srv(web, tls, certs):
    s = Server("--pool-size", "1",
               "--egress-allow", "api.test:%d" % web.port,
               "--egress-allow", "other.test:%d" % web.port,
               "--egress-allow", "tls.test:%d" % tls.port,
               "--egress-allow", "localhost:%d" % web.port,
               "--egress-allow", "localhost:%d" % tls.port,
               "--egress-resolve", "api.test:%d:127.0.0.1" % web.port,
               "--egress-resolve", "other.test:%d:127.0.0.1" % web.port,
               "--egress-resolve", "tls.test:%d:127.0.0.1" % tls.port,
               "--egress-ca-file", certs.ca)
    yield s
    s.stop()


def attack(srv, code, *allow):
    r = srv.execute(executor_request(code, timeoutMs=20000, network={"allow": list(allow)}))
    assert r.status == 200, r
    resp = r.json
    assert resp["resultType"] == "generic", resp
    counts = {m["name"]: m["value"] for m in resp["metrics"] if m["name"].startswith("net.")}
    return resp["data"]["result"], counts


FETCH = """
import urllib.error, urllib.request
def fetch(url):
    try:
        return urllib.request.urlopen(url, timeout=10).status
    except urllib.error.HTTPError as e:
        return [e.code, e.reason]
    except OSError as e:
        return [type(e).__name__, str(e)]
"""


def test_other_hosts_ports_and_ip_literals_are_refused(srv, web):
    p = web.port
    targets = ["http://evil.test:%d/" % p, "http://api.test:%d/" % (p + 1),
               "http://127.0.0.1:%d/" % p, "http://2130706433:%d/" % p,
               "http://0x7f.1:%d/" % p, "http://[::1]:%d/" % p,
               "http://169.254.169.254/latest/meta-data/", "https://evil.test/",
               "https://127.0.0.1:%d/" % p]
    before = web.accepted
    out, counts = attack(srv, FETCH + "[fetch(u) for u in %r]" % targets, "api.test:%d" % p)
    for url, got in zip(targets, out):
        assert isinstance(got, list), (url, got)
        if url.startswith("http:"):
            assert got[0] == 403 and "not in this execution's network allow list" in got[1], (
                url, got)
        else:  # a refused CONNECT: urllib shows the proxy's reason phrase
            assert "Tunnel connection failed: 403" in got[1], (url, got)
            assert "not in this execution's network allow list" in got[1], (url, got)
    assert counts["net.egress_denied"] == len(targets)
    assert counts["net.egress_requests"] == 0
    assert web.accepted == before, "a refused request reached the origin"


def test_a_redirect_to_a_host_outside_the_list_is_refused(srv, web):
    p = web.port
    code = FETCH + "fetch('http://api.test:%d/redirect?to=http://other.test:%d/secret')" % (p, p)
    seen = len(web.seen)
    out, counts = attack(srv, code, "api.test:%d" % p)
    assert out[0] == 403 and "other.test:%d is not in" % p in out[1], out
    assert [x["path"] for x in web.seen[seen:]] == ["/redirect?to=http://other.test:%d/secret" % p]
    assert counts == {"net.egress_bytes": counts["net.egress_bytes"], "net.egress_requests": 1,
                      "net.egress_denied": 1}


def test_a_name_that_resolves_to_loopback_is_refused(srv, web, tls):
    # localhost is allowed by name, but nothing pins it: resolved on the host it is 127.0.0.1,
    # an address the operator never named (DNS rebinding works the same way).
    before = web.accepted + tls.accepted
    code = FETCH + "[fetch('http://localhost:%d/'), fetch('https://localhost:%d/')]" % (
        web.port, tls.port)
    out, counts = attack(srv, code, "localhost:%d" % web.port, "localhost:%d" % tls.port)
    assert out[0][0] == 403 and "resolves to 127.0.0.1, a loopback address" in out[0][1], out
    assert "Tunnel connection failed: 403" in out[1][1] and "loopback" in out[1][1], out
    assert counts["net.egress_denied"] == 2
    assert web.accepted + tls.accepted == before


TUNNEL = """
import socket, ssl
def tunnel(host, port, first=None, sni=None):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(("CONNECT %s:%d HTTP/1.1\\r\\nHost: %s:%d\\r\\n\\r\\n" % (host, port, host, port)).encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += s.recv(1)
    status = head.split(b" ")[1].decode()
    if first is not None:
        s.sendall(first)
        return [status, s.recv(100).hex()]
    ctx = ssl.create_default_context()
    if sni is None:
        ctx.check_hostname = False
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
        return [status, t.recv(12).decode()]
    except (ssl.SSLError, OSError) as e:
        return [status, str(e)]
"""


def test_tls_for_another_name_than_the_tunnel_is_refused(srv, tls):
    before = tls.accepted
    code = TUNNEL + "[tunnel('tls.test', %d, sni='evil.example'), tunnel('tls.test', %d)]" % (
        tls.port, tls.port)
    out, counts = attack(srv, code, "tls.test:%d" % tls.port)
    for status, error in out:
        assert status == "200", out  # the tunnel was opened for an allowed name...
        assert "ACCESS_DENIED" in error.upper().replace(" ", "_"), out  # ...its TLS was not
    assert counts["net.egress_denied"] == 2
    assert tls.accepted == before, "the proxy connected upstream before checking the name"
    # the same tunnel with the right name works, so it is the name that was refused
    out, _ = attack(srv, code.replace("'evil.example'", "'tls.test'"), "tls.test:%d" % tls.port)
    assert out[0] == ["200", "HTTP/1.0 200"] or out[0] == ["200", "HTTP/1.1 200"], out


def test_a_tunnel_must_carry_tls(srv, tls, web):
    before = tls.accepted
    code = TUNNEL + "tunnel('tls.test', %d, first=b'GET / HTTP/1.1\\r\\nHost: tls.test\\r\\n\\r\\n')" % (
        tls.port)
    out, counts = attack(srv, code, "tls.test:%d" % tls.port)
    assert out == ["200", "15030300020231"], out  # a fatal TLS alert: access_denied
    assert counts["net.egress_denied"] == 1
    assert tls.accepted == before


def test_host_fields_and_pipelined_requests_reach_nothing_else(srv, web):
    p = web.port
    code = """
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"POST http://api.test:%d/first HTTP/1.1\\r\\nHost: other.test:%d\\r\\n"
          b"Content-Length: 4\\r\\n\\r\\nbody"
          b"GET http://other.test:%d/smuggled HTTP/1.1\\r\\nHost: other.test:%d\\r\\n\\r\\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
data.count(b"HTTP/1.")
""" % (p, p, p, p)
    seen = len(web.seen)
    out, counts = attack(srv, code, "api.test:%d" % p)
    assert out == 1  # one answer: the connection carried one request
    got = web.seen[seen:]
    assert [(x["method"], x["path"], x["headers"]["Host"], x["body"]) for x in got] == [
        ("POST", "/first", "api.test:%d" % p, "body")]
    assert counts["net.egress_requests"] == 1


def test_oversized_heads_and_non_proxy_requests_are_refused(srv, web):
    code = """
import socket
def ask(data):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(data)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out.split(b"\\r\\n")[0].decode()
        out += chunk
[ask(b"GET / HTTP/1.1\\r\\nHost: api.test\\r\\n\\r\\n"),
 ask(b"GET http://api.test/ HTTP/1.1\\r\\n" + b"X-Pad: " + b"a" * 20000 + b"\\r\\n\\r\\n"),
 ask(b"GARBAGE\\r\\n\\r\\n")]
"""
    out, counts = attack(srv, code, "api.test:%d" % web.port)
    assert out[0].startswith("HTTP/1.1 400") and "absolute http:// URI" in out[0], out
    assert out[1].startswith("HTTP/1.1 431"), out
    assert out[2].startswith("HTTP/1.1 400"), out
    assert counts["net.egress_denied"] == 3


def test_around_the_proxy_nothing_is_reachable(srv, web):
    code = """
import errno, os, socket
out = {}
for name, fam, kind, proto in [("udp", socket.AF_INET, socket.SOCK_DGRAM, 0),
                               ("udp6", socket.AF_INET6, socket.SOCK_DGRAM, 0),
                               ("raw", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
                               ("sctp", socket.AF_INET, socket.SOCK_STREAM, 132),
                               ("packet", socket.AF_PACKET, socket.SOCK_RAW, 0),
                               ("netlink", socket.AF_NETLINK, socket.SOCK_RAW, 0)]:
    try:
        socket.socket(fam, kind, proto).close()
        out[name] = "created"
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
for name, addr in [("host-loopback", ("127.0.0.1", %d)), ("internet", ("8.8.8.8", 53)),
                   ("private", ("10.0.0.1", 80)), ("metadata", ("169.254.169.254", 80))]:
    try:
        socket.create_connection(addr, timeout=3)
        out[name] = "connected"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e))
try:
    socket.getaddrinfo("example.com", 80)
    out["dns"] = "resolved"
except OSError as e:
    out["dns"] = type(e).__name__
try:
    socket.create_server(("127.0.0.1", 3128))
    out["steal-proxy-port"] = "bound"
except OSError as e:
    out["steal-proxy-port"] = errno.errorcode[e.errno]
out["listeners"] = [l for l in open("/proc/net/tcp").read().splitlines()[1:] if l.split()[3] == "0A"]
out["fds"] = sorted(os.listdir("/proc/self/fd"))
out
""" % web.port
    out, _ = attack(srv, code, "api.test:%d" % web.port)
    for name in ("udp", "udp6", "raw", "sctp", "packet", "netlink"):
        assert out[name] == "EPERM", (name, out)
    # its 127.0.0.1 is its own: the host's origin is not there
    assert out["host-loopback"] == "ECONNREFUSED", out
    for name in ("internet", "private", "metadata"):
        assert out[name] in ("ENETUNREACH", "EHOSTUNREACH"), (name, out)
    assert out["dns"] == "gaierror"
    assert out["steal-proxy-port"] == "EADDRINUSE", out
    # the proxy's listener is in the sandbox's namespace but held by sandboxd only
    assert len(out["listeners"]) == 1 and ":0C38 " in out["listeners"][0] + " ", out
    assert len(out["fds"]) <= 5, out
