# SPDX-License-Identifier: MIT
"""Typed tool stubs in sessions (docs/SESSIONS.md "Tool stubs", CONTRACT §16): real servers
from npm (server-filesystem, server-memory, server-everything) typed from their schemas; names
mapped to the wire and "not sent" as a recording server sees them; hostile schemas that give
parseable files and run nothing; checks before a call leaves and the pre-flight of submitted
code, with the recording server as the witness of what was (not) sent."""
import json
import os
import tempfile

import pytest

from harness import Server
from mcp_peers import codemode_config, recorded


@pytest.fixture(scope="module")
def env():
    d = tempfile.mkdtemp(prefix="sandboxd-stubs-")
    root = os.path.join(d, "files")
    os.mkdir(root)
    with open(os.path.join(root, "a.txt"), "w") as f:
        f.write("one\ntwo\n")
    record = os.path.join(d, "record.jsonl")
    cfg = os.path.join(d, "mcp.json")
    with open(cfg, "w") as f:
        json.dump(codemode_config(record, root, os.path.join(d, "memory.jsonl"), hostile=True), f)
    s = Server("--pool-size", "1", "--mcp-config", cfg, "--no-mcp-discovery",
               "--session-timeout-ms", "20000")
    yield {"srv": s, "record": record, "root": root}
    s.stop()


def session(env, *servers):
    r = env["srv"].request("POST", "/v1/sessions", body={"servers": list(servers)})
    assert r.status == 201, r
    return r.json["sessionId"]


def run(env, sid, code):
    r = env["srv"].request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code})
    assert r.status == 200, r
    return r.json


def ok_json(env, sid, code):
    """Run code that prints one JSON document last; that document."""
    out = run(env, sid, code)
    assert out["status"] == "ok", out
    return json.loads(out["stdout"].strip().splitlines()[-1])


def calls_of(env, tool):
    return [c["arguments"] for c in recorded(env["record"]) if c["tool"] == tool]


# ---- the real servers' schemas ------------------------------------------------------------------

REAL = r'''
import inspect, json, typing
out = {}
edit = mcp_filesystem.edit_file
sig = inspect.signature(edit)
out["edit_params"] = [(p.name, p.kind.name, repr(p.default)) for p in sig.parameters.values()]
edits = typing.get_type_hints(edit)["edits"]
item = typing.get_args(edits)[0]
out["edits_origin"] = typing.get_origin(edits).__name__
out["edit_item"] = [sorted(item.__required_keys__), sorted(typing.get_type_hints(item))]
out["edit_return"] = typing.get_type_hints(edit)["return"].__annotations__.keys().__repr__()
lds = inspect.signature(mcp_filesystem.list_directory_with_sizes).parameters["sortBy"]
out["sortBy"] = [repr(lds.annotation), lds.default, lds.kind.name]
gsc = mcp_everything.get_structured_content
hints = typing.get_type_hints(gsc)
ret = hints["return"]
out["gsc_return"] = [ret.__name__, sorted(ret.__required_keys__),
                     {k: v.__name__ for k, v in typing.get_type_hints(ret).items()}]
out["gsc_location"] = list(typing.get_args(hints["location"]))
rg = typing.get_type_hints(mcp_memory.read_graph)["return"]
rel = typing.get_args(typing.get_type_hints(rg)["relations"])[0]
out["relation_keys"] = sorted(rel.__required_keys__)
out["getsum_doc_unstructured"] = "unstructured" in mcp_everything.get_sum.__doc__
out["edit_doc"] = edit.__doc__
out["sourcefile"] = inspect.getsourcefile(edit)
src = inspect.getsource(edit)
out["source_first"] = src.splitlines()[0]
import ast
tree = ast.parse(open(out["sourcefile"]).read())
out["doc_in_file"] = ast.get_docstring([n for n in tree.body
    if isinstance(n, ast.AsyncFunctionDef)][0]) == inspect.cleandoc(edit.__doc__)
print(json.dumps(out))
'''


