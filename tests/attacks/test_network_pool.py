# SPDX-License-Identifier: MIT
"""Network policies from warm cells (docs/NETWORK.md, "How it works"): executions and sessions
with a network policy take a cell of the network pool, which its zygote forked into a network
namespace of the cell's own, with the proxy's listener made there and handed to sandboxd, and
sealed with the filter's TCP variant. The attempts: a cell without a policy, next to that pool,
tries to make the sockets a network cell may; a network cell looks for the proxy's listener
among its own descriptors, for a namespace it shares with another execution, and for anything
left by the cell before it. The attacks on the policy itself run on these cells too
(test_egress_attacks.py, test_egress_edges.py). Run as root and as an unprivileged user
(tests/rootless.sh)."""
import concurrent.futures
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import Server, executor_request  # noqa: E402
from origins import fixtures  # noqa: E402

certs, web, tls = fixtures()
# A profile whose zygote imports what a plain cell does not: its cells are told apart by it.
PROFILE = "netprof=fractions:size=1"


@pytest.fixture(scope="module")
def srv(web):
    # other.test is within the server's ceiling, never in an execution's policy here: a
    # request to it must be refused by the execution's own policy.
    s = Server("--pool-size", "1", "--network-pool-size", "2", "--profile", PROFILE,
               "--egress-allow", "api.test:%d" % web.port,
               "--egress-allow", "other.test:%d" % web.port,
               "--egress-resolve", "api.test:%d:127.0.0.1" % web.port,
               "--egress-resolve", "other.test:%d:127.0.0.1" % web.port)
    wait_ready(s)
    yield s
    s.stop()


def wait_ready(s, pool="networkPool", want=2, profile=None):
    """Until the pool's cells are ready: a hit is then the warm path, not luck."""
    def stats():
        h = s.health()
        return h["profiles"][profile][pool] if profile else h[pool]
    for _ in range(300):
        if stats().get("ready", 0) >= want:
            return
        time.sleep(0.05)
    raise AssertionError("the %s never filled: %r" % (pool, stats()))


def run(s, code, network=None, profile=None):
    task = {"network": {"allow": network}} if network else {}
    if profile:
        task["profile"] = profile
    r = s.execute(executor_request(code, timeoutMs=20000, **task))
    assert r.status == 200, r
    assert r.json["resultType"] == "generic", r.json
    hit = [m["value"] for m in r.json["metrics"] if m["name"] == "sandbox.pool_hit"]
    return r.json["data"]["result"], hit == [1.0]


# What a cell finds out about its own network: which sockets the filter lets it make, whether
# its loopback is up (SIOCGIFFLAGS answers on a unix socket too), its namespace, how many
# filters it runs under, and every listening socket among its descriptors.
PROBE = """
import errno, fcntl, os, socket, struct
out = {}
for name, fam, kind in [("tcp", socket.AF_INET, socket.SOCK_STREAM),
                        ("tcp6", socket.AF_INET6, socket.SOCK_STREAM),
                        ("udp", socket.AF_INET, socket.SOCK_DGRAM)]:
    try:
        socket.socket(fam, kind).close()
        out[name] = "created"
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
flags = struct.unpack_from("H", fcntl.ioctl(u, 0x8913, struct.pack("16sH14x", b"lo", 0)), 16)[0]
out["lo_up"] = bool(flags & 1)
out["netns"] = os.readlink("/proc/self/ns/net")
out["filters"] = int(open("/proc/self/status").read().split("Seccomp_filters:")[1].split()[0])
listening = []
for fd in os.listdir("/proc/self/fd"):
    try:
        s = socket.socket(fileno=os.dup(int(fd)))
    except OSError:
        continue
    if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        listening.append([int(fd), s.family])
    s.close()
out["listening_fds"] = listening
out
"""


def test_a_network_execution_takes_a_warm_cell_and_reaches_its_host(srv, web):
    code = "import urllib.request\n" \
           "urllib.request.urlopen('http://api.test:%d/warm', timeout=10).status" % web.port
    before = srv.health()["networkPool"]["hits"]
    status, hit = run(srv, code, ["api.test:%d" % web.port])
    assert status == 200 and hit
    assert srv.health()["networkPool"]["hits"] == before + 1
    assert "/warm" in [r["path"] for r in web.seen]


