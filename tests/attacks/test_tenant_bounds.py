# SPDX-License-Identifier: MIT
"""Attacks on what one tenant shares with the next (issue 24, items 2 and 7 to 10): a kept
interpreter of warm reuse handed to another tenant or another framework endpoint; MCP
sessions opened until the endpoint is full for everyone; workspace storage grown without
bound by opening new workspace names; a session's file listing walked without bound and
names that are not UTF-8 hidden from it; every cell of a profile drawing the same numpy
random numbers. Each test is the attempt, over real HTTP against `sandboxd serve`."""
import json
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

from harness import (McpHttp, Server, executor_request, jit_request, session_create, session_run,
                     write_tenants)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "e2e"))
from framework import Framework  # noqa: E402

ALPHA = "alpha-token-0123456789"
BETA = "beta-token-0123456789"
GAMMA = "gamma-token-0123456789"
DELTA = "delta-token-0123456789"
TENANTS = {"tenants": {"alpha": {"token": ALPHA, "maxSessions": 1}, "beta": {"token": BETA}}}
# The tenants file's own shares (an older sandboxd refuses these keys)
SHARES = {"tenants": {"gamma": {"token": GAMMA, "quotaMb": 1},
                      "delta": {"token": DELTA, "maxWorkspaces": 2}}}

APP = """\
import os

TOKEN = os.urandom(8).hex()  # one per interpreter
SECRETS = {}


def keep(request, context):
    SECRETS["key"] = request["body"]["secret"]
    with open("/tmp/left-behind", "w") as f:
        f.write(request["body"]["secret"])
    return {"token": TOKEN}


def peek(request, context):
    try:
        with open("/tmp/left-behind") as f:
            left = f.read()
    except OSError:
        left = None
    return {"token": TOKEN, "secrets": dict(SECRETS), "tmp": left}
"""


def auth(token):
    return {"Authorization": "Bearer " + token}


@pytest.fixture(scope="module")
def state_dir():
    d = tempfile.mkdtemp(prefix="sandboxd-state-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def tenants_file():
    path = write_tenants(TENANTS)
    yield path
    os.unlink(path)


def tenants_server(tenants_file, state_dir, defs=None):
    return Server("--pool-size", "2", "--session-pool-size", "1", "--tenants", tenants_file,
                  "--warm-reuse", "*", "--workspace-quota-mb", "1", "--state-dir", state_dir,
                  definitions=defs)


@pytest.fixture(scope="module")
def srv(tenants_file, state_dir, tmp_path_factory):
    defs = tmp_path_factory.mktemp("defs")
    (defs / "shared" / "handlers").mkdir(parents=True)
    (defs / "shared" / "handlers" / "app.py").write_text(APP)
    s = tenants_server(tenants_file, state_dir, defs)
    s.stopped = False
    yield s
    if not s.stopped:  # the restart test stops it itself
        s.stop()


@pytest.fixture(scope="module")
def shares_srv():
    path = write_tenants(SHARES)
    d = tempfile.mkdtemp(prefix="sandboxd-state-")
    s = tenants_server(path, d)
    s.state_dir = d
    yield s
    s.stop()
    os.unlink(path)
    shutil.rmtree(d, ignore_errors=True)


def call(srv, token, method, path, body=None):
    return srv.request(method, path, body, auth(token), fresh=True)


def execute(srv, token, function, body=None, endpoint="local"):
    r = call(srv, token, "POST", "/execute",
             jit_request("handlers/app.py", function, body, app="shared", endpoint=endpoint))
    assert r.status == 200 and r.json["resultType"] == "generic", r
    return r.json


# ---- 2: warm reuse keeps tenants and framework endpoints apart ----------------------------------

def test_a_kept_interpreter_never_serves_another_tenant(srv):
    first = execute(srv, ALPHA, "keep", {"secret": "alpha-only"})
    again = execute(srv, ALPHA, "peek")
    assert again["verdict"]["reused"] is True  # reuse itself works within the tenant
    assert again["data"]["token"] == first["data"]["token"]
    other = execute(srv, BETA, "peek")
    assert other["verdict"]["reused"] is False, other
    assert other["data"]["token"] != first["data"]["token"]
    assert other["data"]["secrets"] == {} and other["data"]["tmp"] is None, other["data"]


def test_a_kept_interpreter_never_serves_another_framework_endpoint(srv):
    fw1, fw2 = Framework(), Framework()
    try:
        for fw in (fw1, fw2):  # the same code under both endpoints: the same content hash
            fw.add("shared", "handlers/app.py", APP)
        first = execute(srv, BETA, "keep", {"secret": "fw1-only"}, endpoint=fw1.url)
        assert execute(srv, BETA, "peek", endpoint=fw1.url)["verdict"]["reused"] is True
        other = execute(srv, BETA, "peek", endpoint=fw2.url)
        assert other["verdict"]["reused"] is False, other
        assert other["data"]["token"] != first["data"]["token"]
        assert "fw1-only" not in json.dumps(other["data"])
        # beta's interpreter of "local" (from the test above) may be reused: never fw1's
        local = execute(srv, BETA, "peek")
        assert local["data"]["token"] != first["data"]["token"]
        assert "fw1-only" not in json.dumps(local["data"])
    finally:
        fw1.close()
        fw2.close()


# ---- 7: MCP sessions count against the tenant -------------------------------------------------

def test_mcp_sessions_of_a_tenant_are_capped_by_its_limit(srv):
    """alpha (maxSessions 1) opens MCP sessions until refused; beta still gets one."""
    held = [McpHttp(srv, headers=auth(ALPHA))]
    try:
        extra = McpHttp(srv, headers=auth(ALPHA), initialize=False)
        r = extra.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "flood", "version": "1"}}})
        assert r.status == 429, r
        assert r.header("Retry-After") == "1"
        assert r.json["error"]["data"]["code"] == "TENANT_LIMIT", r.json
        assert "maxMcpSessions" in r.json["error"]["message"]
        assert r.header("MCP-Session-Id") is None
        other = McpHttp(srv, headers=auth(BETA))
        assert other.session
        assert other.delete().status == 204
        # a session ended gives its place back
        assert held.pop().delete().status == 204
        held.append(McpHttp(srv, headers=auth(ALPHA)))
        assert held[-1].session
    finally:
        for c in held:
            c.delete()
    metrics = call(srv, ALPHA, "GET", "/metrics").raw.decode()
    assert 'sandboxd_tenant_refused_total{tenant="alpha",limit="maxMcpSessions"} 1' in metrics