def test_stubs_of_real_servers(env):
    """server-filesystem's edit_file (nested edits) and list_directory_with_sizes (an enum),
    server-everything's get-structured-content (outputSchema), server-memory's read_graph
    (relations with the key "from"): signatures, annotations readable by get_type_hints,
    docstrings, and the stub file inspect.getsource reads."""
    sid = session(env, "filesystem", "memory", "everything")
    out = ok_json(env, sid, REAL)
    assert out["edit_params"] == [["path", "KEYWORD_ONLY", "<class 'inspect._empty'>"],
                                  ["edits", "KEYWORD_ONLY", "<class 'inspect._empty'>"],
                                  ["dryRun", "KEYWORD_ONLY", "False"]]
    assert out["edits_origin"] == "list"
    assert out["edit_item"] == [["newText", "oldText"], ["newText", "oldText"]]
    assert out["sortBy"] == ["typing.Literal['name', 'size']", "name", "KEYWORD_ONLY"]
    assert out["gsc_return"] == ["GetStructuredContentResult",
                                 ["conditions", "humidity", "temperature"],
                                 {"temperature": "float", "conditions": "str",
                                  "humidity": "float"}]
    assert out["gsc_location"] == ["New York", "Chicago", "Los Angeles"]
    assert out["relation_keys"] == ["from", "relationType", "to"]
    assert out["getsum_doc_unstructured"] is True
    doc = out["edit_doc"]
    for part in ("Make line-based edits", "Args:", "edits (list[EditFileEditsItem]): Required.",
                 '"oldText": str (required) - Text to search for',
                 "dryRun (bool): Optional, default False.", "Returns:", "Raises:",
                 "ApprovalDenied", "Declared by the server (not verified by sandboxd): "
                 "not read-only, destructive", 'MCP tool: "edit_file" on server "filesystem"',
                 "Example:", "await mcp_filesystem.edit_file(path="):
        assert part in doc, (part, doc)
    assert out["sourcefile"] == "/tmp/mcp/servers/filesystem/edit_file.py"
    assert out["source_first"].startswith("async def edit_file(*, path: str, edits: "
                                          "list[EditFileEditsItem], dryRun: bool = False)")
    assert out["doc_in_file"] is True


def test_help_tree_and_search_read_the_same_text(env):
    """help(tool), pydoc, the stub tree read with ls/cat/grep -r, and search_tool_docs: one
    renderer."""
    sid = session(env, "everything", "memory")
    out = ok_json(env, sid, r'''
import contextlib, io, json, pydoc, subprocess
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    help(mcp_everything.get_sum)
sh = lambda c: subprocess.run(c, shell=True, capture_output=True, text=True).stdout
hits = search_tool_docs("sum of two numbers", limit=1, detail="full")
print(json.dumps({"help": buf.getvalue(),
                  "pydoc": pydoc.render_doc(mcp_everything.get_sum, renderer=pydoc.plaintext),
                  "ls": sh("ls /tmp/mcp/servers /tmp/mcp/servers/memory"),
                  "cat": sh("cat /tmp/mcp/servers/everything/get_sum.py"),
                  "grep": sh("grep -rl 'knowledge graph' /tmp/mcp/servers | sort"),
                  "perm": sh("stat -c '%a %n' /tmp/mcp/servers/memory "
                             "/tmp/mcp/servers/memory/read_graph.py"),
                  "search": str(hits), "entry": hits[0]["doc"],
                  "sig": hits[0]["signature"], "module": help.__module__ is not None}))
''')
    assert "async get_sum(*, a: float, b: float) -> Any" in out["help"]
    assert "Returns the sum of two numbers" in out["help"] and "Args:" in out["help"]
    assert "a (float): Required. First number" in out["pydoc"]
    assert out["ls"].split() == ["/tmp/mcp/servers:", "everything", "memory",
                                 "/tmp/mcp/servers/memory:", "__init__.py", "add_observations.py",
                                 "create_entities.py", "create_relations.py",
                                 "delete_entities.py", "delete_observations.py",
                                 "delete_relations.py", "open_nodes.py", "read_graph.py",
                                 "search_nodes.py"]
    assert "async def get_sum(*, a: float, b: float) -> Any:" in out["cat"]
    assert "/tmp/mcp/servers/memory/read_graph.py" in out["grep"].split()
    assert out["perm"].split()[0::2] == ["555", "444"]  # read-only
    assert out["search"] == out["entry"]
    assert out["entry"].startswith("# mcp_everything.get_sum\nasync def get_sum(*, a: float, "
                                   "b: float) -> Any:")
    assert "Returns the sum of two numbers" in out["entry"]
    assert out["sig"] == "mcp_everything.get_sum(*, a: float, b: float) -> Any"


# ---- names and "not sent", at the server ----------------------------------------------------------

