# SPDX-License-Identifier: MIT
"""`sandboxd mcp --compat code-execution-mode`, the drop-in for users of
elusznik/mcp-server-code-execution-mode (docs/MIGRATING.md), driven over stdio as their MCP
client drives it, with their configuration in a temporary HOME (~/MCPs/*.json, agents' files)
and real MCP servers — one of them speaking only protocol 2024-11-05, as servers on older SDKs
do. Tests marked "upstream: tests/X.py::name" port the assertions of that upstream test."""
import json
import os
import pathlib
import subprocess
import time

import pytest

from harness import BIN, McpStdio

HERE = pathlib.Path(__file__).resolve().parent
OLD = HERE / "mcp" / "old_server.py"
COMPAT = ["mcp", "--compat", "code-execution-mode"]
CAPS_URI = "resource://mcp-server-code-execution-mode/capabilities"


def stub_entry(**extra):
    return dict({"command": "/usr/bin/python3", "args": [str(OLD), "stdio"], "env": {}}, **extra)


@pytest.fixture
def home(tmp_path):
    """A user's home with upstream's recommended layout: ~/MCPs/stub_server.json."""
    h = tmp_path / "home"
    (h / "MCPs").mkdir(parents=True)
    write(h / "MCPs" / "stub_server.json", {"mcpServers": {"stub": stub_entry()}})
    return h


def write(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))


def bridge(home, *args, env=None, version="2025-06-18", cwd=None):
    """sandboxd mcp --compat code-execution-mode with HOME=home and discovery on."""
    e = {"HOME": str(home)}
    e.update(env or {})
    return McpStdio(*COMPAT, "--pool-size", "0", "--session-pool-size", "1", "--state-dir",
                    str(home / ".state"), *args, env=e, version=version, exact=True, cwd=cwd)


def run(c, code, **args):
    return c.call("run_python", {"code": code, **args})


