# SPDX-License-Identifier: MIT
"""LLM prompt templates (CONTRACT §8): fetched from the framework, rendered with real
Jinja2 inside the sandbox, sent to core.llm.generate, validated against outputSchema."""
import json
import re
import time

import pytest

APP = "llmapp"


def deterministic_llm(calls):
    """The completion is whatever follows 'RETURN:' in the prompt; tokens are word counts."""

    def llm(params):
        calls.append(params)
        prompt = params["prompt"]
        if "FAIL-LLM" in prompt:
            return 200, {"error": {"code": "LLM_DOWN", "message": "the model is unavailable"}}
        if "SLOW-LLM" in prompt:
            time.sleep(3)
        m = re.search(r"RETURN:(.*)", prompt, re.S)
        completion = m.group(1).strip() if m else "ok"
        return {"completion": completion, "model": params.get("model") or "fake",
                "usage": {"promptTokens": len(prompt.split()), "completionTokens": len(completion.split())}}

    return llm


@pytest.fixture
def fw(framework):
    framework.llm_calls = []
    framework.llm = deterministic_llm(framework.llm_calls)
    return framework


def llm_request(fw, template, body=None, overrides=None, request_id="llm-1", **task):
    details = {"promptTemplate": template, **task}
    if overrides is not None:
        details["overrides"] = overrides
    return {"requestId": request_id,
            "requestData": {"source": "http", "body": body if body is not None else {}},
            "context": {"appId": APP, "componentId": "summarise", "traceId": "t-9",
                        "handlerType": "LLM", "mcp_endpoint": fw.url, "taskDetails": details}}


SUMMARY = """\
template: |
  Summarise for {{ context.componentId }}: {{ requestData.body.text }}
  RETURN:{{ requestData.body.want }}
system: "You are terse about {{ input.topic }}."
model: small
temperature: 0.2
maxTokens: 256
"""

SCHEMA = """\
template: "Classify: {{ input.text }} RETURN:{{ input.want }}"
outputSchema:
  type: object
  required: [label]
  properties:
    label: {type: string, enum: [spam, ham]}
    score: {type: number}
"""


def data(r):
    assert r.status == 200, r
    return r.json["data"]


def test_render_call_and_tokens(server, fw):
    fw.add(APP, "prompts/summary.yaml", SUMMARY)
    r = server.execute(llm_request(fw, "prompts/summary.yaml",
                                   {"text": "a long story", "want": "short", "topic": "stories"}))
    assert r.json["resultType"] == "generic"
    assert r.json["data"] == "short"
    call = fw.llm_calls[-1]
    assert call["prompt"] == "Summarise for summarise: a long story\nRETURN:short"
    assert call["system"] == "You are terse about stories."
    assert (call["model"], call["temperature"], call["maxTokens"]) == ("small", 0.2, 256)
    assert "responseFormat" not in call
    metrics = {m["name"]: m["value"] for m in r.json["metrics"]}
    assert metrics["llm.tokens.prompt"] == len(call["prompt"].split())
    assert metrics["llm.tokens.completion"] == 1
    assert metrics["llm.calls"] == 1


def test_overrides_merge_over_the_file(server, fw):
    fw.add(APP, "prompts/summary.yaml", SUMMARY)
    server.execute(llm_request(fw, "prompts/summary.yaml", {"text": "x", "want": "y", "topic": "t"},
                               overrides={"temperature": 0.9, "model": "large"}))
    call = fw.llm_calls[-1]
    assert (call["model"], call["temperature"], call["maxTokens"]) == ("large", 0.9, 256)


def test_undefined_variable_is_template_error_with_line(server, fw):
    fw.add(APP, "prompts/undefined.yaml", "template: |\n  first line\n  hello {{ requestData.body.nope.deeper }}\n")
    d = data(server.execute(llm_request(fw, "prompts/undefined.yaml", {})))
    assert d["code"] == "TEMPLATE_ERROR"
    assert d["details"]["line"] == 2
    assert d["details"]["field"] == "template"
    assert fw.llm_calls == []


def test_template_syntax_error(server, fw):
    fw.add(APP, "prompts/syntax.yaml", "template: 'hello {{ oops'\n")
    d = data(server.execute(llm_request(fw, "prompts/syntax.yaml", {})))
    assert d["code"] == "TEMPLATE_ERROR" and d["details"]["reason"] == "syntax error"


def test_invalid_yaml_and_shape(server, fw):
    fw.add(APP, "prompts/bad.yaml", "template: [unclosed\n")
    assert data(server.execute(llm_request(fw, "prompts/bad.yaml")))["code"] == "TEMPLATE_ERROR"
    fw.add(APP, "prompts/notemplate.yaml", "system: hi\n")
    assert data(server.execute(llm_request(fw, "prompts/notemplate.yaml")))["code"] == "TEMPLATE_ERROR"
    fw.add(APP, "prompts/badtemp.yaml", "template: x\ntemperature: hot\n")
    d = data(server.execute(llm_request(fw, "prompts/badtemp.yaml")))
    assert d["code"] == "TEMPLATE_ERROR" and d["details"]["field"] == "temperature"


def test_templates_are_sandboxed(server, fw):
    fw.add(APP, "prompts/evil.yaml",
           "template: \"{{ ''.__class__.__mro__[1].__subclasses__() }}\"\n")
    d = data(server.execute(llm_request(fw, "prompts/evil.yaml")))
    assert d["code"] == "TEMPLATE_ERROR"
    assert fw.llm_calls == []


