# SPDX-License-Identifier: MIT
"""YAML workflows (CONTRACT §8): validation before anything runs, jit/llm/mcp/control steps,
every transition operator, the step limit, step-by-step mode."""
import json

import pytest

APP = "wfapp"

EXAMPLE = """\
startAt: classify
steps:
  classify:
    type: llm
    promptTemplate: prompts/classify.yaml
    inputMapping: {text: $.requestData.body.text}
    transitions:
      - when: {path: $.steps.classify.output.label, equals: spam}
        next: reject
      - next: store
  store:
    type: mcp
    tool: core.state.setRuntimeValue
    params: {key: last, value: $.steps.classify.output}
    next: done
  reject:
    type: control
    output: {statusCode: 422, body: {error: spam}}
    end: true
  done:
    type: jit
    script: handlers/finish.py
    function: finish
    inputMapping: {label: $.steps.classify.output.label}
    end: true
"""

CLASSIFY = """\
template: 'Classify: {{ input.text }}'
outputSchema:
  type: object
  required: [label]
  properties: {label: {type: string}}
"""

FINISH = """\
def finish(request, context):
    return {"label": request["label"], "step": context["stepId"], "workflow": context["workflowId"]}


def fail(request, context):
    raise RuntimeError("step exploded")
"""


def classifier(calls):
    def llm(params):
        calls.append(params)
        label = "spam" if "buy now" in params["prompt"] else "ham"
        return {"completion": json.dumps({"label": label}), "usage": {"promptTokens": 3,
                                                                      "completionTokens": 2}}

    return llm


@pytest.fixture
def fw(framework):
    framework.llm_calls = []
    framework.llm = classifier(framework.llm_calls)
    framework.add(APP, "prompts/classify.yaml", CLASSIFY)
    framework.add(APP, "handlers/finish.py", FINISH)
    framework.add(APP, "flows/example.yaml", EXAMPLE)
    return framework


def wf_request(fw, workflow, body=None, request_id="wf-1", **info):
    return {"requestId": request_id,
            "requestData": {"source": "http", "body": body if body is not None else {}},
            "context": {"appId": APP, "traceId": "trace-%s" % request_id, "handlerType": "WORKFLOW",
                        "mcp_endpoint": fw.url,
                        "workflowInfo": {"workflowId": workflow, **info}}}


def test_example_spam_branch(server, fw):
    r = server.execute(wf_request(fw, "flows/example.yaml", {"text": "buy now!!!"}))
    assert r.status == 200, r
    assert r.json["resultType"] == "httpResponse"
    assert r.json["data"] == {"statusCode": 422, "headers": {}, "body": {"error": "spam"},
                              "bodyEncoding": "utf-8"}
    assert [s["stepId"] for s in r.json["workflow"]["steps"]] == ["classify", "reject"]
    assert fw.tool_calls("core.state.setRuntimeValue") == []
    metrics = {m["name"]: m["value"] for m in r.json["metrics"]}
    assert metrics["workflow.steps"] == 2 and metrics["llm.tokens.prompt"] == 3


def test_example_ham_branch(server, fw):
    r = server.execute(wf_request(fw, "flows/example.yaml", {"text": "hello friend"}))
    assert r.json["resultType"] == "generic", r
    assert r.json["data"] == {"label": "ham", "step": "done", "workflow": "flows/example.yaml"}
    assert [s["stepId"] for s in r.json["workflow"]["steps"]] == ["classify", "store", "done"]
    assert fw.tool_calls("core.state.setRuntimeValue")[-1] == {"key": "last", "value": {"label": "ham"}}


ROUTER = """\
startAt: route
steps:
  route:
    type: control
    output: $.requestData.body
    transitions:
      - when: %s
        next: yes
      - next: no
  yes: {type: control, output: "yes", end: true}
  no: {type: control, output: "no", end: true}
"""


