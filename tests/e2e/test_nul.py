# SPDX-License-Identifier: MIT
"""U+0000 is a character JSON carries ("\\u0000", RFC 8259): /execute accepts it in a request,
so every path gives it back as it was — a function's result, session memories, runtime
values of workflows in step mode, answers of MCP servers. Found by the fuzz targets
(fuzz_request, fuzz_state, fuzz_mcp_server): each of these paths refused or dropped it, an
MCP tool result holding it even left its caller waiting until the timeout."""
import json
import os
import pathlib
import shutil
import tempfile

import pytest

from harness import McpHttp, McpStdio, Server, executor_request, jit_request
from mcp_peers import config

TEXT = "a\x00b \x00"

STEPS = """\
startAt: first
steps:
  first: {type: control, output: {kept: "x\\0y", sent: $.requestData.body.text}, next: second}
  second: {type: control, output: $.steps.first.output, end: true}
"""


@pytest.fixture(scope="module")
def apps():
    d = pathlib.Path(tempfile.mkdtemp(prefix="sandboxd-apps-"))
    shutil.copytree(pathlib.Path(__file__).resolve().parent / "apps" / "testapp", d / "testapp")
    (d / "testapp" / "flows").mkdir()
    (d / "testapp" / "flows" / "steps.yaml").write_text(STEPS)
    yield d
    shutil.rmtree(d)


@pytest.fixture(scope="module")
def srv(apps):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(config(), cfg)
    cfg.close()
    s = Server("--pool-size", "2", "--mcp-config", cfg.name, "--no-mcp-discovery",
               "--state-dir", tempfile.mkdtemp(prefix="sandboxd-state-"), definitions=apps)
    yield s
    s.stop()
    os.unlink(cfg.name)


def test_jit_gives_back_what_it_was_given(srv):
    r = srv.execute(jit_request("handlers/basic.py", "one_param_echo", body={"text": TEXT}))
    assert r.status == 200 and r.json["resultType"] == "generic", r
    assert r.json["data"]["body"]["text"] == TEXT


def test_executor_result(srv):
    r = srv.execute(executor_request("def f():\n    return {'s': 'x\\x00y', 'k': ['\\x00']}\n",
                                     functionName="f"))
    assert r.status == 200 and r.json["resultType"] == "generic", r
    assert r.json["data"]["result"] == {"s": "x\x00y", "k": ["\x00"]}


def test_session_memory(srv):
    sid = srv.request("POST", "/v1/sessions", {}).json["sessionId"]
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid,
                    {"code": "save_memory('k', {'v': 'a\\x00b'})\nload_memory('k')['v'] == 'a\\x00b'"})
    assert r.status == 200 and r.json["status"] == "ok", r
    assert r.json["result"] == "True", r.json
    srv.request("DELETE", "/v1/sessions/%s" % sid)


def test_mcp_tool_result_arrives(srv):
    sid = srv.request("POST", "/v1/sessions", {"servers": ["everything"]}).json["sessionId"]
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid,
                    {"code": "r = await mcp_everything.echo(message='a\\x00b')\nr", "timeoutMs": 20000},
                    timeout=60)
    assert r.status == 200 and r.json["status"] == "ok", r
    assert "a\\x00b" in r.json["result"], r.json
    assert r.json["durationMs"] < 10000, r.json  # answered, not waited for until a timeout
    srv.request("DELETE", "/v1/sessions/%s" % sid)


def workflow(step, body=None):
    return {"requestId": "w-1", "requestData": {"source": "test", "body": body or {}},
            "context": {"appId": "testapp", "handlerType": "WORKFLOW", "mcp_endpoint": "local",
                        "workflowInfo": {"workflowId": "flows/steps.yaml", "stepId": step,
                                         "runId": "nul-1"}}}


def test_workflow_step_mode_keeps_the_outputs(srv):
    first = srv.execute(workflow("first", {"text": TEXT}))
    assert first.json["data"]["status"] == "completed", first
    second = srv.execute(workflow("second"))
    assert second.json["data"]["output"] == {"kept": "x\x00y", "sent": TEXT}, second


def check_nul_code_refused(result):
    """Valid JSON: read as such (not a -32700 parse error), and the code is refused by name."""
    assert result["isError"] is True and "NUL" in result["content"][0]["text"], result


def test_mcp_server_reads_it_over_stdio():
    c = McpStdio()
    try:
        check_nul_code_refused(c.call("run_python", {"code": "1\x00+1"}))
    finally:
        c.close()


def test_mcp_server_reads_it_over_http(srv):
    check_nul_code_refused(McpHttp(srv).call("run_python", {"code": "1\x00+1"}))
