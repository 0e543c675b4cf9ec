# SPDX-License-Identifier: MIT
"""The HTTP contract of /execute and friends (CONTRACT §3): status codes, request
validation naming the field, headers, keep-alive, concurrency, overload."""
import http.client
import json
import threading
import time

import pytest

from harness import jit_request

S = "handlers/basic.py"


def bad(r, field):
    assert r.status == 400, r
    assert r.json["error"]["field"] == field, r.json
    return r.json["error"]


def test_malformed_json_is_400(server):
    r = server.request("POST", "/execute", body="{not json",
                       headers={"Content-Type": "application/json"})
    assert r.status == 400
    assert r.json["error"]["code"] == "INVALID_JSON"


@pytest.mark.parametrize("mutate,field", [
    (lambda b: b.pop("requestId"), "requestId"),
    (lambda b: b.__setitem__("requestId", 5), "requestId"),
    (lambda b: b.__setitem__("requestId", ""), "requestId"),
    (lambda b: b.pop("requestData"), "requestData"),
    (lambda b: b.__setitem__("requestData", []), "requestData"),
    (lambda b: b["requestData"].pop("source"), "requestData.source"),
    (lambda b: b["requestData"].__setitem__("source", {}), "requestData.source"),
    (lambda b: b.pop("context"), "context"),
    (lambda b: b["context"].pop("mcp_endpoint"), "context.mcp_endpoint"),
    (lambda b: b["context"].__setitem__("mcp_endpoint", "ftp://x"), "context.mcp_endpoint"),
    (lambda b: b["context"].pop("handlerType"), "context.handlerType"),
    (lambda b: b["context"].__setitem__("handlerType", "PERL"), "context.handlerType"),
    (lambda b: b["context"].pop("appId"), "context.appId"),
    (lambda b: b["context"].__setitem__("appId", ".."), "context.appId"),
    (lambda b: b["context"].pop("taskDetails"), "context.taskDetails"),
    (lambda b: b["context"]["taskDetails"].pop("script"), "context.taskDetails.script"),
    (lambda b: b["context"]["taskDetails"].__setitem__("script", 7), "context.taskDetails.script"),
    (lambda b: b["context"]["taskDetails"].pop("function"), "context.taskDetails.function"),
    (lambda b: b["context"]["taskDetails"].__setitem__("function", "a-b"), "context.taskDetails.function"),
    (lambda b: b["context"]["taskDetails"].__setitem__("timeoutMs", "5"), "context.taskDetails.timeoutMs"),
    (lambda b: b["context"]["taskDetails"].__setitem__("timeoutMs", -1), "context.taskDetails.timeoutMs"),
    (lambda b: b["context"]["taskDetails"].__setitem__("memoryMb", 1.5), "context.taskDetails.memoryMb"),
])
def test_invalid_requests_name_the_field(server, mutate, field):
    body = jit_request(S, "add", {"a": 1, "b": 2})
    mutate(body)
    bad(server.execute(body), field)


@pytest.mark.parametrize("script,why", [
    ("../secret.py", ".."),
    ("handlers/../../etc/passwd", ".."),
    ("/etc/passwd", "relative"),
    ("handlers/\u0000basic.py", "NUL"),
    ("", "empty"),
])
def test_path_traversal_is_rejected(server, script, why):
    err = bad(server.execute(jit_request(script, "add")), "context.taskDetails.script")
    assert why in err["message"]


def test_body_must_be_object(server):
    r = server.request("POST", "/execute", body="[1,2]", headers={"Content-Type": "application/json"})
    assert r.status == 400


def test_wrong_content_type_is_415(server):
    r = server.request("POST", "/execute", body=json.dumps(jit_request(S, "add")),
                       headers={"Content-Type": "text/plain"})
    assert r.status == 415


def test_unacceptable_accept_is_406(server):
    r = server.execute(jit_request(S, "add", {"a": 1, "b": 2}), headers={"Accept": "text/html"})
    assert r.status == 406
    r = server.execute(jit_request(S, "add", {"a": 1, "b": 2}),
                       headers={"Accept": "text/html, application/*;q=0.5"})
    assert r.status == 200


def test_huge_body_is_413(make_server):
    s = make_server("--max-body-kb", "64", "--pool-size", "1")
    big = jit_request(S, "add", {"a": 1, "b": 2, "pad": "x" * 200_000})
    r = s.execute(big, fresh=True)
    assert r.status == 413
    assert s.execute(jit_request(S, "add", {"a": 1, "b": 2}), fresh=True).status == 200


def test_request_id_echoed_or_generated(server):
    r = server.execute(jit_request(S, "add", {"a": 1, "b": 2}), headers={"X-Request-ID": "abc-123"})
    assert r.header("X-Request-ID") == "abc-123"
    r = server.execute(jit_request(S, "add", {"a": 1, "b": 2}))
    generated = r.header("X-Request-ID")
    assert generated and len(generated) >= 16
    assert server.execute(jit_request(S, "add", {"a": 1, "b": 2})).header("X-Request-ID") != generated