# ---- 8: storage per tenant --------------------------------------------------------------------

def session_in(srv, token, workspace):
    return call(srv, token, "POST", "/v1/sessions", {"workspace": workspace})


def store(srv, token, workspace, code):
    """Run code in a new session of workspace (deleted after); its result."""
    r = session_in(srv, token, workspace)
    assert r.status == 201, r
    sid = r.json["sessionId"]
    try:
        r = call(srv, token, "POST", "/v1/sessions/%s/execute" % sid, {"code": code})
        assert r.status == 200 and r.json["status"] == "ok", r
        return r.json["result"]
    finally:
        call(srv, token, "DELETE", "/v1/sessions/" + sid)


SAVE = """\
try:
    save_file(%r, b"x" * %d)
    out = "saved"
except Exception as exc:
    out = "%%s: %%s" %% (type(exc).__name__, exc)
out"""


def test_new_workspace_names_do_not_add_to_a_tenants_storage(srv):
    """beta has no quotaMb: its total is 4 x --workspace-quota-mb (1) = 4 MiB, all its
    workspaces together, however many names it opens."""
    for i in range(4):
        assert store(srv, BETA, "b%d" % i, SAVE % ("f.bin", 900_000)) == "'saved'"
    refused = store(srv, BETA, "b4", SAVE % ("f.bin", 900_000))
    assert "MCPError" in refused and "quota" in refused, refused
    # memories count as well
    code = "try:\n    save_memory('m', 'y' * 600_000)\n    out = 'saved'\n" \
           "except Exception as exc:\n    out = str(exc)\nout"
    assert "quota" in store(srv, BETA, "b4", code)
    r = call(srv, BETA, "GET", "/v1/workspaces/b0/memories")
    assert r.status == 200, r
    usage = r.json["usage"]["tenant"]
    assert usage["maxBytes"] == 4 << 20 and usage["bytes"] >= 3_600_000, usage
    assert usage["workspaces"] == 5 and usage["maxWorkspaces"] == 16, usage


def test_a_tenants_quota_mb_caps_all_its_workspaces(shares_srv):
    s = shares_srv
    assert store(s, GAMMA, "g1", SAVE % ("f.bin", 600_000)) == "'saved'"
    refused = store(s, GAMMA, "g2", SAVE % ("f.bin", 600_000))
    assert "MCPError" in refused and "quota" in refused, refused
    # replacing a file by a smaller one frees room
    assert store(s, GAMMA, "g1", SAVE % ("f.bin", 100_000)) == "'saved'"
    assert store(s, GAMMA, "g2", SAVE % ("f.bin", 600_000)) == "'saved'"


def test_a_tenant_has_at_most_max_workspaces(shares_srv):
    s = shares_srv
    for name in ("d1", "d2"):
        assert store(s, DELTA, name, "1") == "1"
    r = session_in(s, DELTA, "d3")
    assert r.status == 413, r
    assert r.json["error"]["code"] == "QUOTA_EXCEEDED" and r.json["error"]["field"] == "workspace"
    assert "maxWorkspaces" in r.json["error"]["message"]
    assert store(s, DELTA, "d1", "2") == "2"  # the ones it has still open
    assert not os.path.exists(os.path.join(s.state_dir, "tenants", "delta", "workspaces", "d3"))


def test_a_restart_does_not_reset_what_a_tenant_stored(srv, tenants_file, state_dir):
    """The total is counted from the state directory when a tenant is first seen."""
    srv.stop()
    srv.stopped = True
    again = tenants_server(tenants_file, state_dir)
    try:
        refused = store(again, BETA, "b9", SAVE % ("f.bin", 900_000))
        assert "quota" in refused, refused
    finally:
        again.stop()