def test_a_cell_without_a_policy_keeps_the_strict_filter(srv):
    """Next to a pool of cells that may make TCP sockets, a plain execution still may not: no
    socket but AF_UNIX (so no connection to any forwarder), its loopback down, one filter."""
    wait_ready(srv, "pool", 1)
    out, hit = run(srv, PROBE)
    assert hit, "not a warm cell"
    assert out["tcp"] == out["tcp6"] == out["udp"] == "EPERM", out
    assert out["lo_up"] is False, out
    assert out["filters"] == 1, out
    assert out["listening_fds"] == [], out


def test_a_network_cell_gets_tcp_alone_and_no_listener_of_the_proxy(srv, web):
    wait_ready(srv)
    out, hit = run(srv, PROBE, ["api.test:%d" % web.port])
    assert hit, "not a warm cell"
    assert out["tcp"] == out["tcp6"] == "created" and out["udp"] == "EPERM", out
    assert out["lo_up"] is True, out
    assert out["filters"] == 1, out  # the TCP variant instead of the default, not on top of it
    # The proxy's listener is in its namespace, but only sandboxd holds it: nothing here can
    # accept the connections meant for the proxy.
    assert out["listening_fds"] == [], out


def test_every_network_cell_has_a_namespace_of_its_own(srv, web):
    """A network namespace is never shared: its loopback is up, and what one execution bound
    there would be the other's. Cells alive at the same time (a namespace's number is reused
    once it is gone), three with a policy and one without, report four namespaces."""
    code = PROBE.replace("out = {}", "import time\ntime.sleep(1.5)\nout = {}", 1)
    wait_ready(srv)
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        futs = [ex.submit(lambda net: srv.execute(executor_request(
            code, timeoutMs=30000, **({"network": {"allow": net}} if net else {})), fresh=True),
            net) for net in (["api.test:%d" % web.port],) * 3 + (None,)]
        outs = [f.result() for f in futs]
    for r in outs:
        assert r.status == 200 and r.json["resultType"] == "generic", r.json
    seen = [r.json["data"]["result"]["netns"] for r in outs]
    assert len(set(seen)) == 4, seen


def test_what_a_network_cell_bound_is_gone_for_the_next(srv, web):
    """An execution listens on its loopback and leaves a child holding the socket; the next
    one connects to that address and finds nothing."""
    leave = """
import os, socket
s = socket.create_server(("127.0.0.1", 8081))
if os.fork() == 0:
    import time
    time.sleep(30)
    os._exit(0)
"ok"
"""
    wait_ready(srv)
    assert run(srv, leave, ["api.test:%d" % web.port])[0] == "ok"
    probe = """
import errno, socket
try:
    socket.create_connection(("127.0.0.1", 8081), timeout=3)
    r = "connected"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e))
r
"""
    wait_ready(srv)
    assert run(srv, probe, ["api.test:%d" % web.port])[0] == "ECONNREFUSED"


def test_a_session_with_a_network_policy_takes_a_warm_cell(srv, web):
    wait_ready(srv)
    r = srv.request("POST", "/v1/sessions", {"network": {"allow": ["api.test:%d" % web.port]}})
    assert r.status == 201, r
    sid = r.json["sessionId"]
    try:
        assert r.json["poolHit"] is True, r.json
        code = "import urllib.request\n" \
               "urllib.request.urlopen('http://api.test:%d/s', timeout=10).status" % web.port
        e = srv.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
        assert e.status == 200 and e.json["status"] == "ok" and e.json["result"] == "200", e.json
    finally:
        srv.request("DELETE", "/v1/sessions/" + sid)


# PROBE, then a request to the allowed host, and whether the profile's module was imported
# before the code ran (by the zygote the cell was forked from).
PROFILE_PROBE = PROBE.replace("out = {}", "import sys\nout = {'fractions': 'fractions' in sys.modules}", 1) \
    .replace("out\n", "import urllib.request\nout['status'] = urllib.request.urlopen("
             "'http://api.test:%d/prof', timeout=10).status\nout\n")


