# SPDX-License-Identifier: MIT
"""Host-side bounds on what a sandbox sends back (docs/SECURITY.md): exception messages and
tracebacks are cut to the output limit, marked as truncated, before they are answered and
before they are logged — on every path (EXECUTOR, JIT, LLM templates, sessions, MCP
run_python), including a sandbox that forges its own error frame."""
import json

import pytest

from harness import McpStdio, Server, executor_request, jit_request

MB = 1 << 20
MARKER = "\n[... truncated: "
HUGE = 'raise ValueError("A" * 20_000_000)\n'
# User code writing a final frame of its own on the protocol fd, past the runtime's cut.
FORGED = """\
import json, os, struct
body = json.dumps({"type": "error", "code": "APPLICATION_ERROR", "message": "M" * 20_000_000,
                   "details": {"traceback": "T" * 20_000_000, "nested": ["N" * 20_000_000]}})
os.write(3, struct.pack(">I", len(body)) + body.encode())
import time
time.sleep(5)
"""


@pytest.fixture(scope="module")
def srv():
    s = Server("--pool-size", "2")
    yield s
    s.stop()


def assert_capped(text, limit=MB):
    assert len(text.encode()) <= limit, len(text)
    assert MARKER in text and text.endswith(" bytes in all]"), text[-200:]


def assert_error_bounded(r):
    assert r.status == 200, r
    assert len(r.raw) < 5 * MB, "a %d-byte response" % len(r.raw)
    data = r.json["data"]
    assert data["code"] == "APPLICATION_ERROR", data["code"]
    assert_capped(data["message"])
    assert data["details"]["truncated"] is True
    return data


def test_executor_exception_message_is_capped(srv):
    data = assert_error_bounded(srv.execute(executor_request(HUGE)))
    assert data["message"].startswith("ValueError: AAAA")
    assert_capped(data["details"]["message"])
    assert_capped(data["details"]["traceback"])


def test_a_forged_error_frame_is_capped_by_the_host(srv):
    data = assert_error_bounded(srv.execute(executor_request(FORGED)))
    assert data["message"].startswith("MMMM")
    assert_capped(data["details"]["traceback"])
    assert_capped(data["details"]["nested"][0])


def test_jit_exception_message_is_capped_and_the_log_stays_small(framework):
    framework.add("testapp", "handlers/huge.py", "def boom(request):\n    " + HUGE)
    s = Server("--pool-size", "1")
    try:
        data = assert_error_bounded(s.execute(jit_request("handlers/huge.py", "boom",
                                                          endpoint=framework.url)))
        assert data["message"].startswith("ValueError: AAAA")
        logged = [p for p in framework.tool_calls("core.framework.logFrameworkMessage")]
    finally:
        logs = s.logs()
        s.stop()
    assert len(logs) < MB, "the server log took %d bytes" % len(logs)
    assert logged and all(len(p["message"]) < 4096 for p in logged), [len(p["message"])
                                                                         for p in logged]


def test_template_error_message_is_capped(framework):
    framework.add("testapp", "prompts/huge.yaml",
                  "template: \"{{ {}['A' * 20000000] }}\"\n")
    s = Server("--pool-size", "1")
    try:
        r = s.execute({"requestId": "t-1", "requestData": {"source": "http", "body": {}},
                       "context": {"appId": "testapp", "handlerType": "LLM",
                                   "mcp_endpoint": framework.url,
                                   "taskDetails": {"promptTemplate": "prompts/huge.yaml"}}})
    finally:
        s.stop()
    assert r.status == 200 and len(r.raw) < 5 * MB, len(r.raw)
    assert r.json["data"]["code"] == "TEMPLATE_ERROR", r
    assert_capped(r.json["data"]["message"])


FORGED_SESSION = """\
import json, os, struct
body = json.dumps({"type": "execution_done", "id": 1, "status": "error", "result": None,
                   "error": {"type": "X", "message": "M" * 20_000_000, "traceback": ""}})
os.set_blocking(3, True)  # the session runtime keeps its channel non-blocking
os.write(3, struct.pack(">I", len(body)) + body.encode())
"""


@pytest.mark.parametrize("code", [HUGE, FORGED_SESSION], ids=["raised", "forged"])
def test_session_exception_message_is_capped(srv, code):
    sid = srv.request("POST", "/v1/sessions", {}).json["sessionId"]
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    assert r.status == 200 and len(r.raw) < 5 * MB, len(r.raw)
    assert r.json["status"] == "error", r
    assert_capped(r.json["error"]["message"])
    assert r.json["error"]["truncated"] is True
    srv.request("DELETE", "/v1/sessions/%s" % sid)


def test_mcp_run_python_exception_message_is_capped():
    c = McpStdio()
    try:
        result = c.call("run_python", {"code": HUGE})
    finally:
        c.close()
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert len(json.dumps(result)) < 5 * MB, len(json.dumps(result))
    assert MARKER in text
    assert_capped(result["structuredContent"]["error"]["message"])

