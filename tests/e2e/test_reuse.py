# SPDX-License-Identifier: MIT
"""Warm reuse (CONTRACT §14, --warm-reuse): JIT executions of an app that opted in run in an
interpreter that already imported the same script and definition; module globals persist
within the app, never across apps, never without the flag, never for EXECUTOR; the
interpreter is retired after an error, a timeout, a memory limit, --reuse-max-executions,
--reuse-idle-s, --reuse-max-idle and /_framework/load_code. Every layer of the jail stays."""
import pytest

from harness import Server, executor_request, jit_request, wait_until

SCRIPT = """\
import os
import time

TOKEN = os.urandom(8).hex()  # one per interpreter
COUNT = 0
SECRETS = {}


def hit(request, context):
    global COUNT
    COUNT += 1
    return {"count": COUNT, "token": TOKEN, "app": context["appId"]}


def keep_secret(request, context):
    SECRETS["key"] = request["body"]["secret"]
    return hit(request, context)


def look_for_secret(request, context):
    import gc
    import sys

    needle = request["body"]["secret"]
    found = [name for name, m in list(sys.modules.items())
             if needle in repr(getattr(m, "SECRETS", ""))]
    found += [type(o).__name__ for o in gc.get_objects() if isinstance(o, dict) and needle in o.values()]
    return dict(hit(request, context), found=found)


def boom(request, context):
    hit(request, context)
    raise ValueError("boom")


def sleep(request, context):
    hit(request, context)
    time.sleep(30)


def hog(request, context):
    hit(request, context)
    return len(bytearray(request["body"]["mb"] << 20))


def escape(request, context):
    out = {"count": hit(request, context)["count"]}
    try:
        open("/usr/sandboxd-reuse", "w")
        out["usr"] = "writable"
    except OSError as exc:
        out["usr"] = type(exc).__name__
    out["uid"] = os.getuid()
    return out
"""


def defs(tmp_path, apps=("rapp", "rapp2", "rerr", "rtime", "rmem", "rload", "rjail", "rfiles",
                          "rmax", "ridle", "rlru1", "rlru2", "attack_a", "attack_b", "rno")):
    for app in apps:
        d = tmp_path / app / "handlers"
        d.mkdir(parents=True, exist_ok=True)
        (d / "state.py").write_text(SCRIPT)
    return tmp_path


@pytest.fixture(scope="module")
def reuse_server(tmp_path_factory):
    root = defs(tmp_path_factory.mktemp("reuse-defs"))
    s = Server("--pool-size", "2", "--warm-reuse", "*", "--reuse-max-executions", "4",
               definitions=root)
    s.root = root
    yield s
    s.stop()


def run(srv, app, function="hit", body=None, **task):
    r = srv.execute(jit_request("handlers/state.py", function, body, app=app, **task))
    assert r.status == 200, r
    return r.json


def metric(resp, name):
    return {m["name"]: m["value"] for m in resp["metrics"]}[name]


def test_state_is_kept_within_an_app_and_the_verdict_says_reused(reuse_server):
    first = run(reuse_server, "rapp")
    assert first["data"]["count"] == 1
    assert first["verdict"]["reused"] is False
    assert metric(first, "sandbox.reused") == 0
    token = first["data"]["token"]
    for n in (2, 3):
        r = run(reuse_server, "rapp")
        assert r["data"] == {"count": n, "token": token, "app": "rapp"}
        assert r["verdict"]["reused"] is True
        assert r["verdict"]["status"] == "OK"
        assert metric(r, "sandbox.reused") == 1
    stats = reuse_server.health()["reuse"]
    assert stats["enabled"] is True and stats["apps"] == ["*"]
    assert stats["reused"] >= 2


def test_an_interpreter_is_retired_after_max_executions(reuse_server):
    counts = [run(reuse_server, "rmax")["data"]["count"] for _ in range(5)]
    assert counts == [1, 2, 3, 4, 1]  # --reuse-max-executions 4
    assert reuse_server.health()["reuse"]["retired"]["executions"] >= 1


def test_state_is_never_shared_across_apps(reuse_server):
    a1 = run(reuse_server, "attack_a", "keep_secret", {"secret": "s3cr3t-of-a"})
    b1 = run(reuse_server, "attack_b", "look_for_secret", {"secret": "s3cr3t-of-a"})
    a2 = run(reuse_server, "attack_a", "hit")
    b2 = run(reuse_server, "attack_b", "look_for_secret", {"secret": "s3cr3t-of-a"})
    # Each app has its own interpreter, kept and reused, with its own globals ...
    assert (a1["data"]["count"], a2["data"]["count"]) == (1, 2)
    assert (b1["data"]["count"], b2["data"]["count"]) == (1, 2)
    assert a2["verdict"]["reused"] and b2["verdict"]["reused"]
    assert a1["data"]["token"] != b1["data"]["token"]
    # ... and app B finds nothing of what app A keeps, anywhere in its interpreter.
    assert b1["data"]["found"] == [] and b2["data"]["found"] == []


def test_an_error_retires_the_interpreter(reuse_server):
    assert run(reuse_server, "rerr")["data"]["count"] == 1
    r = run(reuse_server, "rerr", "boom")
    assert r["resultType"] == "error" and r["data"]["code"] == "APPLICATION_ERROR"
    assert r["verdict"]["reused"] is True  # the error happened in the kept interpreter
    after = run(reuse_server, "rerr")
    assert after["data"]["count"] == 1 and after["verdict"]["reused"] is False
    assert reuse_server.health()["reuse"]["retired"]["error"] >= 1