# ---- 9: file listings ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def files_srv():
    s = Server("--pool-size", "1", "--session-pool-size", "1", "--tmp-size-mb", "64")
    yield s
    s.stop()


def new_session(s):
    return session_create(s)["sessionId"]


def run(s, sid, code):
    r = session_run(s, sid, code, timeoutMs=60000)
    assert r["status"] == "ok", r
    return r["result"]


def test_a_listing_counts_every_entry_it_visits(files_srv):
    """20 000 empty directories and one file: the listing stops at its cap of 10 000 entries
    and says it was truncated, instead of visiting them all."""
    sid = new_session(files_srv)
    try:
        run(files_srv, sid, "import os\nfor i in range(20000):\n    os.mkdir('d%05d' % i)\n"
                            "open('zz-last.txt', 'w').write('x')\n1")
        r = files_srv.request("GET", "/v1/sessions/%s/files" % sid)
        assert r.status == 200, r
        assert r.json["truncated"] is True, r.json["truncated"]
        assert len(r.json["files"]) <= 1
        run(files_srv, sid, "import os\nfor i in range(20000):\n    os.rmdir('d%05d' % i)\n1")
        r = files_srv.request("GET", "/v1/sessions/%s/files" % sid)
        assert r.json["truncated"] is False
        assert [f["path"] for f in r.json["files"]] == ["zz-last.txt"]
    finally:
        files_srv.request("DELETE", "/v1/sessions/" + sid)


def test_names_that_are_not_utf8_are_listed_escaped_and_reachable(files_srv):
    sid = new_session(files_srv)
    base = "/v1/sessions/%s/files" % sid
    try:
        run(files_srv, sid, "import os\nopen(b'\\xff\\xfe.bin', 'wb').write(b'hidden')\n"
                            "os.mkdir(b'd\\xe9')\nopen(b'd\\xe9/a%b', 'wb').write(b'deep')\n"
                            "open('plain-%.txt', 'w').write('p')\n1")
        r = files_srv.request("GET", base)
        assert r.status == 200, r
        listed = {f["path"]: f for f in r.json["files"]}
        assert set(listed) == {"%FF%FE.bin", "d%E9/a%25b", "plain-%.txt"}, listed
        assert listed["%FF%FE.bin"]["pathEncoding"] == "percent"
        assert listed["%FF%FE.bin"]["size"] == 6
        assert "pathEncoding" not in listed["plain-%.txt"]
        # the listed path, put into the URL as it is, names the file
        assert files_srv.request("GET", base + "/%FF%FE.bin").raw == b"hidden"
        assert files_srv.request("GET", base + "/d%E9/a%25b").raw == b"deep"
        # a PUT answers with its documented body, the path shown as a listing shows it
        r = files_srv.request("PUT", base + "/new%C3%28.txt", b"abc")
        assert r.status == 201, r
        assert r.json == {"path": "new%C3(.txt", "pathEncoding": "percent", "size": 3}, r.json
        r = files_srv.request("PUT", base + "/ok.txt", b"abcd")
        assert r.status == 201 and r.json == {"path": "ok.txt", "size": 4}, r
        assert run(files_srv, sid, "open(b'new\\xc3(.txt', 'rb').read()") == "b'abc'"
        r = files_srv.request("GET", base + "/missing%FF")
        assert r.status == 404 and r.json["error"]["code"] == "NOT_FOUND", r
    finally:
        files_srv.request("DELETE", "/v1/sessions/" + sid)


# ---- 10: random state of forked cells -----------------------------------------------------------

RNG_MODULE = """\
import random

import numpy

RNG = random.Random()
STATE = numpy.random.RandomState()
GEN = numpy.random.default_rng()
"""


@pytest.fixture(scope="module")
def rng_site():
    top = tempfile.mkdtemp(prefix="sandboxd-rng-", dir="/var/tmp")  # the sandbox has its /tmp
    os.chmod(top, 0o755)
    with open(os.path.join(top, "rngholder.py"), "w") as f:
        f.write(RNG_MODULE)
    os.chmod(os.path.join(top, "rngholder.py"), 0o644)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def test_cells_of_a_profile_draw_different_random_numbers(rng_site):
    s = Server("--pool-size", "1", "--profile-pool-size", "1", "--site-packages", rng_site,
               "--profile", "rng=numpy,rngholder")
    try:
        code = ("import random, numpy, rngholder\n"
                "[numpy.random.rand(), random.random(), rngholder.RNG.random(),"
                " rngholder.STATE.rand(), rngholder.GEN.random()]")
        draws = []
        for _ in range(3):
            r = s.execute(executor_request(code, profile="rng"))
            assert r.status == 200 and r.json["resultType"] == "generic", r
            draws.append(r.json["data"]["result"])
        for i, name in enumerate(("numpy.random", "random", "a module's Random",
                                  "a module's RandomState", "a module's Generator")):
            column = [d[i] for d in draws]
            assert len(set(column)) == 3, (name, column)
    finally:
        s.stop()
