# SPDX-License-Identifier: MIT
"""Three instances behind HAProxy sharing one PostgreSQL (deploy/local-cluster.sh --postgres,
docs/DEPLOY.md "Scaling out and in"): what one instance saves, the others read at once; a
workspace's quota, a tenant's quota and update_memory hold with writers on every instance; a
tenant's rows are never another's; an instance killed in the middle of writes leaves nothing
half written."""
import json
import os
import signal
import subprocess
import threading
import time

import pytest

import stores
from cluster import INSTANCES, Cluster
from harness import write_tenants

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
CAROL = "carol-token-0123456789abcdef"
TENANTS = {"tenants": {"alice": {"token": ALICE, "maxSessions": 32, "quotaMb": 13,
                                 "maxWorkspaces": 12},
                       "bob": {"token": BOB, "maxSessions": 16},
                       "carol": {"token": CAROL, "maxSessions": 16, "maxWorkspaces": 3}}}


@pytest.fixture(scope="module")
def cluster():
    tenants = write_tenants(TENANTS)
    c = Cluster(postgres=True, serve_args=["--tenants", tenants, "--workspace-quota-mb", "8"])
    yield c
    os.unlink(tenants)
    c.stop(check=True)


CREATED = []  # (token, session id) made by the current test


@pytest.fixture(autouse=True)
def end_sessions(cluster):
    """Each test ends the sessions it made (the instances' memory is small)."""
    yield
    while CREATED:
        token, sid = CREATED.pop()
        call(cluster, token, "DELETE", "/v1/sessions/" + sid)


def call(c, token, method, path, body=None):
    return c.proxy.request(method, path, body, {"Authorization": "Bearer " + token},
                           fresh=True, timeout=120)


def sessions_on_every_instance(c, token, workspace, per_instance=1):
    """{instance: [session ids]} with per_instance sessions of workspace on each instance
    (creations are balanced: create until every instance holds enough); the creation answers
    by session id in .answers."""
    held = {i: [] for i in INSTANCES}
    answers = {}
    for _ in range(12 * per_instance):
        if all(len(v) >= per_instance for v in held.values()):
            break
        r = call(c, token, "POST", "/v1/sessions", {"workspace": workspace})
        assert r.status == 201, r
        sid = r.json["sessionId"]
        CREATED.append((token, sid))
        answers[sid] = r.json
        held[sid.split(".")[0]].append(sid)
    assert all(len(v) >= per_instance for v in held.values()), held
    sessions_on_every_instance.answers = answers
    return held


def run(c, token, sid, code):
    r = call(c, token, "POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    assert r.status == 200 and r.header("X-Sandboxd-Instance") == sid.split(".")[0], r
    return r.json


def ok(c, token, sid, code):
    out = run(c, token, sid, code)
    assert out["status"] == "ok", out
    return out["result"]


def sql(c, query):
    url, password_file = c.store
    with open(password_file) as f:
        password = f.read().strip()
    p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                        url, "-c", query], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PGPASSWORD": password})
    assert p.returncode == 0, p.stderr
    return [line.split("\t") for line in p.stdout.splitlines() if line]


def test_what_one_instance_saves_the_others_read_at_once(cluster):
    held = sessions_on_every_instance(cluster, ALICE, "shared")
    a, b, c = (held[i][0] for i in INSTANCES)
    ok(cluster, ALICE, a, "save_memory('plan', {'steps': [1, 2, 3]}, metadata={'by': 'a'})\n"
                          "def triple(x):\n    return 3 * x\n"
                          "save_tool(triple)\nsave_file('notes.txt', b'from a')")
    assert ok(cluster, ALICE, b, "load_memory('plan')") == "{'steps': [1, 2, 3]}"
    assert ok(cluster, ALICE, b, "[(m['key'], m['metadata']) for m in list_memories()]") == \
        "[('plan', {'by': 'a'})]"
    assert ok(cluster, ALICE, c, "[f['name'] for f in list_execution_files()]") == \
        "['notes.txt']"
    # A session made after the save, on whichever instance, defines the saved tool.
    fresh = sessions_on_every_instance(cluster, ALICE, "shared")
    for sid in (s for ids in fresh.values() for s in ids):
        assert sessions_on_every_instance.answers[sid]["toolsLoaded"] == ["triple"]
        assert ok(cluster, ALICE, sid, "triple(14)") == "42"
    # And the operator's view over the API, through the balancer, is the same everywhere.
    for _ in range(len(INSTANCES)):
        r = call(cluster, ALICE, "GET", "/v1/workspaces/shared/tools")
        assert r.status == 200 and [t["name"] for t in r.json["tools"]] == ["triple"], r
    # A change on one instance is seen on another at once.
    ok(cluster, ALICE, c, "delete_memory('plan')")
    assert ok(cluster, ALICE, a, "load_memory('plan', default='gone')") == "'gone'"


