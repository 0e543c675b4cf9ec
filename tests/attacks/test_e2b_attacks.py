# SPDX-License-Identifier: MIT
"""Attacks on E2B's API (CONTRACT §15, docs/E2B.md): malformed Connect envelopes and JSON,
path traversal through /files and filesystem.*, symlinks the sandbox plants for the host to
follow, oversized uploads, unknown and other tenants' sandbox ids, forged frames from code in
the sandbox, a flood of creates. Each attempt must fail cleanly, with E2B's error shape, and
leave the server and the sandbox working. Run as root and again rootless."""
import base64
import json
import os
import shutil
import struct
import tempfile

import pytest

from harness import Server, write_tenants

ALICE = "e2b_" + "a1" * 20
BOB = "e2b_" + "b0" * 20
MARKER = "HOST-ONLY-%d" % os.getpid()


@pytest.fixture(scope="module")
def host_file():
    d = tempfile.mkdtemp(prefix="sandboxd-e2b-host-", dir="/var/tmp")
    os.chmod(d, 0o755)
    p = os.path.join(d, "private.txt")
    with open(p, "w") as f:
        f.write(MARKER)
    os.chmod(p, 0o644)  # readable by the sandbox's host user too: only the jail keeps it out
    yield p
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def srv():
    tenants = write_tenants({"tenants": {"alice": {"token": ALICE, "maxSessions": 3},
                           "bob": {"token": BOB}}})
    s = Server("--tenants", tenants, "--max-sessions", "6", "--max-body-kb", "256",
               "--tmp-size-mb", "4", "--pool-size", "1", "--session-pool-size", "2")
    yield s
    s.stop()
    os.unlink(tenants)


def create(srv, key=ALICE, status=201, **body):
    body.setdefault("templateID", "base")
    body.setdefault("timeout", 120)
    r = srv.request("POST", "/e2b/v2/sandboxes", body=body, headers={"X-API-Key": key},
                    fresh=True)
    assert r.status == status, r
    return r.json


def kill(srv, sb, key=ALICE):
    srv.request("DELETE", "/e2b/sandboxes/" + sb["sandboxID"], headers={"X-API-Key": key},
                fresh=True)


def call(srv, sb, path, body=b"", headers=None, port="49983", method="POST", token=None):
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": port,
         "X-Access-Token": token if token is not None else sb["envdAccessToken"]}
    h.update(headers or {})
    return srv.request(method, "/e2b" + path, body=body, headers=h, fresh=True)


def envelope(msg, flags=0):
    data = json.dumps(msg).encode() if not isinstance(msg, bytes) else msg
    return struct.pack(">BI", flags, len(data)) + data


def envelopes(raw):
    out = []
    while len(raw) >= 5:
        flags, n = struct.unpack(">BI", raw[:5])
        out.append((flags, json.loads(raw[5:5 + n])))
        raw = raw[5 + n:]
    return out


def stream_error(r):
    """The error code of a streamed Connect answer (its last envelope)."""
    assert r.status == 200 and r.header("Content-Type") == "application/connect+json", r
    flags, end = envelopes(r.raw)[-1]
    assert flags == 2, r
    return end["error"]["code"]


def run(srv, sb, cmd):
    """A shell command in the sandbox: (exit code, stdout)."""
    r = call(srv, sb, "/process.Process/Start",
             envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}),
             {"Content-Type": "application/connect+json"})
    assert r.status == 200, r
    out, code = b"", None
    for _, msg in envelopes(r.raw):
        ev = msg.get("event", {})
        if "data" in ev and "stdout" in ev["data"]:
            out += base64.b64decode(ev["data"]["stdout"])
        if "end" in ev:
            code = ev["end"]["exitCode"]
    return code, out.decode()


def alive(srv, sb):
    """The sandbox still answers: a command and a file."""
    assert run(srv, sb, "echo ok") == (0, "ok\n")
    r = srv.request("GET", "/healthz", fresh=True)
    assert r.status == 200, r


