# SPDX-License-Identifier: MIT
"""Attacks on the state store in PostgreSQL (--state-store, docs/SECURITY.md "The state
store"): the database password never shows (logs, /healthz, /readyz, error messages), not even
when the operator put it in the URL; sandboxed code reaches neither the password nor the
database; names and values chosen by a client are data, never SQL (memory keys and metadata,
file and tool names, runtime value keys and app ids), and the tables are intact after every
attempt."""
import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from harness import Server, executor_request, session_create, session_run  # noqa: E402
from pg import Postgres  # noqa: E402

INJECTIONS = ["x'; DROP TABLE sandboxd_items; --", "'); DELETE FROM sandboxd_workspaces; --",
              "$1", "\\'; SELECT pg_sleep(30); --", "k\" OR \"1\"=\"1", "é'||(SELECT 1)||'"]


@pytest.fixture(scope="module")
def pg():
    p = Postgres()
    yield p
    p.close()


def tables(pg, db):
    return sorted(r[0] for r in pg.psql(db, "SELECT tablename FROM pg_tables "
                                            "WHERE tablename LIKE 'sandboxd_%'"))


ALL_TABLES = ["sandboxd_items", "sandboxd_runtime", "sandboxd_runtime_total", "sandboxd_schema",
              "sandboxd_tenants", "sandboxd_workspaces"]


def test_the_password_never_shows(pg):
    db = pg.create_db()
    # From a file, as documented.
    s = Server("--pool-size", "1", *pg.store_args(db))
    try:
        sid = session_create(s, workspace="w")
        assert sid  # it connected, with the password
        health = s.request("GET", "/healthz", fresh=True)
        assert health.json["stateStore"]["location"] == pg.url(db), health.json
        seen = health.raw.decode() + s.request("GET", "/readyz", fresh=True).raw.decode()
        seen += s.request("GET", "/metrics", fresh=True).raw.decode()
        assert pg.password not in seen
        assert pg.password not in s.logs()
    finally:
        s.stop()
    # In the URL, where an operator should not put it: it works, sandboxd warns, and neither
    # the log nor /healthz nor an error message repeats it.
    url = pg.url(db).replace("sandboxd@", "sandboxd:%s@" % pg.password)
    s = Server("--pool-size", "1", "--state-store", url)
    try:
        session_create(s, workspace="w")
        health = s.request("GET", "/healthz", fresh=True)
        assert pg.password not in health.raw.decode()
        assert health.json["stateStore"]["location"] == pg.url(db)
        logs = s.logs()
        assert "holds a password" in logs and pg.password not in logs
    finally:
        s.stop()
    # The database down: the errors name the store, never the password.
    pg.stop()
    try:
        s = Server("--pool-size", "1", "--state-store", url)
        try:
            r = s.request("POST", "/v1/sessions", body={"workspace": "w"}, fresh=True)
            assert r.status == 503 and pg.url(db) in r.raw.decode(), r
            assert pg.password not in r.raw.decode()
            assert pg.password not in s.logs()
        finally:
            s.stop()
    finally:
        pg.start()


def test_sandboxed_code_reaches_neither_the_password_nor_the_database(pg):
    db = pg.create_db()
    # The store and its password from the environment only, as the Kubernetes manifests give
    # them (SANDBOXD_STATE_STORE, PGPASSWORD).
    s = Server("--pool-size", "1",
               env={"PGPASSWORD": pg.password, "SANDBOXD_STATE_STORE": pg.url(db)})
    try:
        assert s.health()["stateStore"]["backend"] == "postgresql"
        code = """
import os, socket
out = {"env": sorted(k for k in os.environ if k.startswith(("PG", "SANDBOXD_"))),
       "found": [k for k, v in os.environ.items() if %(pw)r in v or %(url)r in v]}
try:
    open(%(file)r).read()
    out["file"] = "read"
except OSError as e:
    out["file"] = type(e).__name__
try:
    s = socket.socket()
    s.settimeout(2)
    s.connect(("127.0.0.1", %(port)d))
    out["db"] = "connected"
except OSError as e:
    out["db"] = type(e).__name__
out
""" % {"pw": pg.password, "file": pg.password_file, "port": pg.port, "url": pg.url(db)}
        r = s.execute(executor_request(code))
        assert r.status == 200, r
        assert r.json["resultType"] == "generic", r
        out = r.json["data"]["result"]
        assert out["env"] == [] and out["found"] == [], out
        assert out["file"] != "read" and out["db"] != "connected", out
        sid = session_create(s, workspace="w")["sessionId"]
        got = session_run(s, sid, code)
        assert got["status"] == "ok" and "'connected'" not in got["result"], got
        assert "'read'" not in got["result"] and pg.password not in got["result"], got
    finally:
        s.stop()


