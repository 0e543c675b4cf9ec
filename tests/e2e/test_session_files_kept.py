# SPDX-License-Identifier: MIT
"""Files that outlive the session (docs/SESSIONS.md "Inside a session", docs/DATA.md):
save_image, render_chart, the compat save_file and the execution folders are kept in the
session's workspace, within its quota, and the file:// URLs they return still point at the file
once the session has ended (they used to point into /proc/PID/root of the live session). With
each backend of the state store (conftest.py's `store`): in the state directory the URL names
the workspace's own file; with PostgreSQL the file is a row of the database and the URL names
this host's copy of it (STATE_DIR/copies/). The attack: a forged keep_file request cannot write
outside the workspace."""
import json
import os
import shutil

import pytest

from harness import McpStdio, Server
import stores

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


@pytest.fixture(scope="module")
def srv(store):
    s = Server("--pool-size", "1", "--workspace-quota-mb", "2", *store.args())
    yield s
    s.stop()


def host_root(state_dir, store):
    """Where the file:// URLs of kept files lead: the state directory, or with PostgreSQL its
    copies/ (the state directory of the instance that kept them)."""
    state = os.path.realpath(state_dir)
    return state if store.name == "dir" else os.path.join(state, "copies")


def runs_dir(srv, store, ws):
    state = store.state_dir if store.name == "dir" else srv.state_dir
    return os.path.join(host_root(state, store), "workspaces", ws, "runs")


def assert_kept(store, ws, runs, tenant=None):
    """The store holds each file the URLs name, with the same bytes, and no other."""
    on_host = {n: open(os.path.join(runs, n), "rb").read() for n in os.listdir(runs)
               if not n.startswith(".")}
    assert store.items(ws, "runs", tenant) == on_host


def run(srv, sid, code):
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code})
    assert r.status == 200, r
    return r.json


def new_session(srv, workspace):
    r = srv.request("POST", "/v1/sessions", body={"workspace": workspace})
    assert r.status == 201, r
    return r.json["sessionId"]


CODE = r'''
import json
png = bytes.fromhex(%r)
urls = {"image": save_image("dot.png", png),
        "chart": render_chart([{"k": "a", "v": 1}, {"k": "b", "v": 3}], "bar", "k", "v",
                              filename="chart one.png")}
folder = execution_folder()
(folder / "notes.txt").write_text("written by the code")
print(json.dumps({"urls": urls, "folder": str(folder)}))
''' % PNG.hex()


def test_files_outlive_the_session(srv, store):
    sid = new_session(srv, "kept")
    out = run(srv, sid, CODE)
    assert out["status"] == "ok", out
    got = json.loads(out["stdout"].splitlines()[-1])
    urls = got["urls"]
    # The chart's URL is also what render_chart printed.
    assert urls["chart"] in out["stdout"].splitlines()[0]
    runs = runs_dir(srv, store, "kept")
    for url in urls.values():
        assert url.startswith("file://" + runs + "/"), url
        assert "/proc/" not in url
    assert srv.request("DELETE", "/v1/sessions/%s" % sid).status == 204
    # After the end of the session: the URLs still name the files, with the right bytes.
    with open(urls["image"][len("file://"):], "rb") as f:
        assert f.read() == PNG
    with open(urls["chart"][len("file://"):], "rb") as f:
        assert f.read(8) == PNG[:8]
    assert urls["chart"].endswith("/images_chart_one.png") or "chart_one.png" in urls["chart"]
    kept = sorted(os.listdir(runs))
    run_name = os.path.basename(got["folder"])
    assert any(k.endswith("%s_notes.txt" % run_name) for k in kept), kept
    assert any(k.endswith("%s_code.py" % run_name) for k in kept), kept
    # The store holds them, and the workspace's usage counts them.
    assert_kept(store, "kept", runs)
    r = srv.request("GET", "/v1/workspaces/kept/tools")
    assert r.status == 200 and r.json["usage"]["runFiles"] == len(kept), r
    assert r.json["usage"]["bytes"] == store.bytes("kept", "runs"), r


