# SPDX-License-Identifier: MIT
"""The warm pool follows demand (--pool-size is the floor, --pool-max the ceiling: misses
double the target, 5 s without one halve it and retire the ready cells beyond), and what an
execution costs the kernel is reported: the verdict's minorFaults, /healthz pool
cellMinorFaults / cellExits / cellReadyMinorFaults."""
import pathlib
import threading

from harness import Server, executor_request, jit_request, wait_until

APPS = pathlib.Path(__file__).resolve().parent / "apps"

S = "handlers/basic.py"


def test_the_pool_grows_on_misses_and_shrinks_when_idle():
    srv = Server("--pool-size", "2", "--pool-max", "8", "--max-running", "16", definitions=APPS)
    try:
        wait_until(lambda: srv.health()["pool"]["ready"] == 2, 60, "the pool to fill")
        before = srv.health()["pool"]
        assert (before["target"], before["minSize"], before["maxSize"]) == (2, 2, 8)
        results = []

        def one():
            r = srv.execute(jit_request(S, "add", {"a": 1, "b": 2}), fresh=True)
            results.append(r.status == 200 and r.json["data"] == {"sum": 3})

        threads = [threading.Thread(target=one) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(results) and len(results) == 12
        grown = srv.health()["pool"]
        assert grown["misses"] > 0
        assert 2 < grown["target"] <= 8
        wait_until(lambda: srv.health()["pool"]["ready"] > 2, 30, "the pool to grow")
        # No misses for 5 s: back to the floor, the extra ready cells retired.
        wait_until(lambda: srv.health()["pool"]["target"] == 2, 30, "the pool to shrink")
        wait_until(lambda: srv.health()["pool"]["ready"] == 2, 30, "the extra cells to go")
        assert srv.health()["pool"]["retiredIdle"] > 0
        r = srv.execute(jit_request(S, "add", {"a": 1, "b": 2}))
        assert r.json["data"] == {"sum": 3}
    finally:
        srv.stop()


def test_page_faults_are_reported(server):
    trivial = server.execute(jit_request(S, "add", {"a": 1, "b": 2})).json
    assert trivial["verdict"]["minorFaults"] >= 0
    metrics = {m["name"]: m["value"] for m in trivial["metrics"]}
    assert metrics["sandbox.minor_faults"] == trivial["verdict"]["minorFaults"]
    # 16 MB written page by page: at least one fault per 4 KiB page, on top of the trivial call.
    code = "def f():\n    b = bytearray(16 << 20)\n    for i in range(0, len(b), 4096):\n        b[i] = 1\n    return len(b)\n"
    big = server.execute(executor_request(code, functionName="f")).json
    assert big["data"]["result"] == 16 << 20, big
    assert big["verdict"]["minorFaults"] >= 4096 > trivial["verdict"]["minorFaults"]
    pool = wait_until_exits(server)
    assert pool["cellMinorFaults"] > pool["cellExits"] > 0
    assert pool["cellReadyMinorFaults"] > 0


def wait_until_exits(server):
    wait_until(lambda: server.health()["pool"]["cellExits"] > 0, 30, "a cell's exit report")
    return server.health()["pool"]
