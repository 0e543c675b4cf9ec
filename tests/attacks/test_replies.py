# SPDX-License-Identifier: MIT
"""Replies nobody reads, as an attack on sandboxd's memory (issue 24, item 1): a client asks for
a large session file or a large /execute result on many connections and never reads. Before,
every reply stayed whole in sandboxd's memory until the connection timed out (16 x 48 MiB files
grew it by ~770 MiB). Now a file is sent from its descriptor as the client reads, and the bytes
of every reply held for a client count against a total and a per-tenant share (docs/SECURITY.md,
"Replies nobody reads"): over it, 503 REPLY_BUDGET with Retry-After, and sandboxd's RSS stays
within the share. Another tenant is still served; the share comes back when the clients go."""
import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from harness import Server, executor_request, write_tenants  # noqa: E402

import pytest  # noqa: E402

MB = 1 << 20
ALPHA = "alpha-token-0123456789"
BETA = "beta-token-0123456789"
OPERATOR = "operator-token-0123456789"
# --tmp-size-mb 64 and --max-result-mb 48: the largest reply is 64 MiB, so by the documented
# defaults a tenant's share is 2 x 64 = 128 MiB and the total 4 x 64 = 256 MiB.
SHARE = 128 * MB
SLACK = 48 * MB  # the allocator's, and one result on its way


def auth(token):
    return {"Authorization": "Bearer " + token}


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def settled_rss(pid, seconds=1.0):
    """The largest RSS seen over a short while (replies may still be being built)."""
    top, end = 0, time.time() + seconds
    while time.time() < end:
        top = max(top, rss(pid))
        time.sleep(0.05)
    return top


@pytest.fixture(scope="module")
def srv():
    tenants = write_tenants({"tenants": {"alpha": {"token": ALPHA}, "beta": {"token": BETA}}})
    # Under ASan, freed memory waits in a quarantine (256 MiB by default) before it is reused or
    # returned: a small one keeps RSS about what the process holds. No effect on other builds.
    asan = os.environ.get("ASAN_OPTIONS", "detect_leaks=1") + ":quarantine_size_mb=16"
    s = Server("--pool-size", "2", "--session-pool-size", "2", "--template-pool-size", "0",
               "--tenants", tenants, "--api-token", OPERATOR, "--max-result-mb", "48",
               "--tmp-size-mb", "64", "--max-memory-mb", "1024", env={"ASAN_OPTIONS": asan})
    yield s
    s.stop()
    os.unlink(tenants)


def unread(port, method, path, token, body=b"", headers=None):
    """Send one request on a fresh connection whose client reads (almost) nothing."""
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.connect(("127.0.0.1", port))
    fields = dict(headers if headers is not None else auth(token))
    head = ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n"
            % (method, path, "".join("%s: %s\r\n" % kv for kv in fields.items()), len(body)))
    c.sendall(head.encode() + body)
    return c


def head_of(c):
    """(status, {header: value}) of the response on c, reading only as far as its head."""
    c.settimeout(120)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(4096)
        assert chunk, "the connection closed before a response head: %r" % data
        data += chunk
    lines = data.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, v in
                   (line.split(":", 1) for line in lines[1:]))
    return int(lines[0].split()[1]), headers


def session_with_file(srv, token, size):
    r = srv.request("POST", "/v1/sessions", body={"memoryMb": 512}, headers=auth(token),
                    fresh=True)
    assert r.status == 201, r
    sid = r.json["sessionId"]
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, headers=auth(token), fresh=True,
                    body={"code": "open('/tmp/big.bin', 'wb').write(b'z' * %d)" % size})
    assert r.status == 200 and r.json.get("error") is None, r
    return sid


def wait_idle(srv):
    """Until no execution runs or waits (the replies are built, read or not)."""
    deadline = time.time() + 120
    while time.time() < deadline:
        ex = srv.request("GET", "/healthz", headers=auth(OPERATOR), fresh=True).json["executions"]
        if ex["running"] == 0 and ex["queued"] == 0:
            return
        time.sleep(0.1)
    raise AssertionError("executions did not finish")