def test_kept_files_count_against_the_quota(srv):
    sid = new_session(srv, "small")
    out = run(srv, sid, "try:\n    save_image('big.png', b'\\x89PNG' + bytes(3 << 20))\n"
                        "except MCPError as e:\n    print('REFUSED', e)")
    assert out["status"] == "ok", out
    assert out["stdout"].startswith("REFUSED keep_file: the workspace is full"), out


def test_compat_save_file_outlives_the_session(tmp_path, store):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = [] if store.name == "dir" else store.args()
    m = McpStdio("--compat", "code-execution-mode", "--state-dir", str(state), *db)
    try:
        r = m.call("run_python", {"code": "print(save_file('out.csv', 'a,b\\n1,2\\n'))"})
        text = r["content"][0]["text"]
        url = [w for w in text.split() if w.startswith("file://")][0]
    finally:
        m.close()  # the connection, and its session, end
    path = url[len("file://"):]
    assert "/proc/" not in url
    assert path.startswith(os.path.join(host_root(state, store), "workspaces", "default",
                                        "runs") + "/"), url
    with open(path) as f:
        assert f.read() == "a,b\n1,2\n"
    if store.name != "dir":  # the row, in the database the session's instance shared
        assert store.items("default", "runs")[os.path.basename(path)] == b"a,b\n1,2\n"


FORGE = r'''
import json, os, struct, time, base64
for i, path in enumerate(["../../escaped.txt", "a/../../escaped.txt", "/tmp/escaped.txt",
                          ".hidden", "x\n../escaped.txt", "ok/fine.txt"]):
    body = json.dumps({"type": "rpc_request", "id": 7000 + i, "payload": {
        "type": "keep_files", "files": [{"path": path,
                                         "content": base64.b64encode(b"forged").decode()}]}}).encode()
    os.write(3, struct.pack(">I", len(body)) + body)
time.sleep(0.5)
print("sent")
'''


def test_forged_keep_file_cannot_leave_the_workspace(srv, store):
    """keep_file requests written by the code itself, with paths that climb, are absolute or
    hold a newline: refused, or kept flattened inside the workspace's runs/ directory."""
    sid = new_session(srv, "forged")
    out = run(srv, sid, FORGE)
    assert out["stdout"] == "sent\n", out
    runs = runs_dir(srv, store, "forged")
    state = store.state_dir if store.name == "dir" else srv.state_dir
    for root, _, files in os.walk(os.path.realpath(state)):
        for name in files:
            if "escaped" in name or "fine" in name or "hidden" in name:
                assert root == runs, os.path.join(root, name)
    kept = sorted(n.split("_", 1)[1] for n in os.listdir(runs))
    assert kept == [".hidden", "_tmp_escaped.txt", "ok_fine.txt"], kept
    assert_kept(store, "forged", runs)
    assert not os.path.exists("/tmp/escaped.txt")


def test_with_postgresql_the_copies_are_a_cache_of_the_rows(postgres):
    """PostgreSQL: what a session kept is a row another instance counts at once; the copies in
    the state directory are this host's alone and may go (the rows stay), and no workspace is
    kept in the state directory itself."""
    store = stores.PgStore(postgres)
    a = Server("--pool-size", "1", *store.args())
    b = None
    try:
        sid = new_session(a, "cache")
        out = run(a, sid, "print(save_image('one.png', bytes.fromhex(%r)))" % PNG.hex())
        url = out["stdout"].strip()
        assert url.startswith("file://" + runs_dir(a, store, "cache") + "/"), out
        assert not os.path.exists(os.path.join(a.state_dir, "workspaces"))
        shutil.rmtree(os.path.join(a.state_dir, "copies"))
        b = Server("--pool-size", "1", *store.args())
        rows = store.items("cache", "runs")  # the image, and the run's code.py
        assert rows[os.path.basename(url)] == PNG and len(rows) == 2, rows.keys()
        r = b.request("GET", "/v1/workspaces/cache/tools")
        assert r.status == 200 and r.json["usage"]["runFiles"] == len(rows), r
        # The next file kept makes the copies' directories again.
        out = run(a, sid, "print(save_image('two.png', bytes.fromhex(%r)))" % PNG.hex())
        with open(out["stdout"].strip()[len("file://"):], "rb") as f:
            assert f.read() == PNG
    finally:
        a.stop()
        if b:
            b.stop()