def test_malformed_connect_envelopes_are_clear_errors(srv):
    sb = create(srv)
    ct = {"Content-Type": "application/connect+json"}
    bad = [
        b"",                                          # no envelope
        b"\x00\x00\x00",                              # a short header
        b"\x00\x00\x00\x00\x10{}",                    # a length past the body
        b"\x00\x00\x00\x00\x01{}",                    # a length short of the body
        envelope({"process": {"cmd": "x"}}) * 2,      # two messages for a server stream
        envelope({"process": {"cmd": "x"}}, flags=1),  # compressed
        envelope({"process": {"cmd": "x"}}, flags=2),  # an end-of-stream message as a request
        b"\x00\xff\xff\xff\xff" + b"{}",              # 4 GiB declared
        envelope(b"{not json"),
        envelope(b"[1,2]"),                           # not an object
        envelope({"process": {"cmd": 5}}),            # mistyped
        envelope({"process": {"cmd": "/bin/true", "args": "x"}}),
        envelope({"process": {"cmd": "/bin/true"}, "pty": {"size": {"cols": 80}}}),
    ]
    for body in bad:
        r = call(srv, sb, "/process.Process/Start", body, ct)
        code = stream_error(r)
        assert code in ("invalid_argument", "unimplemented"), (body, r)
    # Unary calls: malformed JSON, a wrong content type, unknown methods.
    for body, headers, status in [
            (b"{oops", {"Content-Type": "application/json"}, 400),
            (b"[]", {"Content-Type": "application/json"}, 400),
            (b'{"path": 5}', {"Content-Type": "application/json"}, 400),
            (b"{}", {"Content-Type": "application/proto"}, 400),
            (b"{}", {"Content-Type": "application/json", "Connect-Protocol-Version": "2"}, 400)]:
        r = call(srv, sb, "/filesystem.Filesystem/Stat", body, headers)
        assert r.status == status and r.json["code"] == "invalid_argument", (body, r)
    r = call(srv, sb, "/filesystem.Filesystem/Nope", b"{}", {"Content-Type": "application/json"})
    assert r.status == 501 and r.json["code"] == "unimplemented", r
    r = call(srv, sb, "/process.Process/SendSignal",
             b'{"process": {"pid": 1}, "signal": "SIGNAL_SIGSTOP"}',
             {"Content-Type": "application/json"})
    assert r.status == 400, r
    alive(srv, sb)
    kill(srv, sb)


def test_files_path_traversal_is_refused(srv, host_file):
    sb = create(srv)
    for path in ["/home/user/../../etc/passwd", "../etc/passwd", "/etc/passwd", "/proc/1/environ",
                 host_file, "/home/user/a/../../../" + host_file.lstrip("/"), "/home/usera",
                 "/home/user/\x01ctl", "~/../../etc/hostname"]:
        r = call(srv, sb, "/files?" + _q(path), method="GET")
        assert r.status in (400, 404) and MARKER.encode() not in r.raw, (path, r)
        assert r.json and r.json["code"] == r.status, (path, r)
        r = call(srv, sb, "/files?" + _q(path), b"x",
                 {"Content-Type": "application/octet-stream"})
        assert r.status in (400, 404), (path, r)
    # A NUL in the query: refused, never cut short to another path.
    r = call(srv, sb, "/files?path=/home/user/a.txt%00/../../../etc/passwd", method="GET")
    assert r.status == 400, r
    # A multipart part whose file name climbs out.
    boundary = "XyZ"
    body = ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../../etc/x\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\nEVIL\r\n--%s--\r\n"
            % (boundary, boundary)).encode()
    r = call(srv, sb, "/files", body, {"Content-Type": "multipart/form-data; boundary=" + boundary})
    assert r.status == 400, r
    # filesystem.* runs inside the jail: the host's files are not there to find.
    r = call(srv, sb, "/filesystem.Filesystem/Stat", json.dumps({"path": host_file}),
             {"Content-Type": "application/json"})
    assert r.status == 404 and r.json["code"] == "not_found", r
    r = call(srv, sb, "/filesystem.Filesystem/ListDir",
             json.dumps({"path": "/home/user/../../proc/1/root", "depth": 3}),
             {"Content-Type": "application/json"})
    assert MARKER.encode() not in r.raw and host_file.encode() not in r.raw, r
    alive(srv, sb)
    kill(srv, sb)


def _q(path):
    from urllib.parse import quote
    return "path=" + quote(path, safe="")


