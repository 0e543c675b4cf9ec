# SPDX-License-Identifier: MIT
"""JIT ("Interpreter Mode") end to end: every result type and error code of
CONTRACT §3-4, through a real `sandboxd serve` and real jails."""
import base64
import time

from harness import jit_request

S = "handlers/basic.py"


def data(r):
    assert r.status == 200, r
    return r.json["data"]


def error(r, code):
    assert r.status == 200, r
    assert r.json["resultType"] == "error", r
    assert r.json["data"]["code"] == code, r
    return r.json["data"]


def test_generic_result_with_metrics(server):
    r = server.execute(jit_request(S, "add", {"a": 2, "b": 3}, request_id="req-42"))
    assert r.status == 200
    assert r.json["requestId"] == "req-42"
    assert r.json["resultType"] == "generic"
    assert r.json["data"] == {"sum": 5}
    names = {m["name"]: m for m in r.json["metrics"]}
    for name in ("sandbox.duration", "sandbox.cpu_time", "sandbox.memory_peak",
                 "sandbox.queue_wait", "mcp.calls"):
        assert name in names, name
    assert names["sandbox.duration"]["unit"] == "ms" and names["sandbox.duration"]["value"] > 0
    assert names["sandbox.memory_peak"]["unit"] == "By" and names["sandbox.memory_peak"]["value"] > 0
    assert names["mcp.calls"]["value"] >= 0
    assert r.json["verdict"]["status"] == "OK"


def test_function_with_one_parameter_gets_request_data(server):
    assert data(server.execute(jit_request(S, "one_param"))) == {"source": "http"}


def test_function_without_parameters(server):
    assert data(server.execute(jit_request(S, "no_param"))) == "no parameters"


def test_context_passed_to_function(server):
    ctx = data(server.execute(jit_request(S, "echo_context", request_id="rid-7")))
    assert ctx["appId"] == "testapp"
    assert ctx["componentId"] == "c1"
    assert ctx["requestId"] == "rid-7"
    assert ctx["traceId"] == "t-1"
    assert ctx["taskDetails"]["function"] == "echo_context"


def test_prints_come_back_without_corrupting_the_result(server):
    r = server.execute(jit_request(S, "prints"))
    assert r.json["data"] == {"printed": True}
    assert r.json["stdout"] == "to stdout\n"
    assert r.json["stderr"] == "to stderr\n"


def test_http_response(server):
    r = server.execute(jit_request(S, "http_ok"))
    assert r.json["resultType"] == "httpResponse"
    assert r.json["data"] == {"statusCode": 201, "headers": {"X-Test": "yes"},
                              "body": {"created": True}, "bodyEncoding": "utf-8"}


def test_http_response_bytes_body_is_base64(server):
    d = data(server.execute(jit_request(S, "http_bytes")))
    assert d["bodyEncoding"] == "base64"
    assert base64.b64decode(d["body"]) == b"\x00\x01binary\xff"
    assert d["headers"] == {}


def test_http_response_text_body(server):
    d = data(server.execute(jit_request(S, "http_text")))
    assert d == {"statusCode": 404, "headers": {}, "body": "not here", "bodyEncoding": "utf-8"}


def test_status_code_out_of_range_is_invalid_result(server):
    error(server.execute(jit_request(S, "bad_status")), "INVALID_RESULT")


def test_application_error_has_type_message_traceback(server):
    d = error(server.execute(jit_request(S, "raises", {"n": 7})), "APPLICATION_ERROR")
    assert d["details"]["type"] == "ValueError"
    assert d["details"]["message"] == "bad value 7"
    tb = d["details"]["traceback"]
    assert "Traceback (most recent call last)" in tb
    assert 'File "handlers/basic.py"' in tb and "in inner" in tb
    assert "raise ValueError" in tb  # source lines are shown
    assert "/sandboxd/runtime" not in tb  # the runtime's own frames are hidden
    assert "stderr" in d["details"]


def test_syntax_error_reports_line_and_column(server):
    d = error(server.execute(jit_request("handlers/syntax_error.py", "broken")), "APPLICATION_ERROR")
    assert d["details"]["type"] == "SyntaxError"
    assert d["details"]["line"] == 1
    assert d["details"]["column"] >= 1


def test_error_at_import_is_application_error(server):
    d = error(server.execute(jit_request("handlers/import_error.py", "fn")), "APPLICATION_ERROR")
    assert d["details"]["type"] == "RuntimeError"
    assert "fails at import" in d["message"]


def test_non_utf8_script_is_application_error(server):
    d = error(server.execute(jit_request("handlers/not_utf8.py", "latin")), "APPLICATION_ERROR")
    assert "UTF-8" in d["message"]


def test_script_not_found(server):
    d = error(server.execute(jit_request("handlers/nope.py", "f")), "SCRIPT_NOT_FOUND")
    assert d["details"]["script"] == "handlers/nope.py"


