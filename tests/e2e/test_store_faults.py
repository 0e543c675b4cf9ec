# SPDX-License-Identifier: MIT
"""The state store in PostgreSQL when the database fails (docs/DEPLOY.md, docs/SESSIONS.md):
down at start, sandboxd runs, says so in its log and stays out of the balancing (/readyz 503)
until the database answers; stopped and restarted under load, the calls that need it fail
with STORE_UNAVAILABLE in bounded time and work again by themselves, nothing saved is lost or
torn; a database that hangs blocks nothing that does not need it; a schema newer than this
sandboxd is refused, an older one brought up to date. Each test has a PostgreSQL of its own
(tests/pg.py) to break."""
import statistics
import threading
import time

import pytest

from harness import Server, executor_request, session_create, session_run
from pg import Postgres


@pytest.fixture
def pg():
    p = Postgres()
    yield p
    p.close()


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def executes(srv):
    """One EXECUTOR /execute (it needs no store): its latency in seconds."""
    t = time.time()
    r = srv.execute(executor_request("def f():\n    return 7\n", functionName="f"), fresh=True,
                    timeout=60)
    assert r.status == 200 and r.json["data"]["result"] == 7, r
    return time.time() - t


class Load(threading.Thread):
    """Executions that need no store, one after another, until stopped: their latencies."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.srv, self.latencies, self.stopped, self.error = srv, [], False, None

    def run(self):
        try:
            while not self.stopped:
                self.latencies.append(executes(self.srv))
        except Exception as e:  # reported by stop()
            self.error = e

    def stop(self):
        self.stopped = True
        self.join(120)
        assert self.error is None, self.error
        return self.latencies


def test_a_database_down_at_start(pg):
    db = pg.create_db()
    pg.stop()
    s = Server("--pool-size", "1", *pg.store_args(db))
    try:
        r = s.request("GET", "/readyz", fresh=True)
        assert r.status == 503 and r.json["status"] == "store_unavailable", r
        assert "state store" in r.json["reason"] and r.header("Retry-After"), r
        health = s.health()
        assert health["status"] == "ok" and health["stateStore"]["state"] == "starting", health
        wait_for(lambda: "is not ready until it answers" in s.logs(), 30, "the log line")
        line = next(x for x in s.logs().splitlines() if "is not ready until it answers" in x)
        assert pg.url(db) in line, line  # names the store
        # What needs the store says so; what does not works.
        r = s.request("POST", "/v1/sessions", body={"workspace": "w"}, fresh=True)
        assert r.status == 503 and r.json["error"]["code"] == "STORE_UNAVAILABLE", r
        assert r.header("Retry-After") and pg.url(db) in r.json["error"]["message"], r
        executes(s)
        # The database comes: sandboxd is ready by itself.
        pg.start()
        wait_for(lambda: s.request("GET", "/readyz", fresh=True).status == 200, 30, "ready")
        sid = session_create(s, workspace="w")["sessionId"]
        assert session_run(s, sid, "save_memory('k', 1)\nload_memory('k')")["result"] == "1"
        assert pg.password not in s.logs()
    finally:
        s.stop()


WORKER = """
import time
acked, out = {}, {"ok": 0, "unavailable": 0, "other": [], "slowest": 0.0,
                  "last_unavailable": 0.0, "last_ok": 0.0}
end = time.time() + %(seconds)f
i = 0
while time.time() < end:
    key, t = "%(prefix)s%%d" %% (i %% 5), time.time()
    try:
        save_memory(key, {"i": i, "pad": "p" * (i %% 97)})
        acked[key] = i
        v = load_memory(key)
        # what was acknowledged is there, or something written later, never older or torn
        if v["i"] < acked[key] or v["pad"] != "p" * (v["i"] %% 97):
            out["other"].append("bad value %%r for %%s" %% (v, key))
        out["ok"] += 1
        out["last_ok"] = time.time()
    except MCPError as e:
        if "STORE_UNAVAILABLE" in str(e):
            out["unavailable"] += 1
            out["last_unavailable"] = time.time()
        else:
            out["other"].append(str(e))
    out["slowest"] = max(out["slowest"], time.time() - t)
    i += 1
    time.sleep(0.01)