@pytest.mark.parametrize("cond,body,expect", [
    ("{path: $.steps.route.output.v, equals: 3}", {"v": 3}, "yes"),
    ("{path: $.steps.route.output.v, equals: 3}", {"v": 4}, "no"),
    ("{path: $.steps.route.output.v, equals: 3}", {"v": 3.0}, "yes"),
    ("{path: $.steps.route.output.v, notEquals: a}", {"v": "b"}, "yes"),
    ("{path: $.steps.route.output.v, notEquals: a}", {"v": "a"}, "no"),
    ("{path: $.steps.route.output.v, lessThan: 10}", {"v": 2}, "yes"),
    ("{path: $.steps.route.output.v, lessThan: 10}", {"v": 12}, "no"),
    ("{path: $.steps.route.output.v, greaterThan: 10}", {"v": 12}, "yes"),
    ("{path: $.steps.route.output.v, greaterThan: b}", {"v": "c"}, "yes"),
    ("{path: $.steps.route.output.v, exists: true}", {"v": None}, "yes"),
    ("{path: $.steps.route.output.v, exists: true}", {}, "no"),
    ("{path: $.steps.route.output.v, exists: false}", {}, "yes"),
    ("{path: $.steps.route.output.v, in: [a, b, c]}", {"v": "b"}, "yes"),
    ("{path: $.steps.route.output.v, in: [a, b, c]}", {"v": "z"}, "no"),
    ("{path: '$.steps.route.output.items[1].n', equals: 7}", {"items": [{"n": 1}, {"n": 7}]}, "yes"),
    ("{and: [{path: $.requestData.body.a, equals: 1}, {path: $.requestData.body.b, equals: 2}]}",
     {"a": 1, "b": 2}, "yes"),
    ("{and: [{path: $.requestData.body.a, equals: 1}, {path: $.requestData.body.b, equals: 2}]}",
     {"a": 1, "b": 3}, "no"),
    ("{or: [{path: $.requestData.body.a, equals: 1}, {path: $.requestData.body.b, equals: 2}]}",
     {"a": 0, "b": 2}, "yes"),
    ("{not: [{path: $.requestData.body.a, equals: 1}]}", {"a": 1}, "no"),
    ("{not: {path: $.requestData.body.a, equals: 1}}", {"a": 2}, "yes"),
    ("{path: $.context.traceId, equals: trace-wf-1}", {}, "yes"),
    ("{path: $.state.mode, equals: strict}", {}, "yes"),
])
def test_transition_operators(server, fw, cond, body, expect):
    fw.add(APP, "flows/router.yaml", ROUTER % cond)
    r = server.execute(wf_request(fw, "flows/router.yaml", body, state={"mode": "strict"}))
    assert r.json["data"] == expect, r


def test_mcp_step_params_and_control_passthrough(server, fw):
    fw.add(APP, "flows/mcp.yaml", """\
startAt: save
steps:
  save:
    type: mcp
    tool: core.state.setRuntimeValue
    params: {key: "k-{{not templated}}", value: {from: $.requestData.body.x, list: [$.state.s, 2]}}
    next: pass
  pass:
    type: control
    inputMapping: {echo: $.steps.save.output}
    end: true
""")
    r = server.execute(wf_request(fw, "flows/mcp.yaml", {"x": 41}, state={"s": 1}))
    assert fw.tool_calls("core.state.setRuntimeValue")[-1] == {
        "key": "k-{{not templated}}", "value": {"from": 41, "list": [1, 2]}}
    assert r.json["data"] == {"echo": {"ok": True}}