def test_function_not_found_lists_available(server):
    d = error(server.execute(jit_request(S, "missing_fn")), "FUNCTION_NOT_FOUND")
    assert "add" in d["details"]["available"]


def test_not_serialisable_result_is_invalid_result(server):
    d = error(server.execute(jit_request(S, "not_json")), "INVALID_RESULT")
    assert d["details"]["type"] == "dict"
    assert "set" in d["message"]


def test_nan_is_invalid_result(server):
    error(server.execute(jit_request(S, "nan")), "INVALID_RESULT")


def test_none_result(server):
    r = server.execute(jit_request(S, "returns_none"))
    assert r.json["resultType"] == "generic" and r.json["data"] is None


def test_async_handler_is_awaited(server):
    assert data(server.execute(jit_request(S, "async_handler"))) == "awaited"


def test_timeout_kills_and_reports(server):
    d = error(server.execute(jit_request(S, "sleep_forever", timeoutMs=500)), "TIMEOUT")
    assert d["details"]["timeoutMs"] == 500


def test_cpu_bound_loop_times_out(server):
    r = server.execute(jit_request(S, "busy_loop", timeoutMs=700))
    error(r, "TIMEOUT")
    assert r.json["verdict"]["status"] == "TIMEOUT"
    assert r.json["verdict"]["wallMs"] < 5000


def test_memory_limit(server):
    r = server.execute(jit_request(S, "memory_bomb", memoryMb=64))
    d = error(r, "MEMORY_LIMIT")
    assert d["details"]["memoryMb"] == 64
    assert r.json["verdict"]["status"] == "MEMORY_LIMIT"


def test_output_limit(server):
    r = server.execute(jit_request(S, "output_flood"))
    d = error(r, "OUTPUT_LIMIT")
    assert r.json["verdict"]["truncated"] is True
    assert 0 < len(d["details"]["stdout"]) <= 1024 * 1024


def test_killed_by_signal(server):
    r = server.execute(jit_request(S, "crash"))
    d = error(r, "KILLED")
    assert d["details"]["signal"] == 11
    assert r.json["verdict"]["signalName"] == "SIGSEGV"


def test_exit_without_result(server):
    r = server.execute(jit_request(S, "exit_early"))
    d = error(r, "APPLICATION_ERROR")
    assert d["details"]["exitCode"] == 3
    assert r.json["verdict"] == {**r.json["verdict"], "status": "EXITED", "exitCode": 3}


def test_nothing_leaks_between_executions(server):
    first = data(server.execute(jit_request(S, "write_tmp", {"value": "secret"})))
    second = data(server.execute(jit_request(S, "write_tmp", {"value": "other"})))
    assert first == {"existed": False}
    assert second == {"existed": False}


def test_runs_isolated(server):
    d = data(server.execute(jit_request(S, "identity")))
    assert d == {"uid": 65534, "pid": 1, "cwd": "/tmp"}


def test_timeout_is_clamped_to_server_maximum(make_server):
    s = make_server("--max-timeout-ms", "600", "--pool-size", "1")
    r = s.execute(jit_request(S, "sleep_forever", timeoutMs=3_600_000))
    d = error(r, "TIMEOUT")
    assert d["details"]["timeoutMs"] == 600


def test_memory_is_clamped_to_server_maximum(make_server):
    s = make_server("--max-memory-mb", "64", "--pool-size", "1")
    r = s.execute(jit_request(S, "memory_bomb", memoryMb=100000))
    d = error(r, "MEMORY_LIMIT")
    assert d["details"]["memoryMb"] == 64


def test_cold_path_without_pool(make_server):
    s = make_server("--pool-size", "0")
    r = s.execute(jit_request(S, "add", {"a": 1, "b": 1}))
    assert r.json["data"] == {"sum": 2}
    assert s.health()["pool"]["enabled"] is False
    metrics = {m["name"]: m["value"] for m in r.json["metrics"]}
    assert metrics["sandbox.pool_hit"] == 0


def test_adaptive_timeout_from_history(make_server):
    s = make_server("--pool-size", "2", "--default-timeout-ms", "20000")
    for _ in range(5):
        r = s.execute(jit_request(S, "fast_then_slow", {}))
        assert r.json["data"] == "quick"
    assert r.json["verdict"]["timeoutRule"] == "default"  # history still too short
    start = time.time()
    r = s.execute(jit_request(S, "fast_then_slow", {"hang": True}))
    elapsed = time.time() - start
    d = error(r, "TIMEOUT")
    assert r.json["verdict"]["timeoutRule"] == "adaptive"
    assert d["details"]["timeoutMs"] == 1000  # 4 x p95 + 100 ms, floored at 1 s
    assert elapsed < 5  # not the 20 s default
    r = s.execute(jit_request(S, "fast_then_slow", {"hang": True}, timeoutMs=1500))
    assert r.json["verdict"]["timeoutRule"] == "requested"
    assert error(r, "TIMEOUT")["details"]["timeoutMs"] == 1500
