# SPDX-License-Identifier: MIT
"""The session runtime's MCP API with the signatures and shapes of
mcp-server-code-execution-mode (upstream), driven as its users drive it: `sandboxd mcp` over
stdio — `--compat code-execution-mode` with their ~/MCPs configuration, and the native mode —
with a real stub MCP server (tests/e2e/mcp/demo_server.py, the tools of upstream's test
fixtures). Tests marked "upstream: tests/X.py::name" port the assertions of that upstream
test (elusznik/mcp-server-code-execution-mode, or its fork aniprasad/... where it says so)."""
import json
import pathlib

import pytest

from harness import McpStdio

HERE = pathlib.Path(__file__).resolve().parent
DEMO = HERE / "mcp" / "demo_server.py"
OLD = HERE / "mcp" / "old_server.py"


def entry(script=DEMO, **extra):
    return dict({"command": "/usr/bin/python3", "args": [str(script)], "env": {}}, **extra)


@pytest.fixture
def home(tmp_path):
    """A user's home with upstream's layout: ~/MCPs/*.json naming demo-server (with a cwd) and
    a second server the calls do not name."""
    h = tmp_path / "home"
    (h / "MCPs").mkdir(parents=True)
    (h / "work").mkdir()
    (h / "MCPs" / "demo.json").write_text(json.dumps({"mcpServers": {
        "demo-server": entry(cwd=str(h / "work"), description="Demo things"),
        "other": entry(OLD, args=[str(OLD), "stdio"], description="Another one")}}))
    return h


def compat(home, *args):
    return McpStdio("mcp", "--compat", "code-execution-mode", "--pool-size", "0",
                    "--session-pool-size", "1", "--state-dir", str(home / ".state"), *args,
                    env={"HOME": str(home)}, exact=True)


def native(home):
    cfg = home / "native.json"
    cfg.write_text((home / "MCPs" / "demo.json").read_text())
    return McpStdio("--mcp-config", str(cfg), "--session-pool-size", "1")


def run(c, code, **args):
    return c.call("run_python", {"code": code, **args})


def once(home, code, mode="compat", **args):
    """One run_python on a new connection of mode."""
    c = compat(home) if mode == "compat" else native(home)
    try:
        return run(c, code, **args)
    finally:
        c.close()


def out(r):
    """stdout of a run_python answer of either mode, asserting it succeeded."""
    assert not r.get("isError"), r
    st = r.get("structuredContent") or {}
    if "stdout" in st and isinstance(st["stdout"], str):
        return st["stdout"]
    text = r["content"][0]["text"]
    return "" if text == "Success (no output)" else text + "\n"


# ---- upstream: tests/test_entrypoint.py ---------------------------------------------------------

def test_generates_runtime_modules(home):
    """upstream: tests/test_entrypoint.py::test_generates_runtime_modules — mcp.servers is a
    package of one module per server, with __all__ everywhere."""
    r = once(home, "import mcp\n"
                   "import mcp.servers.demo_server as demo\n"
                   "from mcp.servers.demo_server import get_thing\n"
                   "from mcp import runtime\n"
                   "result = await demo.list_things()\n"
                   "assert result['content'][0]['text'] == '[\"ok\"]', result\n"
                   "assert (await get_thing(id='7'))['structuredContent'] == {'id': '7'}\n"
                   "assert 'demo-server' in mcp_servers\n"
                   "assert 'demo_server' in mcp.servers.__all__\n"
                   "assert mcp.__all__ == ['runtime', 'servers']\n"
                   "assert {'call_tool', 'list_tools', 'discovered_servers', 'MCPError',\n"
                   "        'list_loaded_server_metadata', 'query_tool_docs_sync',\n"
                   "        'capability_summary'} <= set(runtime.__all__)\n"
                   "assert all(hasattr(runtime, n) for n in runtime.__all__)\n"
                   "assert {'list_things', 'get_thing', 'get_time', 'a_b', 'a_b_2', 'class_'}"
                   " <= set(demo.__all__)\n"
                   "from mcp.servers.demo_server import *\n"
                   "assert callable(list_things)\n"
                   "assert runtime.discovered_servers() == ('demo-server', 'other')\n"
                   "assert mcp.runtime is runtime\n"
                   "print('ok')", servers=["demo-server"])
    assert out(r) == "ok\n"