@pytest.mark.parametrize("doc,step,words", [
    ("startAt: a\nsteps:\n  a: {type: control, next: ghost}\n", "a", "names no step"),
    ("startAt: ghost\nsteps:\n  a: {type: control, end: true}\n", None, "startAt"),
    ("startAt: a\nsteps:\n  a: {type: shell, end: true}\n", "a", "unknown type"),
    ("startAt: a\nsteps:\n  a: {type: control}\n", "a", "exactly one of"),
    ("startAt: a\nsteps:\n  a: {type: control, next: b}\n  b: {type: control, next: a}\n", "a",
     "no end is reachable"),
    ("startAt: a\nsteps:\n  a:\n    type: control\n    transitions:\n      - {when: {path: $.x, equals: 1}, next: b}\n"
     "      - {next: c}\n  b: {type: control, next: b}\n  c: {type: control, end: true}\n", "b",
     "endless loop"),
    ("startAt: a\nsteps:\n  a: {type: jit, script: ../x.py, function: f, end: true}\n", "a", ".."),
    ("startAt: a\nsteps:\n  a:\n    type: control\n    transitions: [{when: {path: $.x}, next: a}]\n",
     "a", "exactly one of equals"),
    ("[not, a, mapping]\n", None, "mapping"),
    ("startAt: a\nsteps: {a: {type: control, end: true}}\nmaxSteps: 0\n", None, "maxSteps"),
])
def test_invalid_workflows_are_rejected_before_running(server, fw, doc, step, words):
    fw.add(APP, "flows/bad.yaml", doc)
    r = server.execute(wf_request(fw, "flows/bad.yaml"))
    d = r.json["data"]
    assert r.json["resultType"] == "error" and d["code"] == "WORKFLOW_ERROR", r
    assert words in d["message"], d["message"]
    if step:
        assert d["details"]["stepId"] == step
    assert r.json["workflow"]["steps"] == []  # nothing ran
    assert fw.llm_calls == []


# A loop that ends when the request says stop; %s is where a maxSteps line may go.
LOOP = """\
startAt: spin
%ssteps:
  spin:
    type: control
    transitions:
      - when: {path: $.requestData.body.stop, equals: true}
        next: out
      - next: spin
  out: {type: control, end: true}
"""


def test_step_limit_stops_loops(server, fw):
    fw.add(APP, "flows/loop.yaml", LOOP % "maxSteps: 7\n")
    r = server.execute(wf_request(fw, "flows/loop.yaml", {"stop": False}))
    d = r.json["data"]
    assert d["code"] == "WORKFLOW_ERROR" and "limit" in d["message"]
    assert len(r.json["workflow"]["steps"]) == 7
    assert server.execute(wf_request(fw, "flows/loop.yaml", {"stop": True})).json["resultType"] == "generic"


def test_server_step_limit_applies_to_workflows_without_their_own(make_server, fw):
    s = make_server("--pool-size", "1", "--max-workflow-steps", "4")
    fw.add(APP, "flows/default-limit.yaml", LOOP % "")
    r = s.execute(wf_request(fw, "flows/default-limit.yaml", {"stop": False}))
    assert r.json["data"]["code"] == "WORKFLOW_ERROR", r
    assert "ran 4 steps" in r.json["data"]["message"]
    assert len(r.json["workflow"]["steps"]) == 4
    # a workflow's own maxSteps takes precedence
    fw.add(APP, "flows/own-limit.yaml", LOOP % "maxSteps: 9\n")
    r = s.execute(wf_request(fw, "flows/own-limit.yaml", {"stop": False}))
    assert len(r.json["workflow"]["steps"]) == 9
    assert s.execute(wf_request(fw, "flows/own-limit.yaml", {"stop": True})).json["resultType"] == "generic"


def test_failing_jit_step_names_the_step(server, fw):
    fw.add(APP, "flows/failing.yaml", """\
startAt: boom
steps:
  boom: {type: jit, script: handlers/finish.py, function: fail, end: true}
""")
    d = server.execute(wf_request(fw, "flows/failing.yaml")).json["data"]
    assert d["code"] == "APPLICATION_ERROR"
    assert d["details"]["stepId"] == "boom" and d["details"]["type"] == "RuntimeError"
    assert "step exploded" in d["message"]


def test_step_by_step_mode(server, fw):
    first = server.execute(wf_request(fw, "flows/example.yaml", {"text": "hello"}, request_id="s1",
                                      stepId="classify", runId="run-42"))
    assert first.json["resultType"] == "workflowStep"
    assert first.json["data"] == {"stepId": "classify", "status": "completed",
                                  "output": {"label": "ham"}, "nextStep": "store", "end": False}
    second = server.execute(wf_request(fw, "flows/example.yaml", {"text": "hello"}, request_id="s2",
                                       stepId="store", runId="run-42"))
    assert second.json["data"]["nextStep"] == "done"
    # the store step used the classify output, which came back from core.state
    stores = [c for c in fw.tool_calls("core.state.setRuntimeValue") if c["key"] == "last"]
    assert stores == [{"key": "last", "value": {"label": "ham"}}]
    third = server.execute(wf_request(fw, "flows/example.yaml", {"text": "hello"}, request_id="s3",
                                      stepId="done", runId="run-42"))
    assert third.json["data"]["end"] is True and third.json["data"]["nextStep"] is None
    assert third.json["data"]["output"]["label"] == "ham"
    bad = server.execute(wf_request(fw, "flows/example.yaml", stepId="nope"))
    assert bad.json["data"]["code"] == "WORKFLOW_ERROR"