def servers_json(home, *args, cwd=None, env=None):
    e = dict(os.environ, HOME=str(home))
    e.update(env or {})
    p = subprocess.run([BIN, "servers", "--json", *args], capture_output=True, text=True,
                       env=e, cwd=cwd or str(home), timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# ---- the drop-in as a Claude Desktop user installs it ---------------------------------------

def test_claude_desktop_entry_works_unchanged(tmp_path, home):
    """upstream: tests/test_integration.py::test_stub_echo_tool — the user's Claude Desktop
    entry, only the command swapped, with their MCP_BRIDGE_* settings and ~/MCPs."""
    desktop = {"mcpServers": {"code-execution": {
        "command": BIN, "args": COMPAT,
        "env": {"MCP_BRIDGE_TIMEOUT": "20", "MCP_BRIDGE_STATE_DIR": "~/bridge-state",
                "MCP_BRIDGE_RUNTIME": "podman", "MCP_BRIDGE_IMAGE": "python:3.14-slim"}}}}
    write(home / ".config" / "Claude" / "claude_desktop_config.json", desktop)
    entry = desktop["mcpServers"]["code-execution"]
    c = McpStdio(*entry["args"], env=dict(entry["env"], HOME=str(home)), exact=True)
    try:
        result = run(c, "result = await mcp_stub.echo(message='hello world')\n"
                        "text = result['content'][0]['text'] if isinstance(result, dict) "
                        "else result\n"
                        "assert text == 'hello world', result\n", servers=["stub"])
        assert not result.get("isError"), result
        assert result["content"][0]["text"] == "Success (no output)"
        assert result["structuredContent"] == {"servers": ["stub"],
                                               "summary": "Success (no output)"}
        # The state directory of MCP_BRIDGE_STATE_DIR, ~ expanded, holds the workspaces.
        assert run(c, "save_memory('k', 1)")["content"][0]["text"] == "Success (no output)"
        assert (home / "bridge-state" / "workspaces").is_dir()
        # The Claude Desktop file names this very bridge: not a server to start again.
        tools = c.request("tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == ["run_python"]
        assert tools[0]["inputSchema"]["properties"]["servers"]["items"]["enum"] == ["stub"]
        assert tools[0]["inputSchema"]["properties"]["timeout"]["default"] == 20
    finally:
        logs = c.close()
    assert "MCP_BRIDGE_RUNTIME='podman' ignored" in logs
    assert "MCP_BRIDGE_IMAGE='python:3.14-slim' ignored" in logs
    assert "code-execution" in logs and "skipped" in logs


def test_discovered_servers_reach_the_session(home):
    """upstream: tests/test_server_descriptions.py::test_server_descriptions_in_sandbox and
    ::test_discover_servers_returns_dict — descriptions, per entry or for the whole file."""
    write(home / "MCPs" / "more.json", {"description": "Description from config",
                                        "mcpServers": {"test-server": stub_entry(),
                                                       "own": stub_entry(description="Own")}})
    c = bridge(home)
    try:
        r = run(c, "import json\nfrom mcp import runtime\n"
                   "import sandboxd_runtime.session as s\n"
                   "print(json.dumps(sorted((d['name'], d['description']) for d in "
                   "s.DISCOVERED)))\n"
                   "print(json.dumps(runtime.discovered_servers(detailed=True)))\n"
                   "print(s.COMPAT['mode'])", servers=["test-server"])
        lines = r["content"][0]["text"].split("\n")
        assert json.loads(lines[0]) == [["own", "Own"], ["stub", ""],
                                        ["test-server", "Description from config"]]
        assert {"name": "test-server", "description": "Description from config"} in \
            json.loads(lines[1])
        assert lines[2] == "code-execution-mode"
    finally:
        c.close()


# ---- configuration loading (upstream: tests/test_config_loading.py) -------------------------

def configured(c):
    tools = c.request("tools/list")["result"]["tools"]
    return tools[0]["inputSchema"]["properties"]["servers"]["items"].get("enum", [])


@pytest.mark.parametrize("where, doc", [
    # upstream writes "mcpServers" into settings.json; VS Code itself writes "mcp": {"servers"}
    (".config/Code/User/settings.json",
     {"mcpServers": {"vscode-global-server": {"command": "echo", "args": ["hello"]}}}),
    (".config/Code/User/settings.json",
     '{\n  // VS Code settings carry comments\n  "editor.fontSize": 13,\n  "mcp": {"servers": '
     '{"vscode-global-server": {"type": "stdio", "command": "echo", "args": ["hello"],},},},\n}'),
])
def test_discover_servers_vscode_global(home, where, doc):
    """upstream: tests/test_config_loading.py::test_discover_servers_vscode_global"""
    write(home / where, doc)
    listing = servers_json(home)
    server = next(s for s in listing["servers"] if s["name"] == "vscode-global-server")
    assert server["command"] == "echo" and server["args"] == ["hello"]
    assert server["agent"] == "VS Code"
    c = bridge(home)
    try:
        assert "vscode-global-server" in configured(c)
    finally:
        c.close()


def test_discover_servers_antigravity(home):
    """upstream: tests/test_config_loading.py::test_discover_servers_antigravity"""
    write(home / ".antigravity" / "settings.json",
          {"mcpServers": {"antigravity-server": {"command": "python",
                                                 "args": ["-m", "http.server"]}}})
    server = next(s for s in servers_json(home)["servers"] if s["name"] == "antigravity-server")
    assert server["command"] == "python" and server["args"] == ["-m", "http.server"]


def test_discover_servers_precedence(home):
    """upstream: tests/test_config_loading.py::test_discover_servers_precedence — an earlier
    source keeps its definition; a later one only adds."""
    write(home / "MCPs" / "a.json", {"mcpServers": {"conflict-server": {"command": "original"}}})
    write(home / ".cursor" / "mcp.json", {"mcpServers": {
        "conflict-server": {"command": "override"}, "new-server": {"command": "new"}}})
    listing = servers_json(home)
    by = {s["name"]: s for s in listing["servers"]}
    assert by["conflict-server"]["command"] == "original"
    assert by["new-server"]["command"] == "new"
    assert any(k["name"] == "conflict-server" and k["kind"] == "shadowed"
               for k in listing["skipped"])


def test_discover_opencode_config_file(home):
    """upstream: tests/test_integration.py::test_discover_opencode_config_file"""
    write(home / ".opencode.json", {"mcpServers": {"opencode-server": {
        "command": "/usr/bin/python3", "args": [], "env": {}}}})
    assert "opencode-server" in {s["name"] for s in servers_json(home)["servers"]}


def test_agent_files_and_their_spellings(home):
    """The rest of upstream's list, each in its own program's spelling."""
    write(home / ".codeium" / "windsurf" / "mcp_config.json",
          {"mcpServers": {"surf": {"serverUrl": "http://127.0.0.1:9/mcp"}}})
    write(home / ".gemini" / "settings.json", {"theme": "x", "mcpServers": {
        "gem": {"httpUrl": "http://127.0.0.1:9/mcp"}, "gem-sse": {"url": "http://127.0.0.1:9/sse"}}})
    write(home / ".codex" / "config.toml",
          'model = "o3"\n[projects."/x"]\ntrust_level = "trusted"\n'
          '[mcp_servers.codex-docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n'
          'env = { KEY = "v" }\nenv_vars = ["HOME"]\nstartup_timeout_sec = 20\n'
          '[mcp_servers.codex-remote]\nurl = "http://127.0.0.1:9/mcp"\n'
          'bearer_token_env_var = "HOME"\nhttp_headers = { "X-Team" = "core" }\n'
          '[mcp_servers.codex-off]\ncommand = "x"\nenabled = false\n')
    write(home / ".config" / "mcp" / "servers" / "std.json", {"mcpServers": {"std": stub_entry()}})
    write(home / ".claude.json", {"mcpServers": {"claude-code": stub_entry()}})
    listing = servers_json(home)
    by = {s["name"]: s for s in listing["servers"]}
    skipped = {k["name"]: k for k in listing["skipped"] if k["name"]}
    assert by["surf"]["url"] == "http://127.0.0.1:9/mcp" and by["surf"]["agent"] == "Windsurf"
    assert by["gem"]["transport"] == "http" and by["gem"]["agent"] == "Gemini CLI"
    assert skipped["gem-sse"]["kind"] == "invalid" and "SSE" in skipped["gem-sse"]["reason"]
    assert by["codex-docs"]["args"] == ["-y", "docs"]
    assert sorted(by["codex-docs"]["env"]) == ["HOME", "KEY"]
    assert sorted(by["codex-remote"]["headers"]) == ["Authorization", "X-Team"]
    assert skipped["codex-off"]["kind"] == "disabled"
    assert by["std"]["agent"] == "MCP servers directory"
    assert by["claude-code"]["agent"] == "Claude Code"
    order = [s["name"] for s in listing["servers"]]
    assert order.index("stub") < order.index("std") < order.index("claude-code") < \
        order.index("codex-docs") < order.index("surf")  # ~/MCPs first, as upstream


def test_a_bad_file_is_a_warning_with_its_line(home, tmp_path):
    write(home / ".cursor" / "mcp.json", '{\n  "mcpServers": {\n    "x": \n}')
    write(home / ".codex" / "config.toml", '[mcp_servers.a]\ncommand = "x"\nargs = [1,\n')
    e = dict(os.environ, HOME=str(home))
    p = subprocess.run([BIN, "servers", "--json"], capture_output=True, text=True, env=e,
                       cwd=str(tmp_path), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "mcp.json is not valid JSON: line 4" in p.stderr
    assert "config.toml is not valid TOML: line 4" in p.stderr
    listing = json.loads(p.stdout)
    assert [s["name"] for s in listing["servers"]] == ["stub"]  # the others still count
    assert {pathlib.Path(k["source"]).name for k in listing["skipped"] if k["kind"] == "invalid"} \
        == {"mcp.json", "config.toml"}


def test_mcp_servers_config_and_self_references(home, tmp_path):
    """MCP_SERVERS_CONFIG is read after ~/MCPs; entries that would start the bridge again are
    skipped unless MCP_BRIDGE_ALLOW_SELF_SERVER=1 (upstream's switch)."""
    env_file = tmp_path / "env-servers.json"
    write(env_file, {"mcpServers": {
        "stub": {"command": "shadowed-by-MCPs"}, "envsrv": stub_entry(),
        "mcp-server-code-execution-mode": {"command": "uvx", "args": [
            "--from", "git+https://github.com/elusznik/mcp-server-code-execution-mode",
            "mcp-server-code-execution-mode", "run"]},
        "me": {"command": BIN, "args": ["mcp", "--compat", "code-execution-mode"]}}})
    listing = servers_json(home, env={"MCP_SERVERS_CONFIG": str(env_file)})
    names = [s["name"] for s in listing["servers"]]
    assert names == ["stub", "envsrv"]
    kinds = {k["name"]: k["kind"] for k in listing["skipped"]}
    assert kinds == {"stub": "shadowed", "mcp-server-code-execution-mode": "self", "me": "self"}
    allowed = servers_json(home, env={"MCP_SERVERS_CONFIG": str(env_file),
                                      "MCP_BRIDGE_ALLOW_SELF_SERVER": "1"})
    assert [s["name"] for s in allowed["servers"]] == ["stub", "envsrv",
                                                       "mcp-server-code-execution-mode", "me"]


def test_later_mcp_config_wins(home, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write(a, {"mcpServers": {"one": {"command": "from-a"}, "two": {"command": "a2"}}})
    write(b, {"mcpServers": {"one": {"command": "from-b"}}})
    listing = servers_json(home, "--mcp-config", str(a), "--mcp-config", str(b),
                           "--no-mcp-discovery")
    by = {s["name"]: s for s in listing["servers"]}
    assert by["one"]["command"] == "from-b" and by["two"]["command"] == "a2"
    assert [(k["name"], k["kind"], pathlib.Path(k["source"]).name) for k in listing["skipped"]] \
        == [("one", "replaced", "a.json")]


def test_project_files_need_trust(home, tmp_path):
    """upstream's ./mcp-servers and ./*_config.json are the project's: read only with the
    opt-in, in every mode, and never over a user-level name."""
    proj = tmp_path / "proj"
    marker = tmp_path / "started"
    planted = {"command": "/bin/sh", "args": ["-c", "touch %s" % marker]}
    write(proj / "mcp-servers" / "x.json", {"mcpServers": {"planted": planted}})
    write(proj / "claude_desktop_config.json", {"mcpServers": {"planted2": planted,
                                                               "stub": planted}})
    listing = servers_json(home, cwd=str(proj))
    assert [s["name"] for s in listing["servers"]] == ["stub"]
    assert {k["name"]: k["kind"] for k in listing["skipped"]} == {
        "planted": "untrusted", "planted2": "untrusted", "stub": "untrusted"}
    c = bridge(home, cwd=str(proj))
    try:
        assert configured(c) == ["stub"]
        r = run(c, "print(1)", servers=["planted"])
        assert r["isError"] and "Unknown MCP server: planted" in r["content"][0]["text"]
    finally:
        c.close()
    assert not marker.exists()
    trusted = servers_json(home, "--mcp-trust-project", cwd=str(proj))
    by = {s["name"]: s for s in trusted["servers"]}
    assert set(by) == {"stub", "planted", "planted2"}
    assert by["stub"]["source"].endswith("MCPs/stub_server.json")  # the user's name wins


# ---- resources (upstream: tests/test_resources.py) ------------------------------------------

def test_resources(home):
    c = bridge(home)
    try:
        assert "resources" in c.init["result"]["capabilities"]
        listed = c.request("resources/list")["result"]["resources"]
        cap = next(r for r in listed if r["uri"] == CAPS_URI)
        # ::test_list_resources_exposes_capability_document
        assert cap["name"] == "code-execution-capabilities"
        assert cap["mimeType"] == "text/markdown"
        read = c.request("resources/read", {"uri": CAPS_URI})["result"]["contents"][0]
        assert cap["size"] == len(read["text"].encode()) > 0
        # ::test_read_resource_returns_helper_summary: the summary the tool carries, verbatim
        tool = c.request("tools/list")["result"]["tools"][0]
        summary = tool["inputSchema"]["properties"]["code"]["description"].split(
            "Python source code to execute. ", 1)[1]
        assert "Code Execution MCP Capabilities" in read["text"]
        assert summary in read["text"] and summary in tool["description"]
        # ::test_read_resource_mentions_cwd
        assert "cwd" in read["text"]
        # ::test_read_resource_rejects_unknown_uris
        err = c.request("resources/read",
                        {"uri": "resource://mcp-server-code-execution-mode/unknown"})["error"]
        assert err["code"] == -32002
        assert c.request("resources/templates/list")["result"] == {"resourceTemplates": []}
    finally:
        c.close()


def test_list_tools_metadata(home):
    """upstream: tests/test_list_tools_metadata.py::test_run_python_tool_mentions_helper_summary"""
    c = bridge(home)
    try:
        tools = c.request("tools/list")["result"]["tools"]
        assert len(tools) == 1 and tools[0]["name"] == "run_python"
        schema = tools[0]["inputSchema"]
        assert set(schema["properties"]) == {"code", "servers", "timeout"}
        assert schema["properties"]["timeout"] == {
            "type": "integer", "minimum": 1, "maximum": 120, "default": 30,
            "description": "Execution timeout in seconds"}
        assert "runtime.discovered_servers()" in json.dumps(schema)
        r = c.request("tools/call", {"name": "list_servers", "arguments": {}})
        assert r["error"]["code"] == -32602 and "run_python" in r["error"]["message"]
    finally:
        c.close()


# ---- server cwd (upstream: tests/test_server_cwd.py) ----------------------------------------

def test_server_start_uses_configured_cwd(home, tmp_path):
    workdir = tmp_path / "serena-workdir"
    workdir.mkdir()
    write(home / "MCPs" / "serena.json",
          {"mcpServers": {"serena": stub_entry(cwd=str(workdir)),
                          "serena-missing-cwd": stub_entry(cwd="/nonexistent/foobar-b7c9")}})
    c = bridge(home)
    try:
        r = run(c, "r = await mcp_serena.cwd()\n"
                   "print(r['content'][0]['text'] if isinstance(r, dict) else r)",
                servers=["serena"])
        assert r["content"][0]["text"] == str(workdir)
        # ::test_load_server_warns_if_cwd_missing: here it fails and says why
        r = run(c, "print(1)", servers=["serena-missing-cwd"])
        assert r["isError"]
        assert "serena-missing-cwd" in r["content"][0]["text"]
    finally:
        c.close()


# ---- answers: compact and TOON (upstream: tests/test_toon_responses.py) ---------------------

def test_default_output_mode_renders_plain_text(home):
    """::test_default_output_mode_renders_plain_text, ::test_compact_mode_drops_empty_tuple_output
    and ::test_empty_error_field_is_omitted"""
    c = bridge(home)
    try:
        r = run(c, "print('alpha');print('beta')")
        assert not r.get("isError")
        assert r["content"][0]["text"] == "alpha\nbeta" and "```" not in r["content"][0]["text"]
        assert r["structuredContent"] == {"stdout": ["alpha", "beta"]}
        r = run(c, "print(())\nprint('   ')")
        assert r["content"][0]["text"] == "Success (no output)"
        assert r["structuredContent"] == {"summary": "Success (no output)"}
        r = run(c, "import sys\nprint('out')\nprint('warn', file=sys.stderr)\nraise SystemExit(0)")
        assert r["content"][0]["text"] == "out\nstderr:\nwarn" and not r.get("isError")
        assert "error" not in r["structuredContent"]
        r = run(c, "import sys\nprint('partial')\nsys.exit(3)")
        assert r["isError"]
        assert r["content"][0]["text"].split("\n")[:3] == ["status: error", "exit: 3", "partial"]
        assert r["structuredContent"]["exitCode"] == 3
        assert "3" in r["structuredContent"]["error"]
        r = run(c, "1/0")
        text = r["content"][0]["text"]
        assert text.startswith("status: error\nexit: 1\nstderr:\nTraceback")
        assert "ZeroDivisionError" in text
    finally:
        c.close()


TOON = {"MCP_BRIDGE_OUTPUT_MODE": "toon"}


def toon_block(result):
    text = result["content"][0]["text"]
    assert text.startswith("```toon\n") and text.endswith("\n```"), text
    return text[len("```toon\n"):-len("\n```")]


def test_success_response_uses_toon_block(home):
    """::test_success_response_uses_toon_block and ::test_success_response_skips_empty_streams"""
    c = bridge(home, env=TOON)
    try:
        r = run(c, "print('line1'); print('line2')")
        assert not r.get("isError")
        assert toon_block(r) == "status: success\nsummary: Success\nexitCode: 0\n" \
                                "stdout[2]: line1,line2"
        assert r["structuredContent"] == {"status": "success", "summary": "Success",
                                          "exitCode": 0, "stdout": ["line1", "line2"]}
        r = run(c, "x = 1")
        assert toon_block(r) == "status: success\nsummary: Success (no output)\nexitCode: 0"
        assert r["structuredContent"] == {"status": "success", "summary": "Success (no output)",
                                          "exitCode": 0}
        r = run(c, "print('a, b: c'); print('-x')")
        assert toon_block(r).endswith('stdout[2]: "a, b: c","-x"')
    finally:
        c.close()


def test_timeout_response_includes_error_details(home):
    """::test_timeout_response_includes_error_details"""
    c = bridge(home, env=TOON)
    try:
        r = run(c, "import sys, time\nprint('partial output')\n"
                   "print('traceback info', file=sys.stderr)\ntime.sleep(30)", timeout=1)
        assert r["isError"]
        st = r["structuredContent"]
        assert st["status"] == "timeout" and st["summary"] == "Timeout: execution exceeded 1s"
        assert st["stdout"] == ["partial output"] and st["stderr"][0] == "traceback info"
        assert st["timeoutSeconds"] == 1 and st["error"].startswith("Execution timed out after 1")
        # A string with a colon is quoted in TOON.
        assert toon_block(r).startswith('status: timeout\nsummary: "Timeout: execution exceeded '
                                        '1s"\nstdout[1]: partial output\nstderr[1]: traceback')
        # The session survives the interruption, with its variables.
        assert run(c, "y = 5")["structuredContent"]["status"] == "success"
    finally:
        c.close()


def test_validation_error_uses_toon(home):
    """::test_validation_error_uses_toon — and blank code is no code"""
    c = bridge(home, env=TOON)
    try:
        for args in ({}, {"code": ""}, {"code": " \n\t "}):
            r = c.call("run_python", args)
            assert r["isError"]
            expected = {"status": "validation_error", "summary": "Missing 'code' argument",
                        "error": "Missing 'code' argument"}
            assert r["structuredContent"] == expected
            assert toon_block(r) == "status: validation_error\nsummary: Missing 'code' " \
                                    "argument\nerror: Missing 'code' argument"
        r = c.call("run_python", {"code": "print(1)", "timeout": "5"})
        assert r["structuredContent"]["error"] == "'timeout' must be an integer"
        r = c.call("run_python", {"code": "print(1)", "servers": "stub"})
        assert r["structuredContent"]["error"] == "'servers' must be a list"
    finally:
        c.close()


# ---- upstream: tests/test_entrypoint.py -----------------------------------------------------

def test_generates_runtime_modules(home):
    """::test_generates_runtime_modules and ::test_runtime_helpers_sync_and_async_behaviour, the
    helpers sandboxd's runtime has under the same names."""
    c = bridge(home)
    try:
        r = run(c, "import mcp\nfrom mcp import runtime\n"
                   "result = await mcp_stub.echo(message='ok')\n"
                   "assert 'stub' in mcp_servers and 'stub' in LOADED_MCP_SERVERS\n"
                   "assert mcp.runtime is runtime\n"
                   "assert 'stub' in runtime.discovered_servers()\n"
                   "assert runtime.list_servers_sync() == ('stub',)\n"
                   "docs = runtime.query_tool_docs_sync('stub')\n"
                   "assert docs and docs[0]['tool'] == 'echo'\n"
                   "found = runtime.search_tool_docs_sync('echo')\n"
                   "assert found and found[0]['tool'] == 'echo'\n"
                   "assert (await runtime.search_tool_docs('echo'))[0]['tool'] == 'echo'\n"
                   "print('SUMMARY:', runtime.capability_summary())", servers=["stub"])
        assert not r.get("isError"), r
        assert r["content"][0]["text"].startswith("SUMMARY:")
    finally:
        c.close()


# ---- protocol versions, both ways -----------------------------------------------------------

def test_a_2024_11_05_client_and_server_over_stdio(home):
    c = bridge(home, version="2024-11-05")
    try:
        assert c.init["result"]["protocolVersion"] == "2024-11-05"
        assert "title" not in c.init["result"]["serverInfo"]
        tool = c.request("tools/list")["result"]["tools"][0]
        assert not {"title", "outputSchema", "annotations"} & set(tool)
        r = run(c, "r = await mcp_stub.echo(message='old')\n"
                   "print(r['content'][0]['text'] if isinstance(r, dict) else r)",
                servers=["stub"])
        assert r == {"content": [{"type": "text", "text": "old"}]}  # no structuredContent
        assert "title" not in c.request("resources/list")["result"]["resources"][0]
    finally:
        c.close()


def test_a_2024_11_05_server_over_streamable_http(home, tmp_path):
    portfile = tmp_path / "port"
    proc = subprocess.Popen(["/usr/bin/python3", str(OLD), "http", str(portfile)])
    try:
        deadline = time.time() + 30
        while not portfile.exists() and time.time() < deadline:
            time.sleep(0.05)
        url = "http://127.0.0.1:%s/mcp" % portfile.read_text()
        write(home / "MCPs" / "remote.json", {"mcpServers": {"old-http": {"url": url}}})
        c = bridge(home)
        try:
            r = run(c, "r = await mcp_old_http.echo(message='over http')\n"
                       "print(r['content'][0]['text'] if isinstance(r, dict) else r)\n"
                       "b = await mcp_old_http.boom()\n"  # returned, as upstream does
                       "print('boom:', b['isError'], b['content'][0]['text'])",
                    servers=["old-http"])
            assert r["content"][0]["text"] == "over http\nboom: True boom failed on purpose", r
        finally:
            c.close()
    finally:
        proc.terminate()
        proc.wait(10)


# ---- MCP_BRIDGE_* -------------------------------------------------------------------------------

def test_bridge_variables(home):
    c = bridge(home, env={"MCP_BRIDGE_TIMEOUT": "7", "MCP_BRIDGE_MAX_TIMEOUT": "9",
                          "MCP_BRIDGE_MEMORY": "64m", "MCP_BRIDGE_LOG_LEVEL": "DEBUG"})
    try:
        timeout = c.request("tools/list")["result"]["tools"][0]["inputSchema"]["properties"][
            "timeout"]
        assert (timeout["default"], timeout["maximum"]) == (7, 9)
        r = run(c, "import time\ntime.sleep(20)", timeout=60)  # clamped to the maximum
        assert r["structuredContent"]["timeoutSeconds"] == 9
        r = run(c, "x = bytearray(256 << 20)")
        assert r["isError"] and "MemoryError" in r["content"][0]["text"]
    finally:
        logs = c.close()
    assert '"level":"debug"' in logs


@pytest.mark.parametrize("var, value", [("MCP_BRIDGE_TIMEOUT", "soon"),
                                        ("MCP_BRIDGE_MEMORY", "lots"),
                                        ("MCP_BRIDGE_LOG_LEVEL", "LOUD")])
def test_bad_bridge_variables_stop_the_start(home, var, value):
    p = subprocess.run([BIN, *COMPAT], input="", capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=str(home), **{var: value}))
    assert p.returncode == 2 and var in p.stderr, p.stderr


def test_native_mode_ignores_bridge_variables(home):
    c = McpStdio("--no-mcp-discovery", "--mcp-tools", "full",
                 env={"MCP_BRIDGE_TIMEOUT": "7", "HOME": str(home)})
    try:
        tools = c.request("tools/list")["result"]["tools"]
        assert len(tools) == 4
        assert "default 30" in tools[0]["inputSchema"]["properties"]["timeout"]["description"]
    finally:
        c.close()


def test_unknown_compat_mode_is_refused(home):
    p = subprocess.run([BIN, "mcp", "--compat", "other"], input="", capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, HOME=str(home)))
    assert p.returncode == 2 and "code-execution-mode" in p.stderr