def test_a_timeout_retires_the_interpreter(reuse_server):
    run(reuse_server, "rtime")
    r = run(reuse_server, "rtime", "sleep", timeoutMs=600)
    assert r["data"]["code"] == "TIMEOUT"
    after = run(reuse_server, "rtime")
    assert after["data"]["count"] == 1 and after["verdict"]["reused"] is False


def test_the_memory_limit_holds_in_a_reused_interpreter_and_retires_it(reuse_server):
    run(reuse_server, "rmem", memoryMb=64)
    r = run(reuse_server, "rmem", "hog", {"mb": 200}, memoryMb=64)
    assert r["verdict"]["reused"] is True
    assert r["data"]["code"] == "MEMORY_LIMIT"
    after = run(reuse_server, "rmem", memoryMb=64)
    assert after["data"]["count"] == 1 and after["verdict"]["reused"] is False


def test_another_memory_limit_gets_another_interpreter(reuse_server):
    first = run(reuse_server, "rapp2", memoryMb=64)
    other = run(reuse_server, "rapp2", memoryMb=128)
    assert other["verdict"]["reused"] is False and other["data"]["count"] == 1
    again = run(reuse_server, "rapp2", memoryMb=64)
    assert again["verdict"]["reused"] is True
    assert again["data"]["token"] == first["data"]["token"] and again["data"]["count"] == 2


def test_a_reused_interpreter_keeps_its_jail(reuse_server):
    first = run(reuse_server, "rjail", "escape")
    second = run(reuse_server, "rjail", "escape")
    assert second["verdict"]["reused"] is True and second["data"]["count"] == 2
    for r in (first, second):
        assert r["data"]["usr"] in ("PermissionError", "OSError")
        assert r["data"]["uid"] == first["data"]["uid"] != 0


def test_load_code_retires_the_apps_interpreters(reuse_server):
    assert run(reuse_server, "rload")["data"]["count"] == 1
    assert run(reuse_server, "rload")["data"]["count"] == 2
    path = reuse_server.root / "rload" / "handlers" / "state.py"
    path.write_text(SCRIPT.replace("COUNT = 0", "COUNT = 100"))
    lc = reuse_server.request("POST", "/_framework/load_code", body={"appId": "rload"})
    assert lc.status == 200
    r = run(reuse_server, "rload")
    assert r["data"]["count"] == 101 and r["verdict"]["reused"] is False
    assert run(reuse_server, "rload")["data"]["count"] == 102
    # load_code retires even when the definition did not change.
    reuse_server.request("POST", "/_framework/load_code", body={"appId": "rload"})
    r = run(reuse_server, "rload")
    assert r["data"]["count"] == 101 and r["verdict"]["reused"] is False


def test_requests_with_files_get_a_fresh_interpreter(reuse_server):
    files = {"in.txt": "eA=="}
    counts = [run(reuse_server, "rfiles", files=files) for _ in range(2)]
    assert [c["data"]["count"] for c in counts] == [1, 1]
    assert not any(c["verdict"]["reused"] for c in counts)


def test_executor_is_never_reused(reuse_server):
    code = "import builtins\nbuiltins.N = getattr(builtins, 'N', 0) + 1\ndef f():\n    return builtins.N\n"
    for _ in range(2):
        r = reuse_server.execute(executor_request(code, functionName="f"))
        assert r.status == 200, r
        assert r.json["data"]["result"] == 1
        assert r.json["verdict"]["reused"] is False


def test_without_opt_in_every_execution_is_fresh(tmp_path):
    root = defs(tmp_path, apps=("rno", "other"))
    for args in ((), ("--warm-reuse", "other")):
        srv = Server("--pool-size", "2", *args, definitions=root)
        try:
            for _ in range(3):
                r = run(srv, "rno")
                assert r["data"]["count"] == 1 and r["verdict"]["reused"] is False
            assert srv.health()["reuse"]["enabled"] is bool(args)
        finally:
            srv.stop()


def test_idle_interpreters_retire_and_the_idle_set_is_capped(make_server, tmp_path):
    root = defs(tmp_path, apps=("ridle", "rlru1", "rlru2"))
    srv = make_server("--pool-size", "2", "--warm-reuse", "ridle,rlru1,rlru2", "--reuse-idle-s",
                      "1", "--reuse-max-idle", "1", definitions=root)
    # --reuse-max-idle 1: keeping rlru2's interpreter retires rlru1's (least recently used).
    run(srv, "rlru1")
    run(srv, "rlru2")
    r = run(srv, "rlru1")
    assert r["data"]["count"] == 1 and r["verdict"]["reused"] is False
    assert srv.health()["reuse"]["retired"]["lru"] >= 1
    # --reuse-idle-s 1: the kept interpreter goes once idle for a second.
    run(srv, "ridle")
    wait_until(lambda: srv.health()["reuse"]["idle"] == 0, 10, "idle retirement")
    assert srv.health()["reuse"]["retired"]["idle"] >= 1
    r = run(srv, "ridle")
    assert r["data"]["count"] == 1 and r["verdict"]["reused"] is False


def test_bad_warm_reuse_lists_are_refused(tmp_path):
    for bad in ("", "a,,b", "x" * 300):
        srv = Server("--warm-reuse", bad, wait=False)
        assert srv.proc.wait(timeout=60) != 0
        assert "--warm-reuse" in srv.logs()
        srv.stop(check=False)