def test_names_are_mapped_to_the_wire_and_omitted_arguments_are_not_sent(env):
    sid = session(env, "rec")
    out = ok_json(env, sid, r'''
import inspect, json
sig = inspect.signature(mcp_rec.names)
r1 = await mcp_rec.names(from_="a", class_=1)
r2 = await mcp_rec.names(from_="b", class_=2, max_results=5, opt=None, nullable=None,
                         maybe_null=None)
r3 = await mcp_rec.names(**{"from": "c", "class": 3, "max-results": 7}, opt=NOT_SENT)
r4 = mcp_rec.sync.names(from_="d", class_=4, opt="x")
print(json.dumps({"sig": str(sig), "results": [r1, r2, r3, r4]}))
''')
    assert out["sig"] == ("(*, from_: str, class_: int, max_results: int = 10, "
                          "opt: str = NOT_SENT, nullable: Optional[str] = NOT_SENT, "
                          "maybe_null: Optional[int] = NOT_SENT) -> Any")
    # Omitted (even with a schema default), NOT_SENT, and None for a parameter that does not
    # allow null: not sent. None where null is allowed: sent as null.
    assert calls_of(env, "names")[-4:] == [
        {"from": "a", "class": 1},
        {"from": "b", "class": 2, "max-results": 5, "nullable": None, "maybe-null": None},
        {"from": "c", "class": 3, "max-results": 7},
        {"from": "d", "class": 4, "opt": "x"}]
    assert out["results"][0] == {"class": 1, "from": "a"}


# ---- checks before a call leaves ---------------------------------------------------------------------

CHECKS = [
    ("await mcp_rec.names(from_='a', clas_=1)", "TypeError",
     "got an unknown argument 'clas_' (did you mean 'class_'?)"),
    ("await mcp_rec.names(from_='a')", "TypeError", "missing the required argument 'class_'"),
    ("await mcp_rec.names('a', class_=1)", "TypeError", "takes keyword arguments only"),
    ("await mcp_rec.names(from_=1, class_=1)", "TypeError",
     "argument 'from_' must be str, not int"),
    ("await mcp_rec.names(from_=None, class_=1)", "TypeError",
     "argument 'from_' must be str, not None"),
    ("await mcp_rec.checked(level='max', count=1)", "ValueError",
     "must be one of 'low', 'mid', 'high', not 'max'"),
    ("await mcp_rec.checked(level='low', count=11)", "ValueError", "must be <= 10, not 11"),
    ("await mcp_rec.checked(level='low', count=True)", "TypeError", "must be int, not bool"),
    ("await mcp_rec.checked(level='low', count=1, label='x')", "ValueError",
     "must have at least 2 characters, not 1"),
    ("await mcp_rec.checked(level='low', count=1, items=[1, 2, 3, 4])", "ValueError",
     "must have at most 3 items, not 4"),
    ("await mcp_rec.checked(level='low', count=1, items=[1, 'x'])", "TypeError",
     "argument 'items'[1] must be int, not str"),
    ("await mcp_rec.checked(level='low', count=1, point={'x': 1})", "TypeError",
     "is missing the required key 'y'"),
    ("await mcp_rec.checked(level='low', count=1, point={'x': 1, 'y': 2, 'zz': 3})", "TypeError",
     "has the unknown key 'zz'"),
    ("await runtime.call_tool('rec', 'checked', {'level': 'low', 'count': 0})", "ValueError",
     "must be >= 1, not 0"),
]


@pytest.mark.parametrize("call,etype,message", CHECKS)
def test_arguments_are_checked_before_anything_is_sent(env, call, etype, message):
    sid = session(env, "rec")
    before = len(recorded(env["record"]))
    # Behind a non-literal value, so that the pre-flight leaves it to the call itself.
    code = "from mcp import runtime\nv = [0]\ntry:\n    %s\nexcept (TypeError, ValueError) as e:\n" \
           "    print(type(e).__name__, '|', e)\n" % call
    out = run(env, sid, code)
    assert out["status"] == "ok", out
    assert out["stdout"].startswith(etype + " | "), out["stdout"]
    assert message in out["stdout"], out["stdout"]
    assert "signature: " in out["stdout"]
    assert out["mcpCalls"] == 0
    assert len(recorded(env["record"])) == before  # nothing reached the server


def test_mcp_calls_counts_only_calls_sent(env):
    sid = session(env, "rec")
    out = run(env, sid, "n = 0\nfor c in (1, 99, 2, 'x', 3):\n    try:\n"
                        "        await mcp_rec.checked(level='mid', count=c)\n"
                        "    except (TypeError, ValueError):\n        n += 1\nprint(n)")
    assert out["status"] == "ok" and out["stdout"] == "2\n", out
    assert out["mcpCalls"] == 3


# ---- the pre-flight ----------------------------------------------------------------------------------