def test_symlinks_planted_by_the_sandbox_are_not_followed(srv, host_file):
    sb = create(srv)
    code, _ = run(srv, sb, "ln -s %s /home/user/link && ln -s / /home/user/root && "
                           "ln -s /etc /home/user/etc && mkdir /home/user/d && "
                           "ln -s /proc/1/root/etc/hostname /home/user/d/h" % host_file)
    assert code == 0
    for path in ["/home/user/link", "/home/user/root" + host_file, "/home/user/etc/passwd",
                 "/home/user/d/h", "/home/user/d"]:
        r = call(srv, sb, "/files?" + _q(path), method="GET")
        assert r.status == 400 and MARKER.encode() not in r.raw, (path, r)
    # Writing through a planted link replaces the link; the target is never written.
    r = call(srv, sb, "/files?" + _q("/home/user/link"), b"REPLACED",
             {"Content-Type": "application/octet-stream"})
    assert r.status == 200, r
    with open(host_file) as f:
        assert f.read() == MARKER
    assert run(srv, sb, "cat /home/user/link; test -L /home/user/link || echo -n ' plain'") == \
        (0, "REPLACED plain")
    r = call(srv, sb, "/files?" + _q("/home/user/root/tmp/x"), b"x",
             {"Content-Type": "application/octet-stream"})
    assert r.status == 400, r
    alive(srv, sb)
    kill(srv, sb)


def test_oversized_uploads(srv):
    sb = create(srv)
    # Over --max-body-kb: the server's 413, before anything is written.
    r = call(srv, sb, "/files?" + _q("/home/user/big"), b"x" * (300 << 10),
             {"Content-Type": "application/octet-stream"})
    assert r.status == 413, r
    # Within the body limit, over the sandbox's space (--tmp-size-mb 4): 507, as envd says.
    for i in range(20):
        r = call(srv, sb, "/files?" + _q("/home/user/fill%d" % i), b"y" * (250 << 10),
                 {"Content-Type": "application/octet-stream"})
        if r.status != 200:
            break
    assert r.status == 507 and r.json["code"] == 507, r
    assert "space" in r.json["message"], r
    alive(srv, sb)
    kill(srv, sb)


def test_unknown_ids_everywhere(srv):
    ghost = {"sandboxID": "vm.0123456789abcdef0123456789abcdef", "envdAccessToken": "0" * 64}
    for sid in [ghost["sandboxID"], "x" * 300, "../../v1/sessions", "%00", "a b"]:
        g = dict(ghost, sandboxID=sid)
        r = call(srv, g, "/files?path=a", method="GET")
        assert r.status == 404 and r.json["code"] == 404, r
        r = call(srv, g, "/filesystem.Filesystem/Stat", b"{}", {"Content-Type": "application/json"})
        assert r.status == 404 and r.json["code"] == "not_found", r
        r = call(srv, g, "/process.Process/Start", envelope({"process": {"cmd": "x"}}),
                 {"Content-Type": "application/connect+json"})
        assert stream_error(r) == "not_found", r
        r = call(srv, g, "/execute", b'{"code": "1"}', {"Content-Type": "application/json"},
                 port="49999")
        assert r.status == 404, r
        r = call(srv, g, "/health", method="GET")
        assert r.status == 502, r
    for path in ["/sandboxes/" + ghost["sandboxID"], "/sandboxes/..%2F..%2Fv1",
                 "/sandboxes/" + "y" * 200]:
        r = srv.request("GET", "/e2b" + path, headers={"X-API-Key": ALICE}, fresh=True)
        assert r.status == 404 and r.json["code"] == 404, r
        r = srv.request("DELETE", "/e2b" + path, headers={"X-API-Key": ALICE}, fresh=True)
        assert r.status == 404, r


def test_another_tenants_sandbox_does_not_exist(srv):
    sb = create(srv, ALICE)
    run(srv, sb, "echo alice-secret > /home/user/secret.txt")
    sid = sb["sandboxID"]
    for method, path in [("GET", "/sandboxes/" + sid), ("DELETE", "/sandboxes/" + sid),
                         ("POST", "/sandboxes/%s/timeout" % sid),
                         ("POST", "/v2/sandboxes/%s/connect" % sid)]:
        r = srv.request(method, "/e2b" + path, body={"timeout": 10}, headers={"X-API-Key": BOB},
                        fresh=True)
        assert r.status == 404 and r.json["code"] == 404, (path, r)
        assert "envdAccessToken" not in r.raw.decode(), r
    r = srv.request("GET", "/e2b/v2/sandboxes", headers={"X-API-Key": BOB}, fresh=True)
    assert r.status == 200 and sid not in r.raw.decode(), r
    # The data plane with bob's key, or without alice's token: not found, never her data.
    r = call(srv, sb, "/files?" + _q("/home/user/secret.txt"), method="GET",
             headers={"X-API-Key": BOB}, token="")
    assert r.status == 404 and b"alice-secret" not in r.raw, r
    for token in ["", "0" * 64, sb["envdAccessToken"][:-1] + "0"]:
        r = call(srv, sb, "/files?" + _q("/home/user/secret.txt"), method="GET", token=token)
        assert r.status == 404 and b"alice-secret" not in r.raw, r
        r = call(srv, sb, "/execute", b'{"code": "open(\'/home/user/secret.txt\').read()"}',
                 {"Content-Type": "application/json"}, port="49999", token=token)
        assert r.status == 404 and b"alice-secret" not in r.raw, r
    # A wrong key is refused outright (401), as E2B's SDK expects.
    r = call(srv, sb, "/files?" + _q("/home/user/secret.txt"), method="GET",
             headers={"X-API-Key": "e2b_nobody"}, token="")
    assert r.status == 401 and r.json["code"] == 401, r
    # Her own key and her token both work.
    r = call(srv, sb, "/files?" + _q("/home/user/secret.txt"), method="GET",
             headers={"X-API-Key": ALICE}, token="")
    assert r.status == 200 and r.raw == b"alice-secret\n", r
    kill(srv, sb)