def save_concurrently(c, token, sids, code):
    results = {}

    def one(sid):
        results[sid] = run(c, token, sid, code)

    threads = [threading.Thread(target=one, args=(s,)) for s in sids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r["status"] == "ok" for r in results.values()), results
    return [r["result"] for r in results.values()]


SAVE_3MB = ("try:\n    save_file('f-' + __import__('secrets').token_hex(4), b'x' * (3 << 20))\n"
            "    r = 'saved'\nexcept MCPError as e:\n    r = str(e)\nr")


def test_quotas_hold_with_writers_on_every_instance(cluster):
    # One workspace of 8 MiB, nine writers of 3 MiB, three on each instance: two fit.
    held = sessions_on_every_instance(cluster, ALICE, "race", per_instance=3)
    results = save_concurrently(cluster, ALICE, [s for ids in held.values() for s in ids], SAVE_3MB)
    assert results.count("'saved'") == 2, results
    assert all("workspace is full" in r for r in results if r != "'saved'"), results
    (used,) = sql(cluster, "SELECT w.bytes, (SELECT sum(size) FROM sandboxd_items i "
                           "WHERE i.ws = w.id) FROM sandboxd_workspaces w "
                           "WHERE w.tenant = 'alice' AND w.name = 'race'")
    assert int(used[0]) == int(used[1]) == 2 * (3 << 20), used
    # alice's 13 MiB, all her workspaces together: four more workspaces, one writer in each,
    # spread over the instances, 3 MiB each; 6 MiB and a little are used already: two fit.
    sids = []
    for n in range(4):
        r = call(cluster, ALICE, "POST", "/v1/sessions", {"workspace": "part%d" % n})
        assert r.status == 201, r
        CREATED.append((ALICE, r.json["sessionId"]))
        sids.append(r.json["sessionId"])
    assert len({s.split(".")[0] for s in sids}) >= 2, sids
    results = save_concurrently(cluster, ALICE, sids, SAVE_3MB)
    assert results.count("'saved'") == 2, results
    assert all("tenant 'alice'" in r for r in results if r != "'saved'"), results
    (row,) = sql(cluster, "SELECT t.bytes, (SELECT sum(i.size) FROM sandboxd_items i "
                          "JOIN sandboxd_workspaces w ON w.id = i.ws WHERE w.tenant = t.tenant) "
                          "FROM sandboxd_tenants t WHERE t.tenant = 'alice'")
    assert int(row[0]) == int(row[1]) and 12 << 20 < int(row[0]) <= 13 << 20, row