def test_a_profile_with_a_network_policy_takes_warm_cells_of_its_own(srv, web):
    """Before, an execution naming both a profile and a network policy got a fresh cell; now
    the profile has a network pool of its own (started on its first use), whose cells are
    confined as the server's network cells are: TCP alone, no listener of the proxy, one
    filter, and the profile's imports done."""
    probe = PROFILE_PROBE % web.port
    assert srv.health()["profiles"]["netprof"]["networkPool"]["started"] is False
    out, _ = run(srv, probe, ["api.test:%d" % web.port], "netprof")  # starts the pool
    assert out["status"] == 200 and out["fractions"] is True, out
    wait_ready(srv, profile="netprof")
    before = srv.health()["profiles"]["netprof"]["networkPool"]["hits"]
    out, hit = run(srv, probe, ["api.test:%d" % web.port], "netprof")
    assert hit and srv.health()["profiles"]["netprof"]["networkPool"]["hits"] == before + 1
    assert out["status"] == 200 and out["fractions"] is True, out
    assert out["tcp"] == out["tcp6"] == "created" and out["udp"] == "EPERM", out
    assert out["lo_up"] is True and out["filters"] == 1 and out["listening_fds"] == [], out
    # The server's network cells do not have the profile's imports: a different pool.
    wait_ready(srv)
    out, hit = run(srv, probe, ["api.test:%d" % web.port])
    assert hit and out["fractions"] is False and out["status"] == 200, out
    # The execution's policy still binds: a host the server allows, but it does not, is
    # refused by the proxy.
    deny = "import urllib.request\ntry:\n    urllib.request.urlopen('http://other.test:%d/', " \
        "timeout=10)\n    r = 'reached'\nexcept Exception as e:\n    r = str(e)\nr" % web.port
    wait_ready(srv, profile="netprof")
    out, hit = run(srv, deny, ["api.test:%d" % web.port], "netprof")
    assert hit and "403" in out, out
    assert "/" not in [r["path"] for r in web.seen]  # nothing reached the origin for it


def test_a_session_with_a_profile_and_a_network_policy_takes_a_warm_cell(srv, web):
    run(srv, "1", ["api.test:%d" % web.port], "netprof")  # the pool starts on first use
    wait_ready(srv, profile="netprof", want=1)
    r = srv.request("POST", "/v1/sessions", {"profile": "netprof",
                                             "network": {"allow": ["api.test:%d" % web.port]}})
    assert r.status == 201, r
    sid = r.json["sessionId"]
    try:
        assert r.json["poolHit"] is True, r.json
        code = "import sys, urllib.request\n" \
               "('fractions' in sys.modules, urllib.request.urlopen(" \
               "'http://api.test:%d/ps', timeout=10).status)" % web.port
        e = srv.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
        assert e.status == 200 and e.json["status"] == "ok", e.json
        assert e.json["result"] == "(True, 200)", e.json
    finally:
        srv.request("DELETE", "/v1/sessions/" + sid)


def test_more_network_executions_than_ready_cells_all_run(srv, web):
    code = "import urllib.request\n" \
           "urllib.request.urlopen('http://api.test:%d/many', timeout=10).status" % web.port
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        futs = [ex.submit(lambda i: srv.execute(
            executor_request(code, request_id="n-%d" % i, timeoutMs=30000,
                             network={"allow": ["api.test:%d" % web.port]}), fresh=True), i)
                for i in range(6)]
        for f in futs:
            r = f.result()
            assert r.status == 200 and r.json["data"]["result"] == 200, r.json


def test_without_the_network_pool_a_policy_gets_a_fresh_sandbox(web):
    s = Server("--pool-size", "1", "--network-pool-size", "0", "--profile", PROFILE,
               "--egress-allow", "api.test:%d" % web.port,
               "--egress-resolve", "api.test:%d:127.0.0.1" % web.port)
    try:
        health = s.health()
        assert health["networkPool"] == {"enabled": False}
        assert health["profiles"]["netprof"]["networkPool"] == {"enabled": False}
        assert all(p["networkPool"] == {"enabled": False} for p in health["profiles"].values())
        # A profile with a policy: a fresh sandbox too, which imports what it needs itself.
        out, hit = run(s, PROFILE_PROBE % web.port, ["api.test:%d" % web.port], "netprof")
        assert not hit and out["status"] == 200 and out["fractions"] is False, out
        assert out["tcp"] == "created" and out["udp"] == "EPERM" and out["listening_fds"] == [], out
        out, hit = run(s, PROBE, ["api.test:%d" % web.port])
        assert not hit
        assert out["tcp"] == "created" and out["udp"] == "EPERM" and out["lo_up"] is True, out
        assert out["listening_fds"] == [], out
    finally:
        s.stop()