def test_yaml_bombs_are_refused(server, fw):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append("a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)))
    fw.add(APP, "flows/bomb.yaml", "\n".join(lines) + "\nstartAt: a\nsteps: {a: {type: control, end: true}}\n")
    d = server.execute(wf_request(fw, "flows/bomb.yaml")).json["data"]
    assert d["code"] == "WORKFLOW_ERROR" and "expand" in d["message"]


def test_workflow_not_found_and_validation(server, fw):
    d = server.execute(wf_request(fw, "flows/missing.yaml")).json["data"]
    assert d["code"] == "SCRIPT_NOT_FOUND"
    body = wf_request(fw, "flows/example.yaml")
    del body["context"]["workflowInfo"]
    r = server.execute(body)
    assert r.status == 400 and r.json["error"]["field"] == "context.workflowInfo"


def big_chain(n=1000, transitions=30):
    """The shape that cost 102 s of host CPU per request: n steps in a chain, each with
    `transitions` transitions (~400 KB, just under the 100 000-node cap); startAt is the last
    step, so running it is one step."""
    lines = ["startAt: s%d" % (n - 1), "steps:"]
    for i in range(n - 1):
        lines.append("  s%d:\n    type: control\n    transitions:" % i)
        lines += ["      - {next: s%d}" % (i + 1)] * transitions
    lines.append("  s%d: {type: control, output: done, end: true}" % (n - 1))
    return "\n".join(lines) + "\n"


def test_validation_is_linear_and_cached_by_content(server, fw):
    fw.add(APP, "flows/big.yaml", big_chain())
    before = server.health()["workflows"]
    # The HTTP timeout is the hang guard: the old validation took ~100 s for this document.
    r = server.execute(wf_request(fw, "flows/big.yaml"), timeout=60)
    assert r.status == 200 and r.json["data"] == "done", r
    fw.add(APP, "flows/same.yaml", big_chain())  # another name, the same bytes
    r = server.execute(wf_request(fw, "flows/same.yaml"), timeout=60)
    assert r.json["data"] == "done", r
    after = server.health()["workflows"]
    assert after["misses"] == before["misses"] + 1 and after["hits"] == before["hits"] + 1, after


def test_transitions_per_step_are_capped(server, fw):
    fw.add(APP, "flows/wide.yaml", big_chain(n=3, transitions=65))
    d = server.execute(wf_request(fw, "flows/wide.yaml")).json["data"]
    assert d["code"] == "WORKFLOW_ERROR" and "has 65 transitions, at most 64" in d["message"], d
    assert d["details"]["stepId"] == "s0"


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


DOUBLING = """\
startAt: a
maxSteps: 40
steps:
  a:
    type: control
    output: [$.steps.a.output, $.steps.a.output]
    transitions:
      - when: {path: $.steps.a.output, equals: never}
        next: b
      - next: a
  b: {type: control, end: true}
"""


def test_references_cannot_grow_a_value_without_bound(server, fw):
    """Found by fuzz_workflow: a control step holding its own output twice doubled it at each
    step, on the host (20 steps took 200 MB and 2.6 s; 40 would take the host's memory).
    What references copy is bounded per execution."""
    fw.add(APP, "flows/doubling.yaml", DOUBLING)
    before = rss_kb(server.proc.pid)
    r = server.execute(wf_request(fw, "flows/doubling.yaml"))
    d = r.json["data"]
    assert d["code"] == "WORKFLOW_ERROR" and "exceed 64 MiB" in d["message"], d
    assert d["details"]["stepId"] == "a" and d["details"]["limitBytes"] == 64 << 20, d
    grown_mb = (rss_kb(server.proc.pid) - before) / 1024
    assert grown_mb < 400, "sandboxd grew by %.0f MB" % grown_mb