def test_schema_pass_returns_the_parsed_object(server, fw):
    fw.add(APP, "prompts/classify.yaml", SCHEMA)
    want = json.dumps({"label": "spam", "score": 0.9})
    r = server.execute(llm_request(fw, "prompts/classify.yaml", {"text": "buy now", "want": want}))
    assert r.json["resultType"] == "generic"
    assert r.json["data"] == {"label": "spam", "score": 0.9}
    assert fw.llm_calls[-1]["responseFormat"] == "json"


def test_schema_failure_names_the_path(server, fw):
    fw.add(APP, "prompts/classify.yaml", SCHEMA)
    d = data(server.execute(llm_request(fw, "prompts/classify.yaml",
                                        {"text": "x", "want": json.dumps({"label": "eggs"})})))
    assert d["code"] == "SCHEMA_VALIDATION_FAILED"
    assert d["details"]["path"] == "$.label"
    d = data(server.execute(llm_request(fw, "prompts/classify.yaml",
                                        {"text": "x", "want": json.dumps({"score": 1})})))
    assert d["code"] == "SCHEMA_VALIDATION_FAILED" and d["details"]["path"] == "$"
    assert "label" in d["message"]
    d = data(server.execute(llm_request(fw, "prompts/classify.yaml", {"text": "x", "want": "not json"})))
    assert d["code"] == "SCHEMA_VALIDATION_FAILED" and "not JSON" in d["message"]


def test_llm_endpoint_error_is_mcp_error(server, fw):
    fw.add(APP, "prompts/summary.yaml", SUMMARY)
    d = data(server.execute(llm_request(fw, "prompts/summary.yaml",
                                        {"text": "FAIL-LLM", "want": "x", "topic": "t"})))
    assert d["code"] == "MCP_ERROR"
    assert "the model is unavailable" in d["message"]


def test_llm_timeout_is_mcp_error(make_server, fw):
    s = make_server("--pool-size", "1", "--llm-timeout-ms", "700")
    fw.add(APP, "prompts/summary.yaml", SUMMARY)
    start = time.time()
    d = data(s.execute(llm_request(fw, "prompts/summary.yaml",
                                   {"text": "SLOW-LLM", "want": "x", "topic": "t"})))
    assert d["code"] == "MCP_ERROR" and d["details"]["kind"] == "timeout"
    assert time.time() - start < 2.5


def test_template_not_found(server, fw):
    assert data(server.execute(llm_request(fw, "prompts/none.yaml")))["code"] == "SCRIPT_NOT_FOUND"


def test_validation(server, fw):
    body = llm_request(fw, "../etc/passwd")
    r = server.execute(body)
    assert r.status == 400 and r.json["error"]["field"] == "context.taskDetails.promptTemplate"
    body = llm_request(fw, "prompts/summary.yaml", overrides=[1])
    r = server.execute(body)
    assert r.status == 400 and r.json["error"]["field"] == "context.taskDetails.overrides"


def test_local_framework_echo_model(make_server, tmp_path):
    app = tmp_path / "apps" / "echoapp" / "prompts"
    app.mkdir(parents=True)
    (app / "hello.yaml").write_text("template: 'Hello {{ requestData.body.name }}'\n")
    (app / "json.yaml").write_text("template: '{\"greeting\": \"hi {{ input.name }}\"}'\n"
                                   "outputSchema: {type: object, required: [greeting]}\n")
    s = make_server("--pool-size", "1", definitions=tmp_path / "apps")
    req = {"requestId": "e", "requestData": {"source": "http", "body": {"name": "Ada"}},
           "context": {"appId": "echoapp", "handlerType": "LLM", "mcp_endpoint": "local",
                       "taskDetails": {"promptTemplate": "prompts/hello.yaml"}}}
    assert s.execute(req).json["data"] == "Hello Ada"
    req["context"]["taskDetails"]["promptTemplate"] = "prompts/json.yaml"
    assert s.execute(req).json["data"] == {"greeting": "hi Ada"}


def test_templates_run_in_their_own_warm_pool(server, fw):
    # the template pool's interpreters start with jinja2, yaml and jsonschema imported; the
    # JIT pool's do not carry them
    fw.add(APP, "prompts/summary.yaml", SUMMARY)
    before = server.health()
    assert before["templatePool"]["enabled"] and before["templatePool"]["target"] == 2
    assert data(server.execute(llm_request(fw, "prompts/summary.yaml",
                                           {"text": "x", "want": "y", "topic": "t"}))) == "y"
    after = server.health()
    taken = [p["hits"] + p["misses"] for p in (before["templatePool"], after["templatePool"])]
    assert taken[1] == taken[0] + 1
    assert after["pool"]["hits"] + after["pool"]["misses"] == (before["pool"]["hits"]
                                                                + before["pool"]["misses"])


def test_without_a_template_pool_templates_use_the_main_pool(make_server, fw):
    s = make_server("--pool-size", "2", "--template-pool-size", "0")
    assert s.health()["templatePool"] == {"enabled": False}
    fw.add(APP, "prompts/summary.yaml", SUMMARY)
    before = s.health()["pool"]
    r = s.execute(llm_request(fw, "prompts/summary.yaml", {"text": "x", "want": "y", "topic": "t"}))
    assert data(r) == "y"
    after = s.health()["pool"]
    assert after["hits"] + after["misses"] == before["hits"] + before["misses"] + 1