def test_runtime_helpers_sync_and_async_behaviour(home):
    """upstream: tests/test_entrypoint.py::test_runtime_helpers_sync_and_async_behaviour"""
    r = once(home, "from mcp import runtime\n"
                   "assert runtime.list_servers_sync() == ('demo-server',)\n"
                   "docs_sync = runtime.query_tool_docs_sync('demo-server')\n"
                   "assert docs_sync and docs_sync[0]['toolAlias'] == 'list_things'\n"
                   "search_sync = runtime.search_tool_docs_sync('list')\n"
                   "assert search_sync and search_sync[0]['toolAlias'] == 'list_things'\n"
                   "summary = runtime.capability_summary()\n"
                   "print('SUMMARY:', summary.splitlines()[0])\n"
                   "async def _exercise_async():\n"
                   "    docs = await runtime.query_tool_docs('demo-server')\n"
                   "    search = await runtime.search_tool_docs('list')\n"
                   "    servers = await runtime.list_servers()\n"
                   "    assert servers == ('demo-server',), servers\n"
                   "    print('ASYNC:', len(docs), search[0]['tool'], servers)\n"
                   "await _exercise_async()\n"
                   "assert [t['alias'] for t in runtime.list_tools_sync('demo-server')][:2] == "
                   "['list_things', 'get_thing']\n", servers=["demo-server"])
    text = out(r)
    assert "SUMMARY:" in text
    assert "ASYNC: 8 list_things ('demo-server',)" in text


def test_runtime_metadata_helpers_and_errors(home):
    """upstream: tests/test_entrypoint.py::test_runtime_metadata_helpers_and_errors"""
    r = once(home, "from mcp import runtime\n"
                   "meta = runtime.list_loaded_server_metadata()\n"
                   "assert isinstance(meta, tuple) and meta and meta[0]['alias'] == "
                   "'demo_server'\n"
                   "desc = runtime.describe_server('demo-server')\n"
                   "assert desc['name'] == 'demo-server'\n"
                   "try:\n"
                   "    runtime.list_tools_sync()\n"
                   "except runtime.MCPError:\n"
                   "    print('EXPECTED_SYNC_ERROR')\n"
                   "else:\n"
                   "    raise AssertionError('list_tools_sync should require a server name')\n"
                   "doc_full = await runtime.query_tool_docs('demo-server', tool='list_things',"
                   " detail='full')\n"
                   "assert isinstance(doc_full, dict) and 'inputSchema' in doc_full\n"
                   "search_full = await runtime.search_tool_docs('list', limit=1, "
                   "detail='full')\n"
                   "assert search_full and len(search_full) == 1 and 'inputSchema' in "
                   "search_full[0]\n"
                   "sync_results = runtime.search_tool_docs_sync('list demo', limit=1, "
                   "detail='full')\n"
                   "assert sync_results and 'inputSchema' in sync_results[0]\n",
                   servers=["demo-server"])
    assert "EXPECTED_SYNC_ERROR" in out(r)


# ---- upstream: tests/test_tool_docs.py ----------------------------------------------------------

def test_get_tool_docs_summary_and_full(home):
    """upstream: tests/test_tool_docs.py::test_get_tool_docs_summary_and_full and
    ::test_rpc_handlers_expose_docs — the entries carry server, serverAlias, tool, toolAlias."""
    r = once(home, "import json\nfrom mcp import runtime\n"
                   "summary_docs = await runtime.query_tool_docs('demo-server')\n"
                   "full_doc = runtime.query_tool_docs_sync('demo-server', tool='get_thing', "
                   "detail='full')\n"
                   "one = await runtime.query_tool_docs('demo-server', tool='list_things')\n"
                   "print(json.dumps([summary_docs, full_doc, one]))", servers=["demo-server"])
    summary_docs, full_doc, one = json.loads(out(r))
    assert len(summary_docs) == 8
    assert summary_docs[0]["server"] == "demo-server"
    assert summary_docs[0]["serverAlias"] == "demo_server"
    assert summary_docs[0]["toolAlias"] == "list_things"
    assert "description" in summary_docs[0] and "inputSchema" not in summary_docs[0]
    assert len(full_doc) == 1 and "inputSchema" in full_doc[0]
    assert full_doc[0]["inputSchema"]["properties"] == {"id": {"type": "string"}}
    assert one["tool"] == "list_things" and one["description"] == "List available things"


