# SPDX-License-Identifier: MIT
"""The HTTP front end under hostile or careless clients (docs/API.md "Connections, limits and
timeouts", docs/SECURITY.md): thousands of idle connections, heads and bodies that trickle in,
bodies too large to accept, garbage instead of HTTP, and streaming clients that stop reading.
Everything here talks raw TCP where http.client would hide the behaviour under test."""
import resource
import socket
import time

import pytest

from harness import McpHttp, MCP_VERSION, jit_request
from rawhttp import connect, in_thread, json_body, read_until_closed, send_json, status_of

S = "handlers/basic.py"


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        assert hard >= want, "this test needs RLIMIT_NOFILE >= %d (hard limit %d)" % (want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


# ---- many connections ---------------------------------------------------------------------------

def test_thousands_of_idle_and_half_sent_connections_lock_nobody_out(make_server):
    raise_fd_limit(8192)
    s = make_server("--pool-size", "2")
    idle, partial = [], []
    try:
        for _ in range(5000):
            idle.append(connect(s))
        for i in range(200):  # slowloris: heads that never end
            c = connect(s)
            c.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"GET /heal")
            partial.append(c)
        start = time.time()
        r = s.request("GET", "/healthz", fresh=True, timeout=10)
        assert r.status == 200
        r = s.execute(jit_request(S, "add", {"a": 2, "b": 3}), fresh=True, timeout=10)
        assert r.status == 200 and r.json["data"] == {"sum": 5}, r
        assert time.time() - start < 5
        # The server really holds them all open (they are not waiting in the listen backlog).
        assert s.health()["http"]["connections"] >= 5200
    finally:
        for c in idle + partial:
            c.close()


# ---- slow heads and bodies ----------------------------------------------------------------------

def trickle(server, start, drip):
    """Send start, then drip one byte every 0.3 s (which keeps any inactivity timeout happy)
    until the server answers; (what it sent until it closed, seconds since start)."""
    c = connect(server)
    began = time.time()
    c.sendall(start)
    raw = b""
    for ch in drip:
        try:
            c.sendall(bytes([ch]))
        except OSError:
            break
        c.settimeout(0.3)
        try:
            raw = c.recv(65536)
            break
        except socket.timeout:
            continue
    raw += read_until_closed(c, 5)
    c.close()
    return raw, time.time() - began


def test_a_head_that_trickles_in_is_cut_after_the_header_timeout(make_server):
    s = make_server("--pool-size", "1", "--header-timeout-s", "1")
    raw, elapsed = trickle(s, b"POST /execute HTTP/1.1\r\n", b"X-Slow: " + b"a" * 40)
    assert status_of(raw) == 408, raw
    assert json_body(raw)["error"]["code"] == "REQUEST_TIMEOUT"
    assert 0.9 <= elapsed < 5, elapsed
    assert s.health()["http"]["cutHead"] >= 1


def test_an_idle_keep_alive_connection_is_not_a_slow_head(make_server):
    s = make_server("--pool-size", "1", "--header-timeout-s", "1")
    c = connect(s)
    # A loopback Host: the boundary policy refuses any other on a loopback bind (403).
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    c.settimeout(5)
    assert c.recv(65536).startswith(b"HTTP/1.1 200")
    time.sleep(2)  # idle for longer than the header timeout (and a check of the guard): still open
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert c.recv(65536).startswith(b"HTTP/1.1 200")
    c.close()


def test_a_body_that_trickles_in_is_cut_after_the_body_timeout(make_server):
    s = make_server("--pool-size", "1", "--body-timeout-s", "1")
    raw, elapsed = trickle(s, b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                              b"\r\nContent-Length: 1000\r\n\r\n{", b" " * 40)
    assert status_of(raw) == 408, raw
    assert 0.9 <= elapsed < 5, elapsed
    assert s.health()["http"]["cutBody"] >= 1


# ---- bodies too large ---------------------------------------------------------------------------

