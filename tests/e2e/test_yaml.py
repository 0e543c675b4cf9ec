# SPDX-License-Identifier: MIT
"""One YAML dialect (docs/WORKFLOWS.md "The YAML dialect"): workflows and LLM templates read
YAML the same way, by the YAML 1.2 core schema — checked here against an independent oracle
with a seeded set of a few hundred scalars — duplicate keys are errors naming the line, and
an alias cannot make a small document expensive (bytes are counted, nothing is copied)."""
import math
import random
import re
import struct

import pytest

APP = "yamlapp"
SEED = 1202

# The YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), written out
# independently of sandboxd's loader.
CORE = [
    (r"null|Null|NULL|~", lambda s: None),
    (r"true|True|TRUE", lambda s: True),
    (r"false|False|FALSE", lambda s: False),
    (r"[-+]?[0-9]+", lambda s: int(s, 10)),
    (r"0o[0-7]+", lambda s: int(s[2:], 8)),
    (r"0x[0-9a-fA-F]+", lambda s: int(s[2:], 16)),
    (r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", float),
]


def core_value(text):
    for pattern, convert in CORE:
        if re.fullmatch(pattern, text):
            return convert(text)
    return text


def scalars():
    """(YAML text, value) pairs: random numbers in every notation, the YAML 1.1 traps, and
    quoted forms (always strings)."""
    rng = random.Random(SEED)
    texts = ["yes", "no", "on", "off", "y", "n", "Yes", "NO", "On", "1:30", "190:20:30", "017",
             "0o17", "0x1F", "0x-5", "1_000", "0b101", ".5", "1.", "1e3", "-0", "+.5e1", "~",
             "null", "Null", "NULL", "true", "True", "TRUE", "tRUE", "false", "2001-12-14",
             "<<", "=", "0x7FFFFFFFFFFFFFFF", "-9223372036854775808", "3.141592653589793"]
    while len(texts) < 300:
        kind = rng.randrange(6)
        n = rng.randint(0, (1 << 63) - 1) >> rng.randrange(63)
        if kind == 0:
            texts.append(rng.choice(["", "-", "+"]) + str(n))
        elif kind == 1:
            texts.append(rng.choice(["0x%x", "0x%X", "0o%o", "00%d"]) % n)
        else:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if kind == 2 and not (math.isnan(v) or math.isinf(v)):
                texts.append(repr(v))
            else:
                v = rng.uniform(-1, 1) * 10.0 ** rng.randrange(-30, 30)
                texts.append(rng.choice(["%r", "%.17g", "%.3e", "%.6f", "%g"]) % v)
    pairs = [(t, core_value(t)) for t in texts]
    pairs += [("'%s'" % t, t) for t in rng.sample(texts, 40)]
    return pairs


def block_list(texts, indent, prefix=""):
    return "".join("%s- %s%s\n" % (" " * indent, prefix, t) for t in texts)


@pytest.fixture
def fw(framework):
    framework.llm = lambda p: {"completion": p["prompt"], "usage": {"promptTokens": 1,
                                                                      "completionTokens": 1}}
    return framework


def execute(server, fw, handler, **context):
    return server.execute({"requestId": "y-1", "requestData": {"source": "test", "body": {}},
                           "context": {"appId": APP, "handlerType": handler,
                                       "mcp_endpoint": fw.url, **context}})


def same(pairs, got, where):
    assert len(got) == len(pairs), where
    for (text, want), value in zip(pairs, got):
        assert type(value) is type(want) and value == want, \
            "%s: YAML %r should be %r, came back as %r" % (where, text, want, value)


def test_property_workflow_reads_the_core_schema(server, fw):
    pairs = scalars()
    doc = ("startAt: out\nsteps:\n  out:\n    type: control\n    end: true\n    output:\n" +
           block_list([t for t, _ in pairs], 6))
    fw.add(APP, "flows/scalars.yaml", doc)
    r = execute(server, fw, "WORKFLOW", workflowInfo={"workflowId": "flows/scalars.yaml"})
    assert r.status == 200 and r.json["resultType"] == "generic", r
    same(pairs, r.json["data"], "workflow")


def test_property_templates_read_yaml_like_workflows(server, fw):
    """The template's outputSchema pins each scalar with const; the completion is the oracle's
    values, so validation passes only if the template's YAML gave the same values."""
    pairs = scalars()
    doc = ("template: '{{ input | tojson }}'\noutputSchema:\n  type: array\n  items: false\n"
           "  prefixItems:\n" + block_list([t for t, _ in pairs], 4, "const: "))
    fw.add(APP, "prompts/scalars.yaml", doc)
    r = execute(server, fw, "LLM", taskDetails={"promptTemplate": "prompts/scalars.yaml",
                                                "input": [v for _, v in pairs]})
    assert r.status == 200, r
    if r.json["resultType"] == "error":
        d = r.json["data"]
        at = re.match(r"\$\[(\d+)\]", d["details"].get("path", ""))
        culprit = pairs[int(at.group(1))] if at else None
        pytest.fail("template read %r differently: %s" % (culprit, d["message"]))
    same(pairs, r.json["data"], "template")


@pytest.mark.parametrize("handler", ["WORKFLOW", "LLM"])
def test_duplicate_keys_are_errors_naming_the_line(server, fw, handler):
    if handler == "WORKFLOW":
        fw.add(APP, "flows/dup.yaml", "startAt: a\nsteps:\n  a: {type: control, end: true}\n"
                                      "startAt: b\n")
        r = execute(server, fw, handler, workflowInfo={"workflowId": "flows/dup.yaml"})
        code = "WORKFLOW_ERROR"
    else:
        fw.add(APP, "prompts/dup.yaml", "template: a\nmodel: x\ntemplate: b\n")
        r = execute(server, fw, handler, taskDetails={"promptTemplate": "prompts/dup.yaml"})
        code = "TEMPLATE_ERROR"
    d = r.json["data"]
    assert d["code"] == code, d
    want = "duplicate key 'startAt' at line 4" if handler == "WORKFLOW" else \
        "duplicate key 'template' at line 3"
    assert want in d["message"], d["message"]


def test_yaml_1_1_values_in_a_template_follow_1_2(server, fw):
    """PyYAML read these as True, 15, '0o17' and 90 in templates; workflows never did."""
    fw.add(APP, "prompts/v11.yaml", "template: '{{ input | tojson }}'\noutputSchema:\n"
                                    "  const: {a: yes, b: 017, c: 0o17, d: 1:30}\n")
    r = execute(server, fw, "LLM", taskDetails={"promptTemplate": "prompts/v11.yaml",
                                                "input": {"a": "yes", "b": 17, "c": 15,
                                                          "d": "1:30"}})
    assert r.json["resultType"] == "generic", r


def run_document(server, fw, handler, name, doc):
    """doc, completed as a workflow (one control step) or as a template, run by handler:
    (the response, the error code a bad document gets)."""
    if handler == "WORKFLOW":
        fw.add(APP, "flows/%s.yaml" % name, doc + "startAt: a\nsteps: {a: {type: control, "
                                                 "end: true}}\n")
        return (execute(server, fw, handler, workflowInfo={"workflowId": "flows/%s.yaml" % name}),
                "WORKFLOW_ERROR")
    fw.add(APP, "prompts/%s.yaml" % name, doc + "template: x\n")
    return (execute(server, fw, handler, taskDetails={"promptTemplate": "prompts/%s.yaml" % name}),
            "TEMPLATE_ERROR")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.parametrize("handler", ["WORKFLOW", "LLM"])
def test_alias_bomb_by_bytes_is_refused_cheaply(server, fw, handler):
    """A 1.07 MB document: a 1 MiB string and 4000 aliases of it. It expanded to 4 GB in
    sandboxd before (13.8 s, 3.9 GB kept afterwards)."""
    doc = 'blob: &x "%s"\nlist:\n%s' % ("A" * (1 << 20), "- *x\n" * 4000)
    before = rss_kb(server.proc.pid)
    r, code = run_document(server, fw, handler, "bomb", doc)
    d = r.json["data"]
    assert d["code"] == code and "expands beyond" in d["message"] and "bytes" in d["message"], d
    grown_mb = (rss_kb(server.proc.pid) - before) / 1024
    assert grown_mb < 200, "sandboxd grew by %.0f MB" % grown_mb


@pytest.mark.parametrize("handler", ["WORKFLOW", "LLM"])
def test_aliases_cannot_nest_beyond_the_depth_cap(server, fw, handler):
    """Found by fuzz_yaml: a chain of anchors, each 60 levels deep holding the one before,
    expanded to a document 2700 levels deep, which no JSON parser on the way (jansson,
    Python's json in the sandbox, the client's) reads back. The 64-level cap now counts
    what an alias repeats."""
    lines = ["a0: &a0 %sx%s" % ("[" * 60, "]" * 60)]
    lines += ["a%d: &a%d %s*a%d%s" % (i, i, "[" * 60, i - 1, "]" * 60) for i in range(1, 45)]
    r, code = run_document(server, fw, handler, "deep", "\n".join(lines) + "\n")
    assert r.json is not None, "the answer cannot be read as JSON: %r" % r.raw[:200]
    d = r.json["data"]
    assert d["code"] == code and "alias *a0 at line 2 nests deeper than 64 levels" in \
        d["message"], d


def test_values_json_cannot_carry_are_errors(server, fw):
    fw.add(APP, "flows/inf.yaml", "startAt: a\nsteps:\n  a: {type: control, end: true, "
                                  "output: .inf}\n")
    r = execute(server, fw, "WORKFLOW", workflowInfo={"workflowId": "flows/inf.yaml"})
    d = r.json["data"]
    assert d["code"] == "WORKFLOW_ERROR" and ".inf at line 3 is not a finite number" in \
        d["message"], d