def test_a_tenants_workspace_count_holds_with_creators_on_every_instance(cluster):
    """carol may have 3 workspaces: six sessions of six new ones, made at once through the
    balancer, make exactly three."""
    answers = [None] * 6

    def make(i):
        answers[i] = call(cluster, CAROL, "POST", "/v1/sessions", {"workspace": "new%d" % i})

    threads = [threading.Thread(target=make, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    made = [r for r in answers if r.status == 201]
    CREATED.extend((CAROL, r.json["sessionId"]) for r in made)
    assert len(made) == 3, answers
    assert all(r.status == 413 and r.json["error"]["code"] == "QUOTA_EXCEEDED"
               for r in answers if r.status != 201), answers
    assert len({r.header("X-Sandboxd-Instance") for r in answers}) >= 2, answers
    assert sql(cluster, "SELECT workspaces, (SELECT count(*) FROM sandboxd_workspaces w "
                        "WHERE w.tenant = 'carol') FROM sandboxd_tenants WHERE tenant = 'carol'") == \
        [["3", "3"]]


def test_update_memory_is_atomic_across_instances(cluster):
    held = sessions_on_every_instance(cluster, ALICE, "count", per_instance=2)
    sids = [s for ids in held.values() for s in ids]
    save_concurrently(cluster, ALICE, sids,
                      "for _ in range(10):\n    update_memory('n', lambda v: v + 1, default=0)")
    assert ok(cluster, ALICE, sids[0], "load_memory('n')") == str(10 * len(sids))


def test_a_tenants_rows_are_never_anothers(cluster):
    a = sessions_on_every_instance(cluster, ALICE, "private")
    ok(cluster, ALICE, a[INSTANCES[0]][0],
       "save_memory('secret', 'alice-only')\ndef mine():\n    return 'alice'\nsave_tool(mine)")
    # bob, on every instance, has a workspace "private" of his own: empty.
    b = sessions_on_every_instance(cluster, BOB, "private")
    for inst, (sid,) in b.items():
        assert sessions_on_every_instance.answers[sid]["toolsLoaded"] == []
        assert ok(cluster, BOB, sid, "(load_memory('secret'), list_memories())") == "(None, [])"
    ok(cluster, BOB, b[INSTANCES[1]][0], "save_memory('secret', 'bob-only')")
    assert ok(cluster, ALICE, a[INSTANCES[2]][0], "load_memory('secret')") == "'alice-only'"
    # Over the API: each sees only its own.
    r = call(cluster, BOB, "GET", "/v1/workspaces/private/memories")
    assert [m["key"] for m in r.json["memories"]] == ["secret"], r
    assert call(cluster, BOB, "GET", "/v1/workspaces/private/tools").json["tools"] == []
    assert call(cluster, BOB, "DELETE", "/v1/workspaces/private/tools/mine").status == 404
    assert call(cluster, BOB, "GET", "/v1/workspaces/race/memories").status == 404
    # In the database: two workspaces, each its tenant's, each item in its own.
    rows = sql(cluster, "SELECT w.tenant, i.name, convert_from(i.data, 'UTF8') "
                        "FROM sandboxd_items i JOIN sandboxd_workspaces w ON w.id = i.ws "
                        "WHERE w.name = 'private' AND i.kind = 0 ORDER BY w.tenant")
    assert [(r[0], r[1], json.loads(r[2])["value"]) for r in rows] == \
        [("alice", "secret", "alice-only"), ("bob", "secret", "bob-only")], rows


def test_an_instance_killed_mid_write_leaves_nothing_torn(cluster):
    held = sessions_on_every_instance(cluster, BOB, "torn")
    victim = INSTANCES[1]
    writer = held[victim][0]
    t = threading.Thread(target=lambda: call(cluster, BOB, "POST",
                                             "/v1/sessions/%s/execute" % writer,
                                             {"code": stores.WRITER, "timeoutMs": 60000}), daemon=True)
    t.start()
    # Kill it once the writes are under way (several memories there), in the middle of them.
    reader = held[INSTANCES[0]][0]
    deadline = time.time() + 60
    while int(ok(cluster, BOB, reader, "len(list_memories())")) < 10:
        assert time.time() < deadline
        time.sleep(0.1)
    os.kill(cluster.instances[victim][0], signal.SIGKILL)
    t.join(60)
    # Every memory another instance reads is whole: a body and the sum of that very body.
    for inst in INSTANCES:
        if inst != victim:
            count, bad = eval(ok(cluster, BOB, held[inst][0], stores.CHECK))
            assert count >= 10 and bad == [], (count, bad)
    # The counts are those of the rows: no write was counted without its item or the reverse,
    # in any workspace, nor in any tenant's total.
    rows = sql(cluster, "SELECT w.name, w.bytes, w.memories, w.tools, w.files, "
                        "coalesce(sum(i.size), 0), count(i.*) FILTER (WHERE i.kind = 0), "
                        "count(i.*) FILTER (WHERE i.kind = 1), count(i.*) FILTER (WHERE i.kind = 2) "
                        "FROM sandboxd_workspaces w LEFT JOIN sandboxd_items i ON i.ws = w.id "
                        "GROUP BY w.id")
    assert any(r[0] == "torn" for r in rows), rows
    for r in rows:
        assert r[1:5] == r[5:9], rows
    rows = sql(cluster, "SELECT t.tenant, t.bytes, coalesce(sum(w.bytes), 0) "
                        "FROM sandboxd_tenants t LEFT JOIN sandboxd_workspaces w "
                        "ON w.tenant = t.tenant WHERE t.tenant <> '' GROUP BY t.tenant")
    for r in rows:
        assert r[1] == r[2], rows