out["acked"] = acked
out
"""


def test_a_database_stopped_and_restarted_under_load(pg):
    db = pg.create_db()
    s = Server("--pool-size", "2", "--state-store-timeout-ms", "2000", *pg.store_args(db))
    try:
        sids = [session_create(s, workspace="load")["sessionId"] for _ in range(2)]
        results = [None] * len(sids)

        def work(n):
            results[n] = session_run(s, sids[n], WORKER % {"seconds": 12, "prefix": "s%d-" % n},
                                     timeoutMs=120000)

        workers = [threading.Thread(target=work, args=(n,)) for n in range(len(sids))]
        for t in workers:
            t.start()
        load = Load(s)
        load.start()
        time.sleep(3)
        pg.stop("immediate")  # a crash of the server: connections cut, nothing flushed
        time.sleep(3)
        pg.start()
        for t in workers:
            t.join(180)
        latencies = load.stop()
        for out in results:
            assert out["status"] == "ok", out
            r = eval(out["result"])
            assert r["other"] == [], r["other"]
            assert r["unavailable"] > 0 and r["ok"] > 0, r
            # failed fast and in bounded time, and came back by itself
            assert r["slowest"] < 5, r
            assert r["last_ok"] > r["last_unavailable"], r
        # executions that need no store went on all along
        assert len(latencies) > 10 and max(latencies) < 3, latencies
        # nothing acknowledged was lost
        sid = session_create(s, workspace="load")["sessionId"]
        for out in results:
            for key, i in eval(out["result"])["acked"].items():
                got = session_run(s, sid, "load_memory(%r)['i']" % key)["result"]
                assert int(got) >= i, (key, got, i)
        health = s.health()["stateStore"]
        assert health["state"] == "ready", health
    finally:
        s.stop()


def test_a_hung_database_blocks_only_what_needs_it(pg):
    db = pg.create_db()
    s = Server("--pool-size", "2", "--state-store-timeout-ms", "1000", *pg.store_args(db))
    try:
        saver = session_create(s, workspace="hung")["sessionId"]
        other = session_create(s)["sessionId"]
        session_run(s, saver, "save_memory('before', 1)")
        before = [executes(s) for _ in range(5)]
        pg.pause()
        try:
            load = Load(s)
            load.start()
            t = time.time()
            out = session_run(s, saver, "try:\n    save_memory('during', 2)\n    r = 'saved'\n"
                                        "except MCPError as e:\n    r = str(e)\nr")
            waited = time.time() - t
            assert "STORE_UNAVAILABLE" in out["result"] and "1000 ms" in out["result"], out
            assert waited < 4, waited
            # a session that does not touch the store, the probes: as usual
            t = time.time()
            assert session_run(s, other, "sum(range(1000))")["result"] == "499500"
            assert time.time() - t < 2
            assert s.request("GET", "/healthz", fresh=True).status == 200
            time.sleep(2)
            during = load.stop()
        finally:
            pg.resume()
        assert len(during) >= 5 and statistics.median(during) < 3 * max(before) + 0.2, \
            (before, during)
        # the store is back for the next call
        wait_for(lambda: session_run(s, saver, "try:\n    r = load_memory('before')\n"
                                               "except MCPError:\n    r = None\nr")["result"]
                 == "1", 20, "the store back")
    finally:
        s.stop()


def test_a_newer_schema_is_refused(pg):
    db = pg.create_db()
    s = Server("--pool-size", "1", *pg.store_args(db))  # makes the schema
    s.stop()
    pg.psql(db, "UPDATE sandboxd_schema SET version = 99")
    s = Server("--pool-size", "1", *pg.store_args(db))
    try:
        wait_for(lambda: "schema version 99" in s.logs(), 30, "the refusal")
        assert "knows versions up to 2" in s.logs()
        time.sleep(2)  # and it stays so: no retry will change it
        r = s.request("GET", "/readyz", fresh=True)
        assert r.status == 503 and "newer" in r.json["reason"], r
        assert s.health()["stateStore"]["state"] == "incompatible"
        r = s.request("POST", "/v1/sessions", body={"workspace": "w"}, fresh=True)
        assert r.status == 503 and r.json["error"]["code"] == "STORE_UNAVAILABLE", r
        # nothing was written with rules this sandboxd does not know
        assert pg.psql(db, "SELECT count(*) FROM sandboxd_workspaces") == [["0"]]
    finally:
        s.stop()


def test_a_version_1_schema_is_brought_up_to_date(pg):
    """Version 2 added the kept files of execution folders (kind 3, counted in runs): a database
    left at version 1 is moved on at start, keeping what it holds, and then keeps them."""
    db = pg.create_db()
    s = Server("--pool-size", "1", *pg.store_args(db))
    try:
        sid = session_create(s, workspace="old")["sessionId"]
        session_run(s, sid, "save_memory('k', 41)")
    finally:
        s.stop()
    # What version 1 made: kinds 0 to 2, no runs counter.
    pg.psql(db, "ALTER TABLE sandboxd_workspaces DROP COLUMN runs; "
                "ALTER TABLE sandboxd_items DROP CONSTRAINT sandboxd_items_kind_check, "
                "ADD CONSTRAINT sandboxd_items_kind_check CHECK (kind BETWEEN 0 AND 2); "
                "UPDATE sandboxd_schema SET version = 1")
    s = Server("--pool-size", "1", *pg.store_args(db))
    try:
        assert pg.psql(db, "SELECT version FROM sandboxd_schema") == [["2"]]
        sid = session_create(s, workspace="old")["sessionId"]
        out = session_run(s, sid, "(execution_folder() / 'n.txt').write_text('kept')\n"
                                  "load_memory('k') + 1")
        assert out["status"] == "ok" and out["result"] == "42", out
        r = s.request("GET", "/v1/workspaces/old/tools", fresh=True)
        assert r.status == 200 and r.json["usage"]["runFiles"] == 2, r  # n.txt and code.py
        assert pg.psql(db, "SELECT count(*) FROM sandboxd_items WHERE kind = 3") == [["2"]]
    finally:
        s.stop()
