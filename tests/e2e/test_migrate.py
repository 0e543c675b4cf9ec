# SPDX-License-Identifier: MIT
"""`sandboxd migrate`: the saved tools (user_tools.py) and memories (memory/*.json) of
mcp-server-code-execution-mode and its fork, brought into a sandboxd workspace and then used
from `sandboxd mcp --compat code-execution-mode` as a user would, each item reported imported
or skipped with its reason, the source never modified."""
import hashlib
import json
import os
import pathlib
import subprocess

from harness import BIN, McpStdio

USER_TOOLS = '''import math


def area(r):
    return math.pi * r * r


def greet(name="world"):
    """Say hello."""
    return "hello " + name


def twice(x):
    import math
    return math.floor(x) * 2


@staticmethod
def decorated():
    pass


def greet(name="again"):
    return "hi " + name


def bad_default(x=len("ab")):
    return x
'''


def memory(path, doc):
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))


def upstream_state(base):
    """upstream's layout (~/MCPs/user_tools/user_tools.py) with the fork's memory files."""
    tools = base / "user_tools"
    (tools / "memory").mkdir(parents=True)
    (tools / "user_tools.py").write_text(USER_TOOLS)
    memory(tools / "memory" / "project_context.json",
           {"key": "project context", "value": {"goal": "Build API", "progress": ["Step 1"]},
            "metadata": {"tags": ["important"]}, "created_at": 1700000000.25,
            "updated_at": 1700000100.5})
    memory(tools / "memory" / "counter.json", {"value": 3})
    memory(tools / "memory" / "broken.json", "not json")
    os.symlink("/etc/passwd", str(tools / "memory" / "linked.json"))


def snapshot(root):
    """Every path under root with its bytes' hash, mode and mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            data = b"" if not os.path.isfile(p) or os.path.islink(p) else open(p, "rb").read()
            out[p] = (st.st_mode, st.st_mtime_ns, hashlib.sha256(data).hexdigest())
    return out


def migrate(home, *args, env=None):
    e = dict(os.environ, HOME=str(home))
    e.pop("MCP_BRIDGE_STATE_DIR", None)
    e.update(env or {})
    return subprocess.run([BIN, "migrate", *args], capture_output=True, text=True, env=e,
                          timeout=60)


def test_migrate_brings_tools_and_memories_and_reports_each(tmp_path):
    home = tmp_path / "home"
    upstream_state(home / "MCPs")
    before = snapshot(home / "MCPs")
    state = tmp_path / "state"
    p = migrate(home, "--state-dir", str(state))
    assert p.returncode == 0, p.stderr
    tools_py = home / "MCPs" / "user_tools" / "user_tools.py"
    assert p.stdout.splitlines() == [
        "from %s into workspace default of %s" % (home / "MCPs", state),
        "skipped tool at line 1 of %s: an import, not a function definition: a saved tool is "
        "one def (put imports inside the function)" % tools_py,
        "skipped tool area (line 4): it uses math, imported at the top of the file; a saved "
        "tool is one def: move the import inside the function",
        "skipped tool greet (line 8): defined again later in the file (line 23); that one is "
        "used",
        "imported tool twice (line 13)",
        "skipped tool decorated (line 18): a saved tool cannot have decorators",
        "imported tool greet (line 23)",
        "skipped tool bad_default (line 27): the default values of a saved tool must be "
        "literals",
        "skipped memory broken.json: not a memory of the fork ({key, value, ...} as JSON)",
        "imported memory counter (counter.json)",
        "skipped memory linked.json: a symbolic link",
        "imported memory project context (project_context.json)",
        "4 imported, 7 skipped",
    ]
    assert snapshot(home / "MCPs") == before  # the source is only read

    # Again: nothing is replaced, every item says why.
    again = migrate(home, "--state-dir", str(state))
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "0 imported, 11 skipped"
    assert "skipped tool twice (line 13): the workspace has a saved tool of that name " \
           "already" in again.stdout
    assert "skipped memory project context (project_context.json): the workspace has a " \
           "memory project context already" in again.stdout

    # What was imported works in the drop-in, as it did upstream.
    (home / "MCPs" / "none.json").write_text("{}")
    c = McpStdio("mcp", "--compat", "code-execution-mode", "--session-pool-size", "1",
                 "--state-dir", str(state), env={"HOME": str(home)}, exact=True)
    try:
        r = c.call("run_python", {"code": "import json\nprint(json.dumps([twice(2.5), greet(), "
                                          "get_memory_info('project context'), "
                                          "load_memory('counter')]))"})
        assert not r.get("isError"), r
        t, g, info, counter = json.loads(r["content"][0]["text"])
        assert (t, g, counter) == (4, "hi again", 3)
        assert info == {"key": "project context",
                        "value": {"goal": "Build API", "progress": ["Step 1"]},
                        "metadata": {"tags": ["important"]}, "created_at": 1700000000.25,
                        "updated_at": 1700000100.5}
    finally:
        c.close()


def test_migrate_follows_mcp_bridge_state_dir_and_the_fork_layout(tmp_path):
    """The fork keeps user_tools.py and memory/ directly in MCP_BRIDGE_STATE_DIR, which
    `sandboxd mcp --compat` also takes as its state directory: migrate reads and writes there,
    into the workspace named."""
    home = tmp_path / "home"
    bridge = home / "bridge"
    (bridge / "memory").mkdir(parents=True)
    (bridge / "user_tools.py").write_text("def one():\n    return 1\n")
    memory(bridge / "memory" / "k.json", {"key": "k", "value": "v"})
    p = migrate(home, "--workspace", "proj", env={"MCP_BRIDGE_STATE_DIR": "~/bridge"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["from %s into workspace proj of %s" % (bridge, bridge),
                                     "imported tool one (line 1)", "imported memory k (k.json)",
                                     "2 imported, 0 skipped"]
    assert (bridge / "workspaces" / "proj" / "tools" / "one.py").is_file()


def test_migrate_without_upstream_state_says_so(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    p = migrate(home, "--state-dir", str(tmp_path / "state"))
    assert p.returncode == 1
    assert "holds no user_tools.py and no memory directory" in p.stderr
    assert not (tmp_path / "state").exists()
    p = migrate(home, "--workspace", "../x")
    assert p.returncode == 2 and "not a workspace name" in p.stderr
    assert "--from DIR" in migrate(home, "--help").stdout
    assert pathlib.Path(BIN).is_file()
