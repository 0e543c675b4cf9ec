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

from harness import BIN, McpStdio, Server, session_create, session_run

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


# ---- one of sandboxd's stores into the other -----------------------------------------------

TENANTS = {"tenants": {"acme": {"token": "acme-token-0123456789abcdef"}}}
ACME = {"Authorization": "Bearer acme-token-0123456789abcdef"}
OPERATOR_TOKEN = "operator-token-0123456789abcdef"
OPERATOR = {"Authorization": "Bearer " + OPERATOR_TOKEN}
STEPS = ("startAt: first\nsteps:\n"
         "  first: {type: control, output: {note: $.requestData.body.note}, next: second}\n"
         "  second: {type: control, output: $.steps.first.output, end: true}\n")


def migrate_stores(tmp_path, *args):
    p = migrate(tmp_path, *args)
    return p.returncode, p.stdout.splitlines(), p.stderr


def step(srv, app, step_id, body=None, token_headers=None):
    r = srv.execute({"requestId": "r", "requestData": {"source": "t", "body": body or {}},
                     "context": {"appId": app, "handlerType": "WORKFLOW", "mcp_endpoint": "local",
                                 "workflowInfo": {"workflowId": "flows/steps.yaml",
                                                  "stepId": step_id, "runId": "run-7"}}},
                    headers=token_headers)
    assert r.status == 200, r
    return r.json["data"]


def fill(srv):
    """What an agent and a workflow leave in a store."""
    sid = session_create(srv, workspace="proj")["sessionId"]
    out = session_run(srv, sid, "save_memory('plan', {'steps': [1, 2]}, metadata={'t': 'x'})\n"
                                "save_memory('odd key/ü', None)\n"
                                "def helper(x):\n    return x + 1\nsave_tool(helper)\n"
                                "save_file('data.csv', b'a,b\\n1,2\\n')\n"
                                "(execution_folder() / 'out.txt').write_text('kept')\n"
                                "[get_memory_info(k) for k in ('plan', 'odd key/ü')]")
    assert out["status"] == "ok", out
    r = srv.request("POST", "/v1/sessions", body={"workspace": "proj"}, headers=ACME)
    assert r.status == 201, r
    out = session_run(srv, r.json["sessionId"], "save_memory('acme-only', 42)")
    assert out["status"] == "ok", out
    assert step(srv, "demo", "first", {"note": "kept"}, ACME)["status"] == "completed"
    return out


def check(srv):
    """Everything fill() left is there, as it was; the createdAt of plan."""
    info = session_create(srv, workspace="proj")
    assert info["toolsLoaded"] == ["helper"], info
    out = session_run(srv, info["sessionId"],
                      "(load_memory('plan'), load_memory('odd key/ü', default=0), helper(1), "
                      "[f['name'] for f in list_execution_files()], "
                      "get_memory_info('plan')['createdAt'], load_memory('acme-only'))")
    assert out["status"] == "ok", out
    got = eval(out["result"])
    assert got[:4] == ({"steps": [1, 2]}, None, 2, ["data.csv"]) and got[5] is None, got
    r = srv.request("POST", "/v1/sessions", body={"workspace": "proj"}, headers=ACME)
    assert session_run(srv, r.json["sessionId"], "load_memory('acme-only')")["result"] == "42"
    assert step(srv, "demo", "second", token_headers=ACME)["output"] == {"note": "kept"}
    r = srv.request("GET", "/v1/workspaces/proj/tools")
    assert r.status == 200 and r.json["usage"]["runFiles"] == 2, r  # the run's out.txt, code.py
    return got[4]


class Operator(Server):
    """A sandboxd whose requests carry the operator's token unless they carry another."""

    def request(self, method, path, body=None, headers=None, fresh=False, timeout=120):
        return super().request(method, path, body, headers or OPERATOR, fresh=fresh,
                               timeout=timeout)


def test_a_state_directory_into_postgresql_and_back(postgres, tmp_path):
    apps = tmp_path / "apps"
    (apps / "demo" / "flows").mkdir(parents=True)
    (apps / "demo" / "flows" / "steps.yaml").write_text(STEPS)
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(TENANTS))
    os.chmod(tenants, 0o600)
    src = tmp_path / "state"
    src.mkdir(mode=0o700)
    serve = ["--pool-size", "1", "--tenants", str(tenants), "--api-token", OPERATOR_TOKEN]
    s = Operator(*serve, "--state-dir", str(src), definitions=apps)
    try:
        fill(s)
        created = check(s)
    finally:
        s.stop()
    before = snapshot(src)
    db = postgres.create_db()
    url = postgres.url(db)
    to_pg = ["--from-state-dir", str(src), "--state-store", url, "--state-store-password-file",
             postgres.password_file]
    code, lines, err = migrate_stores(tmp_path, *to_pg)
    assert code == 0, (lines, err)
    assert lines[-1] == "8 copied, 0 unchanged, 0 skipped, 0 failed", lines
    assert any(x.startswith("copied run-file proj/") and x.endswith("_out.txt")
               for x in lines), lines
    assert "copied memory proj/plan" in lines and "copied tool proj/helper" in lines, lines
    assert "copied memory acme/proj/acme-only" in lines, lines
    assert any(x.startswith("copied runtime-value demo/sandboxd/workflow/") for x in lines), lines
    assert snapshot(src) == before  # the source is only read
    # Again: nothing new, nothing replaced.
    code, lines, err = migrate_stores(tmp_path, *to_pg)
    assert code == 0 and lines[-1] == "0 copied, 8 unchanged, 0 skipped, 0 failed", lines
    s = Operator(*serve, *postgres.store_args(db), definitions=apps)
    try:
        assert check(s) == created  # times kept
        sid = session_create(s, workspace="proj")["sessionId"]
        session_run(s, sid, "save_memory('plan', 'changed in postgresql')")
    finally:
        s.stop()
    code, lines, err = migrate_stores(tmp_path, *to_pg)
    assert code == 0 and "skipped memory proj/plan: the destination has another of that name " \
        "(nothing was replaced)" in lines, lines
    # And back, into a new state directory: the database is only read.
    rows = postgres.psql(db, "SELECT md5(string_agg(encode(data, 'hex'), ',' ORDER BY ws, kind, "
                             "name)) FROM sandboxd_items")
    back = tmp_path / "back"
    back.mkdir(mode=0o700)
    code, lines, err = migrate_stores(tmp_path, "--from-state-store", url, "--state-store-password-file",
                               postgres.password_file, "--state-dir", str(back))
    assert code == 0 and lines[-1] == "8 copied, 0 unchanged, 0 skipped, 0 failed", (lines, err)
    assert [p.read_text() for p in (back / "workspaces" / "proj" / "runs").glob("*_out.txt")] \
        == ["kept"]
    assert postgres.psql(db, "SELECT md5(string_agg(encode(data, 'hex'), ',' ORDER BY ws, kind, "
                             "name)) FROM sandboxd_items") == rows
    s = Operator(*serve, "--state-dir", str(back), definitions=apps)
    try:
        sid = session_create(s, workspace="proj")["sessionId"]
        assert session_run(s, sid, "load_memory('plan')")["result"] == "'changed in postgresql'"
    finally:
        s.stop()
    # Bad usage is refused before anything is read.
    code, lines, err = migrate_stores(tmp_path, "--from-state-dir", str(src), "--state-dir", str(back),
                               "--state-store", url)
    assert code == 2 and "one destination" in err, err