@pytest.mark.parametrize("expect", [False, True])
def test_a_declared_oversize_body_is_refused_before_it_is_sent(make_server, expect):
    s = make_server("--pool-size", "1", "--max-body-kb", "64")
    c = connect(s)
    c.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 1000000000\r\n" + (b"Expect: 100-continue\r\n" if expect else b"")
              + b"\r\n")
    raw = read_until_closed(c, 5)  # not one body byte was sent
    c.close()
    assert status_of(raw) == 413, raw  # no "100 Continue" first
    assert json_body(raw)["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert b"X-Request-ID: " in raw
    r = s.execute(jit_request(S, "add", {"a": 1, "b": 1}), fresh=True)
    assert r.status == 200


def test_an_endless_chunked_body_is_refused_once_it_crosses_the_limit(make_server):
    s = make_server("--pool-size", "1", "--max-body-kb", "64")
    c = connect(s)
    c.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n")
    sent = 0
    try:
        while sent < (4 << 20):  # far past the limit; the declared chunk never ends
            c.sendall(b"x" * 8192)
            sent += 8192
    except OSError:  # the server answered and closed: what we want
        pass
    raw = read_until_closed(c, 5)
    c.close()
    assert status_of(raw) == 413, raw
    assert json_body(raw)["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert sent < (4 << 20)  # refused while we were still sending
    assert s.health()["http"]["tooLarge"] == 1


# ---- garbage ------------------------------------------------------------------------------------

@pytest.mark.parametrize("garbage,status", [
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 408),  # a TLS ClientHello: no line end
    (b"\x00\xff\xfe binary", 408),
    (b"GARBAGE\r\n\r\n", None),  # closed without an answer
    (b"GET / NOT-HTTP\r\n\r\n", 400),
])
def test_garbage_instead_of_http_is_closed_promptly(make_server, garbage, status):
    s = make_server("--pool-size", "1", "--header-timeout-s", "1")
    c = connect(s)
    start = time.time()
    c.sendall(garbage)
    raw = read_until_closed(c, 10)
    c.close()
    assert time.time() - start < 5
    if status is None:
        assert raw == b""
    else:
        assert status_of(raw) == status, raw
    assert s.request("GET", "/healthz", fresh=True).status == 200


# ---- clients that stop reading a stream ---------------------------------------------------------

FLOOD = ("import sys, time\n"
         "while True:\n"
         "    sys.stdout.write('x' * 65536 + '\\n')\n"
         "    sys.stdout.flush()\n")


def stalled_stream(server, path, body, headers):
    """Send a request whose answer streams, with a tiny receive buffer, and never read it."""
    c = connect(server, rcvbuf=4096)
    send_json(c, "POST", path, body, headers)
    return c


def stall_then_queue(server, path, timeout_ms, code, settle):
    """A streamed flood nobody reads, and after settle seconds a plain execution queued behind
    it in the same session: (the stalled socket, the thread, its box)."""
    stalled = stalled_stream(server, path, {"code": FLOOD, "timeoutMs": timeout_ms},
                             {"Accept": "text/event-stream"})
    time.sleep(settle)
    t, box = in_thread(lambda: server.request("POST", path, {"code": code}, fresh=True,
                                              timeout=60))
    return stalled, t, box


def test_a_session_stream_nobody_reads_does_not_pin_the_session(make_server):
    # A large output limit: the execution must end by its time limit, not by flooding.
    s = make_server("--pool-size", "1", "--output-limit-kb", "1048576")
    sid = s.request("POST", "/v1/sessions", {}).json["sessionId"]
    path = "/v1/sessions/%s/execute" % sid
    stalled, t, queued = stall_then_queue(s, path, 2000, "print('after')", 0.5)
    t.join(30)
    assert "value" in queued, queued
    r = queued["value"]
    assert r.status == 200 and r.json["stdout"] == "after\n", r
    assert queued["seconds"] < 10  # the flood ended near its 2 s limit, not when the client did
    assert s.request("GET", "/v1/sessions/" + sid, fresh=True).json["busy"] is False
    stalled.close()

    # DELETE ends a stalled execution at once, and what waited behind it is answered.
    stalled, t, queued = stall_then_queue(s, path, 600000, "print(1)", 1.5)
    time.sleep(0.5)
    assert s.request("DELETE", "/v1/sessions/" + sid, fresh=True).status == 204
    t.join(30)
    assert "value" in queued, queued
    assert queued["value"].status == 404, queued["value"]  # the session it waited for is gone
    assert queued["seconds"] < 10
    stalled.close()


def test_an_mcp_progress_stream_nobody_reads_does_not_pin_the_session(make_server):
    s = make_server("--pool-size", "1", "--output-limit-kb", "1048576")
    m = McpHttp(s)
    headers = {"Accept": McpHttp.ACCEPT, "MCP-Session-Id": m.session,
               "MCP-Protocol-Version": MCP_VERSION}
    stalled = stalled_stream(s, "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "run_python", "arguments": {"code": FLOOD, "timeout": 2},
                   "_meta": {"progressToken": "p"}}}, headers)
    time.sleep(0.5)
    # the same MCP session: the same sandbox session, so this waits for the flood to end
    t, after = in_thread(lambda: m.call("run_python", {"code": "print('after')"}))
    t.join(30)
    assert "value" in after, after
    assert after["value"]["structuredContent"]["stdout"] == "after\n"
    assert after["seconds"] < 10
    stalled.close()
    assert m.delete().status == 204