def test_unread_file_downloads_pin_no_memory_and_over_the_share_are_refused(srv):
    alpha = session_with_file(srv, ALPHA, 48 * MB)
    beta = session_with_file(srv, BETA, 48 * MB)
    path = "/v1/sessions/%s/files/big.bin" % alpha
    before = settled_rss(srv.proc.pid, 0.3)
    socks = [unread(srv.port, "GET", path, ALPHA) for _ in range(16)]
    try:
        time.sleep(1.0)  # every request reached its route
        grew = settled_rss(srv.proc.pid) - before
        # Streamed from the descriptor: the unread downloads cost sandboxd no copy of the file.
        assert grew <= SLACK, "RSS grew %.1f MiB for 16 unread 48 MiB downloads" % (grew / MB)
        heads = [head_of(c) for c in socks]
        ok = [h for st, h in heads if st == 200]
        refused = [h for st, h in heads if st == 503]
        # 48 MiB each against a 128 MiB share: two fit, the others wait behind them.
        assert len(ok) == 2 and len(refused) == 14, [st for st, _ in heads]
        assert all(h.get("retry-after") for h in refused), refused
        assert all(h["content-length"] == str(48 * MB) for h in ok), ok
        # Another tenant's share is its own: beta reads its whole file meanwhile.
        r = srv.request("GET", "/v1/sessions/%s/files/big.bin" % beta, headers=auth(BETA),
                        fresh=True)
        assert r.status == 200 and r.raw == b"z" * (48 * MB), r.status
    finally:
        for c in socks:
            c.close()
    # Once the clients are gone, their share is free again.
    deadline = time.time() + 10
    while True:
        r = srv.request("GET", path, headers=auth(ALPHA), fresh=True)
        if r.status == 200 or time.time() > deadline:
            break
        time.sleep(0.2)
    assert r.status == 200 and len(r.raw) == 48 * MB, r.status


def test_unread_results_stay_within_the_tenant_share(srv):
    code = "class C:\n    def m(self):\n        return 'x' * (40 << 20)\n"
    body = json.dumps(executor_request(code, className="C", methodName="m", memoryMb=512,
                                       timeoutMs=60000)).encode()
    wait_idle(srv)
    before = settled_rss(srv.proc.pid, 0.3)
    socks = [unread(srv.port, "POST", "/execute", ALPHA, body) for _ in range(12)]
    try:
        time.sleep(0.5)
        wait_idle(srv)
        heads = [head_of(c) for c in socks]  # every reply was built: held, or refused and freed
        grew = settled_rss(srv.proc.pid) - before
        assert grew <= SHARE + SLACK, "RSS grew %.1f MiB for 12 unread 40 MiB results" % (
            grew / MB)
        ok = [h for st, h in heads if st == 200]
        refused = [h for st, h in heads if st == 503]
        # About 40 MiB each against a 128 MiB share: at most three are held.
        assert 1 <= len(ok) <= 3 and len(ok) + len(refused) == 12, [st for st, _ in heads]
        assert all(h.get("retry-after") for h in refused), refused
        stats = srv.request("GET", "/healthz", headers=auth(OPERATOR), fresh=True).json["http"]
        assert stats["replyBytes"] <= SHARE and stats["replyRefused"] >= len(refused), stats
    finally:
        for c in socks:
            c.close()


def e2b_sandbox_with_file(srv, token, size):
    """An E2B sandbox of token's tenant (docs/E2B.md) holding /home/user/big.bin; the headers
    of its data plane, which carry the sandbox's own token and no key."""
    r = srv.request("POST", "/e2b/v2/sandboxes", body={"templateID": "base"},
                    headers={"X-API-Key": token}, fresh=True)
    assert r.status == 201, r
    sandbox = {"E2b-Sandbox-Id": r.json["sandboxID"], "X-Access-Token": r.json["envdAccessToken"]}
    r = srv.request("POST", "/e2b/execute", fresh=True,
                    body={"code": "open('/home/user/big.bin', 'wb').write(b'z' * %d)" % size},
                    headers=dict(sandbox, **{"E2b-Sandbox-Port": "49999"}))
    assert r.status == 200 and b'"error"' not in r.raw, r.raw[:2000]
    return dict(sandbox, **{"E2b-Sandbox-Port": "49983"})


def test_unread_e2b_downloads_count_against_the_sandbox_owner(srv):
    """E2B's /files with only the sandbox's token: the replies are its owner's, so alpha's
    unread downloads fill alpha's share, not only the total (which would hold five), and beta is
    still served."""
    alpha = e2b_sandbox_with_file(srv, ALPHA, 48 * MB)
    beta = e2b_sandbox_with_file(srv, BETA, 48 * MB)
    path = "/e2b/files?path=/home/user/big.bin"
    socks = [unread(srv.port, "GET", path, None, headers=alpha) for _ in range(8)]
    try:
        time.sleep(1.0)
        heads = [head_of(c) for c in socks]
        ok = [h for st, h in heads if st == 200]
        refused = [h for st, h in heads if st == 503]
        # 48 MiB each against alpha's 128 MiB share (the total is 256 MiB): two fit.
        assert len(ok) == 2 and len(refused) == 6, [st for st, _ in heads]
        assert all(h.get("retry-after") for h in refused), refused
        r = srv.request("GET", path, headers=beta, fresh=True)
        assert r.status == 200 and r.raw == b"z" * (48 * MB), r.status
    finally:
        for c in socks:
            c.close()
