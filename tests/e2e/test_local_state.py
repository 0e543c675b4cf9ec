# SPDX-License-Identifier: MIT
"""The embedded "local" framework's core.state (docs/WORKFLOWS.md "Step by step", docs/SECURITY.md),
with each backend of the state store (conftest.py's `store`): every call works on the
request's own app — a workflow of one app cannot read another app's definitions or saved step
state, nor overwrite them — the store is bounded: run ids, keys and values are capped, an app
keeps a bounded number of values and sandboxd's memory stays flat under a flood of run ids —
and a run's saved steps outlive the sandboxd that saved them."""
import pathlib
import shutil
import tempfile

import pytest

import stores
from harness import Server

STEP_FLOW = """\
startAt: first
steps:
  first: {type: control, output: {secret: $.requestData.body.secret}, next: second}
  second: {type: control, output: $.steps.first.output, end: true}
"""

READ_OTHER = """\
startAt: read
steps:
  read:
    type: mcp
    tool: %s
    params: %s
    end: true
"""


@pytest.fixture(scope="module")
def apps():
    d = pathlib.Path(tempfile.mkdtemp(prefix="sandboxd-apps-"))
    (d / "other").mkdir()
    (d / "other" / "secret.py").write_text("PASSWORD = 'hunter2'\n")
    (d / "other" / "flows").mkdir()
    (d / "other" / "flows" / "steps.yaml").write_text(STEP_FLOW)
    (d / "demo" / "flows").mkdir(parents=True)
    cases = {
        "definition": ("core.state.getDefinitionFileContent",
                       "{app_id: other, file_path: secret.py}"),
        "value": ("core.state.getRuntimeValue",
                  "{app_id: other, key: sandboxd/workflow/flows/steps.yaml/run-1}"),
        "overwrite": ("core.state.setRuntimeValue",
                      "{app_id: other, key: sandboxd/workflow/flows/steps.yaml/run-1, "
                      "value: {steps: {first: {output: {secret: forged}}}}}"),
        "own-value": ("core.state.getRuntimeValue",
                      "{key: sandboxd/workflow/flows/steps.yaml/run-1}"),
    }
    for name, (tool, params) in cases.items():
        (d / "demo" / "flows" / ("%s.yaml" % name)).write_text(READ_OTHER % (tool, params))
    (d / "demo" / "flows" / "steps.yaml").write_text(STEP_FLOW)
    yield d
    shutil.rmtree(d)


@pytest.fixture(scope="module")
def srv(apps, store):
    # A small ASan quarantine, so that freed memory is given back and RSS tells growth apart.
    s = Server("--pool-size", "1", *store.args(), definitions=apps,
               env={"ASAN_OPTIONS": "detect_leaks=1:quarantine_size_mb=4"})
    yield s
    s.stop()


def workflow(app, flow, body=None, **info):
    return {"requestId": "w-1", "requestData": {"source": "test", "body": body or {}},
            "context": {"appId": app, "handlerType": "WORKFLOW", "mcp_endpoint": "local",
                        "workflowInfo": {"workflowId": flow, **info}}}


def test_another_apps_definitions_and_values_are_refused(srv):
    # app "other" keeps a step output in the local store (step mode)
    r = srv.execute(workflow("other", "flows/steps.yaml", {"secret": "s3cr3t"}, stepId="first",
                             runId="run-1"))
    assert r.json["data"]["status"] == "completed", r
    for case in ("definition", "value", "overwrite"):
        d = srv.execute(workflow("demo", "flows/%s.yaml" % case)).json["data"]
        assert d["code"] == "MCP_ERROR", (case, d)
        assert "appId" in d["message"] and "hunter2" not in str(d) and "s3cr3t" not in str(d), d
    # demo's own key of the same name is demo's, and empty
    r = srv.execute(workflow("demo", "flows/own-value.yaml"))
    assert r.json["data"] == {"found": False, "value": None}, r
    # other's saved step is intact: its next step still sees the real output
    r = srv.execute(workflow("other", "flows/steps.yaml", stepId="second", runId="run-1"))
    assert r.json["data"]["output"] == {"secret": "s3cr3t"}, r


def test_run_ids_are_capped(srv):
    r = srv.execute(workflow("demo", "flows/steps.yaml", stepId="first", runId="r" * 257))
    assert r.status == 400 and r.json["error"]["field"] == "context.workflowInfo.runId", r


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_the_store_stays_bounded(srv):
    """Step outputs of 1 MiB under 200 run ids: the oldest make room for the newest (64 MiB
    in all), values over 1 MiB are refused, and sandboxd does not grow by what was sent."""
    big = "x" * ((1 << 20) - 100)
    before = rss_kb(srv.proc.pid)
    for i in range(200):
        r = srv.execute(workflow("demo", "flows/steps.yaml", {"secret": big}, stepId="first",
                                 runId="run-%d" % i))
        assert r.json["data"]["status"] == "completed", r
    grown_mb = (rss_kb(srv.proc.pid) - before) / 1024
    # 200 MB were sent; the store holds at most 64 MiB of values
    assert grown_mb < 120, "sandboxd grew by %.0f MB" % grown_mb
    # the oldest runs made room; the newest are there
    r = srv.execute(workflow("demo", "flows/steps.yaml", stepId="second", runId="run-199"))
    assert r.json["data"]["output"] == {"secret": big}, str(r)[:300]
    r = srv.execute(workflow("demo", "flows/steps.yaml", stepId="second", runId="run-0"))
    assert r.json["data"]["output"] is None, str(r)[:300]
    # a value over 1 MiB is refused (the step still answers; the log says why)
    r = srv.execute(workflow("demo", "flows/steps.yaml", {"secret": "y" * (2 << 20)},
                             stepId="first", runId="too-big"))
    r = srv.execute(workflow("demo", "flows/steps.yaml", stepId="second", runId="too-big"))
    assert r.json["data"]["output"] is None


def test_saved_steps_outlive_the_sandboxd_that_saved_them(apps, store):
    """Step one on one sandboxd, step two on the next one of the same store: the state
    directory keeps runtime values across a restart, PostgreSQL for every instance."""
    # A state directory is one process's: this test's own (a database is everyone's).
    own = stores.DirStore() if store.name == "dir" else store
    first = Server("--pool-size", "1", *own.args(), definitions=apps)
    try:
        r = first.execute(workflow("demo", "flows/steps.yaml", {"secret": "kept"},
                                   stepId="first", runId="restart-1"))
        assert r.json["data"]["status"] == "completed", r
    finally:
        first.stop()
    second = Server("--pool-size", "1", *own.args(), definitions=apps)
    try:
        r = second.execute(workflow("demo", "flows/steps.yaml", stepId="second",
                                    runId="restart-1"))
        assert r.json["data"]["output"] == {"secret": "kept"}, r
    finally:
        second.stop()
        if own is not store:
            own.close()