def test_names_and_values_are_never_sql(pg, tmp_path):
    db = pg.create_db()
    apps = tmp_path / "apps"
    (apps / "demo" / "flows").mkdir(parents=True)
    flow = ("startAt: set\nsteps:\n"
            "  set: {type: mcp, tool: core.state.setRuntimeValue, params: "
            "{key: $.requestData.body.key, value: $.requestData.body.value}, next: get}\n"
            "  get: {type: mcp, tool: core.state.getRuntimeValue, "
            "params: {key: $.requestData.body.key}, end: true}\n")
    (apps / "demo" / "flows" / "rt.yaml").write_text(flow)
    s = Server("--pool-size", "1", *pg.store_args(db), definitions=apps)
    try:
        sid = session_create(s, workspace="inj")["sessionId"]
        for key in INJECTIONS:
            code = ("save_memory(%r, {'v': %r}, metadata={'m': %r})\n"
                    "(load_memory(%r), get_memory_info(%r)['metadata'])" % (key, key, key, key, key))
            out = session_run(s, sid, code)
            assert out["status"] == "ok", out
            assert out["result"] == repr(({"v": key}, {"m": key})), out
        keys = eval(session_run(s, sid, "[m['key'] for m in list_memories()]")["result"])
        assert sorted(keys) == sorted(INJECTIONS)
        # Names that are paths or SQL are refused by their rules, as documented.
        for name in ("a'b", "x;DROP", "../x"):
            out = session_run(s, sid, "save_file(%r, b'x')" % name)
            assert out["status"] == "error" and "save_file: the name" in out["error"]["message"]
        out = session_run(s, sid, "import sandboxd_runtime.session as rt\n"
                                  "rt._host({'type': 'save_tool', 'name': \"t'--\", "
                                  "'source': 'def t():\\n    pass\\n'})")
        assert out["status"] == "error" and "identifier" in out["error"]["message"], out
        # Runtime values: keys and the app id from the request.
        for n, key in enumerate(INJECTIONS):
            req = {"requestId": "r-%d" % n,
                   "requestData": {"source": "t", "body": {"key": key, "value": {"k": key}}},
                   "context": {"appId": "demo", "handlerType": "WORKFLOW", "mcp_endpoint": "local",
                               "workflowInfo": {"workflowId": "flows/rt.yaml"}}}
            r = s.execute(req)
            assert r.status == 200 and r.json["data"] == {"value": {"k": key}, "found": True}, r
        # Everything is in its place: the tables, and the rows as data.
        assert tables(pg, db) == ALL_TABLES
        rows = pg.psql(db, "SELECT count(*) FROM sandboxd_items WHERE kind = 0")
        assert rows == [[str(len(INJECTIONS))]], rows
        stored = [json.loads(r[0])["key"] for r in
                  pg.psql(db, "SELECT convert_from(data, 'UTF8') FROM sandboxd_items")]
        assert sorted(stored) == sorted(INJECTIONS)
        rows = pg.psql(db, "SELECT app, key FROM sandboxd_runtime ORDER BY key")
        assert sorted(r[1] for r in rows) == sorted(INJECTIONS) and {r[0] for r in rows} == {"demo"}
    finally:
        s.stop()