def test_keep_alive_serves_many_requests_on_one_connection(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.connect()
    sock = conn.sock
    for i in range(5):
        conn.request("POST", "/execute", body=json.dumps(jit_request(S, "add", {"a": i, "b": 1})),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert json.loads(resp.read())["data"] == {"sum": i + 1}
        assert conn.sock is sock  # same TCP connection
    conn.close()


def test_unknown_route_and_wrong_method(server):
    assert server.request("GET", "/nope", fresh=True).status == 404
    r = server.request("GET", "/execute", fresh=True)
    assert r.status == 405
    assert r.header("Allow") == "POST"


def test_concurrent_requests_do_not_block_each_other(make_server):
    s = make_server("--pool-size", "4")
    slow_done = []

    def slow():
        r = s.execute(jit_request(S, "sleep_ms", {"ms": 3000}), fresh=True)
        slow_done.append(r.status)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.3)
    start = time.time()
    for i in range(3):
        r = s.execute(jit_request(S, "add", {"a": i, "b": 0}), fresh=True)
        assert r.json["data"] == {"sum": i}
    assert time.time() - start < 2.5, "fast requests waited for the slow one"
    assert not slow_done
    t.join()
    assert slow_done == [200]


def test_queue_full_is_503_with_retry_after(make_server):
    s = make_server("--max-running", "1", "--max-queue", "0", "--pool-size", "1")
    results = []
    t = threading.Thread(target=lambda: results.append(
        s.execute(jit_request(S, "sleep_ms", {"ms": 2000}), fresh=True)))
    t.start()
    deadline = time.time() + 10
    while s.health()["executions"]["running"] < 1 and time.time() < deadline:
        time.sleep(0.02)
    r = s.execute(jit_request(S, "add", {"a": 1, "b": 1}), fresh=True)
    assert r.status == 503
    assert r.header("Retry-After") == "1"
    assert r.json["error"]["code"] == "OVERLOADED"
    t.join()
    assert results[0].status == 200
    assert s.health()["executions"]["rejected"] == 1


def test_queued_requests_wait_then_run(make_server):
    s = make_server("--max-running", "1", "--max-queue", "8", "--pool-size", "2")
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(
        s.execute(jit_request(S, "sleep_ms", {"ms": 200}), fresh=True))) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status for r in results) == [200, 200, 200]
    waits = sorted({m["name"]: m["value"] for m in r.json["metrics"]}["sandbox.queue_wait"]
                   for r in results)
    assert waits[-1] >= 150  # the last one really waited for the others


def test_healthz_reports_layers_and_pool(server):
    h = server.health()
    assert h["status"] == "ok"
    iso = h["isolation"]
    assert set(iso["namespaces"]) == {"user", "pid", "mount", "net", "ipc", "uts", "cgroup"}
    assert iso["seccomp"] is True and iso["noNewPrivs"] is True
    assert iso["selftest"]["seccomp"] == 2 and iso["selftest"]["uid"] == 65534
    assert iso["selftest"]["netInterfaces"] == ["lo"]
    assert h["pool"]["enabled"] is True and h["pool"]["target"] == 4
    assert "hits" in h["pool"] and "misses" in h["pool"]


def test_metrics_endpoint_is_prometheus(server):
    server.execute(jit_request(S, "add", {"a": 1, "b": 1}))
    server.execute(jit_request(S, "raises", {"n": 1}))
    r = server.request("GET", "/metrics", fresh=True)
    assert r.status == 200
    assert r.header("Content-Type").startswith("text/plain")
    text = r.raw.decode()
    assert 'sandboxd_requests_total{handler="JIT",result="ok"}' in text
    assert 'sandboxd_requests_total{handler="JIT",result="error"}' in text
    assert 'sandboxd_request_duration_seconds_bucket{handler="JIT",le="+Inf"}' in text
    assert "sandboxd_pool_ready" in text


def test_pool_replaces_each_interpreter(server):
    before = server.health()["pool"]
    for _ in range(4):
        r = server.execute(jit_request(S, "identity"))
        assert r.status == 200
    # replacements are started in the background: wait for the refill, then count (a request
    # that found the pool empty meanwhile grows it, within --pool-max)
    deadline = time.time() + 10
    while server.health()["pool"]["ready"] < before["minSize"] and time.time() < deadline:
        time.sleep(0.05)
    after = server.health()["pool"]
    assert before["minSize"] <= after["ready"] <= after["maxSize"]
    assert after["created"] >= before["created"] + 4  # one new interpreter per execution


def test_requests_wait_for_the_pool_to_refill(make_server):
    s = make_server("--pool-size", "1", "--zygotes", "1")
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(
        s.execute(jit_request(S, "add", {"a": i, "b": 1}), fresh=True))) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.json["data"]["sum"] for r in results) == [1, 2, 3, 4, 5, 6]
    pool = s.health()["pool"]
    assert pool["misses"] >= 1  # some had to wait for a fresh interpreter, and got one
    assert pool["created"] >= 6


def test_load_code_validation(server):
    r = server.request("POST", "/_framework/load_code", body={"files": []})
    assert r.status == 400 and r.json["error"]["field"] == "appId"
    r = server.request("POST", "/_framework/load_code", body={"appId": "a", "files": "x"})
    assert r.status == 400 and r.json["error"]["field"] == "files"
