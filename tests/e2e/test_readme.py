# SPDX-License-Identifier: MIT
"""The README's curl examples, sent as written against the demo app in examples/, answer
as the README says."""
import json
import pathlib
import re
import subprocess

import pytest

from harness import BIN, Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BODIES = {json.loads(b)["requestId"]: json.loads(b)
          for b in re.findall(r"-d '(\{.*?\})'\n", README, re.S)}


@pytest.fixture(scope="module")
def demo():
    s = Server("--pool-size", "2", definitions=ROOT / "examples" / "apps")
    yield s
    s.stop()


def test_readme_has_the_examples():
    assert set(BODIES) == {"r-1", "r-2", "r-3", "r-4", "r-5", "r-6", "r-7"}


def test_add(demo):
    r = demo.execute(BODIES["r-1"])
    assert r.json["resultType"] == "generic"
    assert r.json["data"] == {"sum": 5, "app": "demo"}


def test_hello(demo):
    r = demo.execute(BODIES["r-2"])
    assert r.json["resultType"] == "httpResponse"
    assert r.json["data"] == {"statusCode": 200, "headers": {"Content-Type": "text/plain"},
                              "body": "Hello, Ada!", "bodyEncoding": "utf-8"}


def test_fail(demo):
    d = demo.execute(BODIES["r-3"]).json["data"]
    assert d["code"] == "APPLICATION_ERROR"
    assert d["message"] == "ZeroDivisionError: division by zero"
    assert d["details"]["type"] == "ZeroDivisionError"


def test_report(demo):
    r = demo.execute(BODIES["r-4"])
    assert r.json["data"] == {"count": 5, "mean": 2.8, "max": 5}
    assert r.json["stdout"] == "summarizing 5 values\n"


def test_executor(demo):
    assert demo.execute(BODIES["r-5"]).json["data"] == {"result": 42, "stdout": "", "stderr": ""}


def test_llm_template(demo):
    r = demo.execute(BODIES["r-6"])
    assert r.json["resultType"] == "generic"
    assert r.json["data"] == "Summarise in one sentence for demo:\nSandboxes isolate code."


def test_workflow(demo):
    r = demo.execute(BODIES["r-7"])
    assert r.json["resultType"] == "httpResponse"
    assert r.json["data"]["statusCode"] == 422
    assert r.json["data"]["body"] == {"error": "spam"}


def test_cli_example():
    p = subprocess.run([BIN, "run", str(ROOT / "examples/apps/demo/handlers/add.py"),
                        "--function", "add", "--input", '{"body": {"a": 2, "b": 3}}'],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"sum": 5, "app": "cli"}