def test_code_in_the_sandbox_cannot_forge_the_agents_frames(srv):
    sb = create(srv)
    # Commands never hold the channel to the host (fd 3), nor can they open the agent's.
    code, out = run(srv, sb, "ls -l /proc/self/fd/3 2>&1; cat /proc/1/fd/3 2>&1 | head -c 80; "
                             "echo >&3 2>&1 || echo no-fd3")
    assert "no-fd3" in out, out
    # Code in a context writes garbage on its own socket to the agent: the context is
    # restarted, and the sandbox goes on.
    forge = ("import os, struct\n"
             "for fd in range(3, 64):\n"
             "    try:\n"
             "        os.write(fd, struct.pack('>I', 30) + b'{\"eid\": 1, \"out\": \"forged\"}x')\n"
             "    except OSError:\n"
             "        pass\n")
    r = call(srv, sb, "/execute", json.dumps({"code": forge}).encode(),
             {"Content-Type": "application/json"}, port="49999")
    assert r.status == 200, r
    lines = [json.loads(x) for x in r.raw.decode().splitlines()]
    assert lines[-1] == {"type": "end_of_execution"}, lines
    assert not any(x.get("text") == "forged" or x.get("out") for x in lines), lines
    r = call(srv, sb, "/execute", b'{"code": "6 * 7"}', {"Content-Type": "application/json"},
             port="49999")
    assert r.status == 200 and b'"text":"42"' in r.raw, r
    alive(srv, sb)
    kill(srv, sb)


def test_a_flood_of_creates_meets_the_limits(srv):
    made = []
    try:
        # alice may hold 3 (maxSessions): the 4th is 429 with E2B's shape and a Retry-After.
        for _ in range(3):
            made.append((create(srv, ALICE), ALICE))
        r = srv.request("POST", "/e2b/v2/sandboxes", body={"templateID": "base"},
                        headers={"X-API-Key": ALICE}, fresh=True)
        assert r.status == 429 and r.json["code"] == 429 and r.header("Retry-After"), r
        assert "maxSessions" in r.json["message"], r
        # The server holds 6 (--max-sessions): bob fills the rest, then 503.
        for _ in range(3):
            made.append((create(srv, BOB), BOB))
        r = srv.request("POST", "/e2b/v2/sandboxes", body={"templateID": "base"},
                        headers={"X-API-Key": BOB}, fresh=True)
        assert r.status == 503 and r.json["code"] == 503 and r.header("Retry-After"), r
    finally:
        for sb, key in made:
            kill(srv, sb, key)
    sb = create(srv, ALICE)  # room again once they are killed
    alive(srv, sb)
    kill(srv, sb)


def test_malformed_control_plane_requests(srv):
    for body in [b"{", b"[]", b'{"templateID": 5}', b'{"templateID": "base", "timeout": -1}',
                 b'{"templateID": "base", "timeout": 99999999}',
                 b'{"templateID": "base", "envVars": {"A": 1}}',
                 b'{"templateID": "base", "metadata": []}',
                 b'{"templateID": "base", "autoPause": true}',
                 b'{"templateID": "base", "network": {"allowOut": ["example.com"]}}',
                 b'{"templateID": "base", "allow_internet_access": true}',
                 b'{"templateID": "../../etc"}']:
        r = srv.request("POST", "/e2b/v2/sandboxes", body=body,
                        headers={"X-API-Key": ALICE, "Content-Type": "application/json"},
                        fresh=True)
        assert r.status == 400 and r.json["code"] == 400 and r.json["message"], (body, r)
    r = srv.request("GET", "/e2b/v2/sandboxes?limit=-5", headers={"X-API-Key": ALICE}, fresh=True)
    assert r.status == 400, r