def test_search_tool_docs(home):
    """upstream: tests/test_tool_docs.py::test_search_tool_docs"""
    r = once(home, "import json\nfrom mcp import runtime\n"
                   "results = await runtime.search_tool_docs('retrieve', limit=5, "
                   "detail='summary')\n"
                   "full_results = runtime.search_tool_docs_sync('thing', limit=1, "
                   "detail='full')\n"
                   "print(json.dumps([results, full_results]))", servers=["demo-server"])
    results, full_results = json.loads(out(r))
    assert len(results) == 1 and results[0]["tool"] == "get_thing"
    assert results[0]["serverAlias"] == "demo_server"
    assert len(full_results) == 1 and "inputSchema" in full_results[0]


# ---- upstream: tests/test_server_cwd.py, tests/test_server_descriptions.py -------------------

def test_get_cached_server_metadata_includes_cwd(home):
    """upstream: tests/test_server_cwd.py::test_get_cached_server_metadata_includes_cwd and
    ::test_server_start_uses_configured_cwd — describe_server and the metadata carry the
    configured cwd, and the server really runs there."""
    r = once(home, "from mcp import runtime\n"
                   "meta = runtime.describe_server('demo-server')\n"
                   "assert 'cwd' in meta\n"
                   "print(meta['cwd'])\n"
                   "print(runtime.list_loaded_server_metadata()[0]['cwd'])\n"
                   "print((await mcp_demo_server.cwd())['content'][0]['text'])\n"
                   "print(meta['tools'][0]['name'], sorted(meta['tools'][0]))\n",
                   servers=["demo-server"])
    work = str(home / "work")
    assert out(r) == "%s\n%s\n%s\nlist_things ['alias', 'description', 'input_schema', " \
                     "'name']\n" % (work, work, work)


def test_discovered_servers_lists_every_configured_server(home):
    """upstream: tests/test_server_descriptions.py::test_server_descriptions_in_sandbox —
    discovered_servers() names every configured server, not only the call's, as a tuple."""
    r = once(home, "import json\nfrom mcp import runtime\n"
                   "print(json.dumps([runtime.discovered_servers(), "
                   "runtime.discovered_servers(detailed=True)]))\n"
                   "assert isinstance(runtime.discovered_servers(detailed=True), tuple)",
                   servers=["demo-server"])
    names, detailed = json.loads(out(r))
    assert names == ["demo-server", "other"]
    assert detailed == [{"name": "demo-server", "description": "Demo things"},
                        {"name": "other", "description": "Another one"}]


# ---- upstream-style code, unchanged -----------------------------------------------------------

UPSTREAM_CODE = """\
from mcp import runtime
r = await runtime.call_tool("demo-server", "get_thing", {"id": "42"})
print(r["content"][0]["text"], r["structuredContent"])
r = await runtime.call_tool("demo-server", "get_thing", arguments={"id": "43"})
print(r["content"][0]["text"])
bad = await runtime.call_tool("demo-server", "fail")
print(bad["isError"], bad["content"][0]["text"])
r = await mcp_demo_server.get_time()
print(r["content"][0]["text"])
print((await mcp_servers["demo-server"].a_b_2())["content"][0]["text"])
tools = await runtime.list_tools("demo-server")
print(sorted(tools[0]), tools[0]["inputSchema"])
"""


def test_upstream_code_runs_unchanged_in_compat_mode(home):
    """Code written for upstream: call_tool with a dict (positional or arguments=), results
    read as r["content"][0]["text"], a tool's isError returned rather than raised, upstream's
    aliases (Get-Time -> get_time, a.b and a_b -> a_b and a_b_2)."""
    text = out(once(home, UPSTREAM_CODE, servers=["demo-server"]))
    lines = text.splitlines()
    assert lines[:5] == ["thing 42 {'id': '42'}", "thing 43", "True failed on purpose",
                         "12:00", "a_b"], text
    assert lines[5].startswith("['alias', 'description', 'inputSchema', 'input_schema', "
                               "'name', 'server', 'serverAlias', 'tool', 'toolAlias']"), text