def test_preflight_stops_the_code_before_its_first_statement(env):
    sid = session(env, "rec")
    before = len(recorded(env["record"]))
    out = run(env, sid, "print('first')\nsaved = 1\nawait mcp_rec.echo(message='ok')\n"
                        "for i in range(3):\n    await mcp_rec.checked(level='low', cuont=i)\n")
    assert out["status"] == "error" and out["stdout"] == "" and out["mcpCalls"] == 0, out
    assert out["error"]["type"] == "TypeError" and out["error"]["line"] == 5
    msg = out["error"]["message"]
    assert "line 5" in msg and "nothing was run or sent" in msg
    assert "got an unknown argument 'cuont' (did you mean 'count'?)" in msg
    assert "signature: checked(*, level: Literal['low', 'mid', 'high'], count: int, " in msg
    assert len(recorded(env["record"])) == before
    out = run(env, sid, "print('saved' in globals())")
    assert out["stdout"] == "False\n"  # no statement of the refused code ran
    # A literal value out of range, the sync variant, a missing argument, positional ones.
    for code, etype, part in [
            ("mcp_rec.sync.checked(level='low', count=50)", "ValueError", "must be <= 10"),
            ("x = [await mcp_rec.checked(level='top', count=1)]", "ValueError", "'top'"),
            ("await mcp_rec.checked(level='low')", "TypeError", "missing the required"),
            ("await mcp_rec.echo('hi')", "TypeError", "keyword arguments only")]:
        out = run(env, sid, "print('x')\n" + code)
        assert out["status"] == "error" and out["stdout"] == "", (code, out)
        assert out["error"]["type"] == etype and part in out["error"]["message"], (code, out)
    assert len(recorded(env["record"])) == before


def test_preflight_leaves_alone_what_it_cannot_be_sure_of(env):
    """Non-literal values are counted, not checked; calls in functions, in a try that handles
    errors, through a rebound name or with **kwargs are left to run (and fail or not there)."""
    sid = session(env, "rec")
    out = run(env, sid, r'''
async def later():
    await mcp_rec.checked(level='low', nonsense=1)
try:
    await mcp_rec.checked(level='nope', count=1)
except ValueError:
    print('caught')
kw = {'level': 'mid', 'count': 2}
await mcp_rec.checked(**kw)
n = 20
try:
    await mcp_rec.checked(level='low', count=n)
except ValueError:
    print('caught at run time')
print('done')
''')
    assert out["status"] == "ok", out
    assert out["stdout"] == "caught\ncaught at run time\ndone\n"
    assert out["mcpCalls"] == 1
    out = run(env, sid, "mcp_rec = None\nprint('rebound')\nmcp_rec.checked(level=1)")
    assert out["stdout"] == "rebound\n" and out["error"]["type"] == "AttributeError", out


# ---- hostile schemas ------------------------------------------------------------------------------------

HOSTILE = r'''
import ast, glob, inspect, json, os, typing
out = {"files": 0, "docs_equal": 0, "tools": []}
for path in sorted(glob.glob("/tmp/mcp/servers/rec/*.py")):
    tree = ast.parse(open(path, encoding="utf-8").read())
    out["files"] += 1
    for node in ast.walk(tree):   # nothing but definitions: no call of anything
        assert not isinstance(node, (ast.Call, ast.Attribute)) or \
            (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
             node.func.id == "TypedDict"), (path, ast.dump(node)[:200])
for name in mcp_rec.__all__:
    fn = getattr(mcp_rec, name)
    sig = inspect.signature(fn)
    typing.get_type_hints(fn)
    tree = ast.parse(open(inspect.getsourcefile(fn), encoding="utf-8").read())
    defs = [n for n in tree.body if isinstance(n, ast.AsyncFunctionDef)]
    assert len(defs) == 1 and defs[0].name == name
    out["docs_equal"] += ast.get_docstring(defs[0]) == inspect.cleandoc(fn.__doc__)
    out["tools"].append([name, len(sig.parameters)])
evil = getattr(mcp_rec, 'evil_tool')
out["evil_params"] = list(inspect.signature(evil).parameters)
out["evil_doc_has_payload"] = 'open("/tmp/PWNED", "w")' in evil.__doc__
tree_hints = typing.get_type_hints(mcp_rec.tree)
node = tree_hints["root"]
out["node"] = [node.__name__, sorted(typing.get_type_hints(node))]
out["pwned"] = os.path.exists("/tmp/PWNED")
r = await mcp_rec.evil_tool(with_space="ok", a_quoted_name="x")
out["sent"] = r
print(json.dumps(out))
'''


def test_hostile_schemas_give_parseable_files_and_run_nothing(env):
    sid = session(env, "rec")
    out = ok_json(env, sid, HOSTILE)
    names = dict(out["tools"])
    assert out["files"] == len(names) + 1  # a module per tool and __init__.py
    assert out["docs_equal"] == len(names)
    assert names["many"] == 2001
    assert out["evil_params"] == ["with_space", "a_quoted_name", "__import___os_", "def_"]
    assert out["evil_doc_has_payload"] is True  # shown as text, never run
    assert out["node"][0] == "Node" and out["node"][1] == ["children", "other", "value"]
    assert out["pwned"] is False
    assert out["sent"] == 'called evil"""tool'
    assert calls_of(env, 'evil"""tool')[-1] == {"a \"quoted' name": "x", "with space": "ok"}