def test_native_mode_keeps_values_and_gains_the_signatures(home):
    """The native mode keeps today's answers (the value; a tool error raised) and spellings
    (Get_Time, a_b for 'a.b' while no other tool has it), and gains call_tool(server, tool,
    arguments)."""
    code = ("from mcp import runtime\n"
            "print(await runtime.call_tool('demo-server', 'get_thing', {'id': '1'}))\n"
            "print(await runtime.call_tool('demo-server', 'get_thing', id='2'))\n"
            "print(runtime.call_tool_sync('demo-server', 'get_thing', arguments={'id': '3'}))\n"
            "print(await mcp_demo_server.Get_Time(), await mcp_demo_server.get_time())\n"
            "print(await mcp_demo_server.class_(x='k'))\n"
            "try:\n    await runtime.call_tool('demo-server', 'fail', {})\n"
            "except MCPError as e:\n    print('raised', e)\n"
            "try:\n    await runtime.call_tool('demo-server', 'fail', [1])\n"
            "except TypeError as e:\n    print('TypeError')\n"
            "print(type(list_servers()).__name__, list_tools('demo-server')[0]['tool'])")
    r = once(home, code, mode="native", servers=["demo-server"])
    assert out(r).splitlines() == ["{'id': '1'}", "{'id': '2'}", "{'id': '3'}",
                                   "12:00 12:00", "k", "raised failed on purpose",
                                   "TypeError", "AwaitableTuple list_things"]


# ---- state survives a change of servers ----------------------------------------------------------

@pytest.mark.parametrize("mode", ["compat", "native"])
def test_variables_survive_a_call_naming_more_servers(home, mode):
    c = compat(home) if mode == "compat" else native(home)
    try:
        assert out(run(c, "x = 41\nimport mcp.servers")) == ""
        r = run(c, "x += 1\nimport mcp.servers.demo_server as d\n"
                   "from mcp import runtime\n"
                   "print(x, sorted(LOADED_MCP_SERVERS), runtime.list_servers_sync())\n"
                   "r = await d.get_thing(id='a')\n"
                   "print(r['structuredContent'] if isinstance(r, dict) and 'content' in r "
                   "else r)", servers=["demo-server"])
        assert out(r) == "42 ['demo-server'] ('demo-server',)\n{'id': 'a'}\n"
        r = run(c, "print(x, sorted(mcp_servers), 'mcp_other' in dir())", servers=["other"])
        assert out(r) == "42 ['demo-server', 'other'] True\n"
    finally:
        c.close()


# ---- shelling out (the toolbox) ------------------------------------------------------------------

SHELL_CODE = """\
import shutil, subprocess
print(subprocess.run(["sh", "-c", "echo hi"], capture_output=True, text=True).stdout.strip())
print(shutil.which("ls"), shutil.which("bash"))
p = subprocess.run("printf 'b,2\\\\na,1\\\\n' | sort | cut -d, -f2 | tr '\\\\n' ' '; "
                   "echo x | sed s/x/y/ | awk '{print toupper($0)}'; "
                   "mkdir -p d && echo data > d/f && tar czf d.tgz d && tar tzf d.tgz | sort; "
                   "find d -name f; grep -c data d/f; echo q | gzip | zcat",
                   shell=True, capture_output=True, text=True)
print(p.stdout + "rc=%d stderr=%r" % (p.returncode, p.stderr))
"""


def test_upstream_code_that_shells_out_runs(home):
    """upstream sells 'sandboxed access to Bash and Python' in a python:3-slim container: sh,
    bash, coreutils, grep, sed, awk, find, tar and gzip are there in the jail too."""
    text = out(once(home, SHELL_CODE))
    assert text == "hi\n/usr/bin/ls /usr/bin/bash\n1 2 Y\nd/\nd/f\nd/f\n1\nq\nrc=0 stderr=''\n", \
        text


def test_toolbox_none_leaves_only_the_interpreter(home):
    c = McpStdio("mcp", "--compat", "code-execution-mode", "--toolbox", "none",
                 "--session-pool-size", "1", "--state-dir", str(home / ".state"),
                 env={"HOME": str(home)}, exact=True)
    try:
        r = run(c, "import shutil, subprocess\nprint(shutil.which('ls'), shutil.which('sh'))\n"
                   "try:\n    subprocess.run(['sh', '-c', 'echo hi'])\n"
                   "except FileNotFoundError as e:\n    print('no', e.filename)")
        assert out(r) == "None None\nno sh\n"
    finally:
        c.close()
