# SPDX-License-Identifier: MIT
"""Data work (CONTRACT §12, docs/DATA.md): numpy, pandas and matplotlib inside the jail; the
datascience and custom profiles; artifacts (figures, display(), collected files) on /execute,
sessions (JSON and SSE) and MCP run_python; taskDetails.files; session files over HTTP; and
--site-packages with libraries reached through symlinks. Real server, real libraries."""
import base64
import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import tempfile

import pytest

from harness import BIN, McpStdio, Server, executor_request, jit_request, run_cli, sse_events


def png_size(data):
    """(width, height) of a PNG, after checking its signature."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:16]
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def artifact_bytes(a):
    data = base64.b64decode(a["data"], validate=True)
    assert len(data) == a["size"]
    return data


@pytest.fixture(scope="module")
def ds(apps_dir):
    s = Server("--pool-size", "2", "--profile-pool-size", "1", "--session-pool-size", "1",
               "--profile", "dec=decimal,fractions:memory=96", definitions=apps_dir)
    yield s
    s.stop()


def ex(server, code, **task):
    task.setdefault("timeoutMs", 30000)
    r = server.execute(executor_request(code, **task))
    assert r.status == 200, r
    return r.json


def ok(resp):
    assert resp["resultType"] == "generic", json.dumps(resp)[:3000]
    return resp["data"]


# ---- the scientific stack in the jail ------------------------------------------------------------

def test_numpy_pandas_matplotlib_work_in_a_fresh_interpreter(ds):
    """The default pool: nothing imported ahead, every library loaded inside the jail."""
    r = ds.execute(jit_request("handlers/science.py", "stack", timeoutMs=30000))
    d = ok(r.json)
    assert d["inv"] == [[0.6, -0.2], [-0.2, 0.4]]
    assert d["dot"] == float(sum(sum(x * x for x in range(200 * i, 200 * i + 200))
                                 for i in range(200)))
    assert d["totals"] == {"a": 4, "b": 6, "c": 5}
    assert d["utc"] == "2024-07-01T10:00:00+00:00"
    assert d["tz"] == "-1 day, 19:00:00"
    assert d["png"] == "89504e470d0a1a0a" and d["pngBytes"] > 1000
    assert d["backend"] == "module://sandboxd_runtime.mplbackend"


def test_the_cold_jail_has_the_stack_too(apps_dir):
    code, out, err = run_cli(apps_dir / "testapp" / "handlers" / "science.py", "--function",
                             "stack", "--timeout-ms", "30000")
    assert code == 0, err
    assert out["totals"] == {"a": 4, "b": 6, "c": 5}


# ---- profiles -------------------------------------------------------------------------------------

CHART = """
import pandas as pd
import matplotlib.pyplot as plt
import sys
df = pd.DataFrame({"city": ["Oslo", "Lima", "Oslo", "Pune"], "sales": [3, 5, 4, 7]})
summary = df.groupby("city", as_index=False)["sales"].sum()
fig, ax = plt.subplots(figsize=(4, 3))
ax.bar(summary["city"], summary["sales"])
ax.set_title("sales")
display(summary)
{"summary": summary.to_dict("records"), "preloaded": "pandas" in sys.modules}
"""


def test_datascience_profile_answers_with_a_chart_and_a_table(ds):
    first = ex(ds, CHART, profile="datascience")
    second = ex(ds, CHART, profile="datascience")
    for resp in (first, second):
        d = ok(resp)["result"]
        assert d["summary"] == [{"city": "Lima", "sales": 5}, {"city": "Oslo", "sales": 7},
                                {"city": "Pune", "sales": 7}]
        table, chart = resp["artifacts"]
        assert table["name"].startswith("display-") and table["name"].endswith(".html")
        assert table["mimeType"] == "text/html"
        html = artifact_bytes(table).decode()
        assert "<table" in html and "Pune" in html
        assert (chart["name"], chart["mimeType"]) == ("figure-1.png", "image/png")
        width, height = png_size(artifact_bytes(chart))
        assert 200 < width < 500 and 150 < height < 400, (width, height)  # 4 x 3 in
    hit = {m["name"]: m["value"] for m in second["metrics"]}["sandbox.pool_hit"]
    assert hit == 1
    prof = ds.health()["profiles"]["datascience"]
    assert prof["builtin"] is True and prof["memoryMb"] == 512
    assert prof["pool"]["started"] is True
    mem = prof["pool"]["memory"]
    assert mem["zygotePssBytes"] > 20 << 20, mem  # numpy, pandas and matplotlib live there
    # the second execution had its interpreter ready: pandas was imported before the code ran
    assert ok(second)["result"]["preloaded"] is True


def test_a_custom_profile_imports_its_modules_ahead(ds):
    code = "import sys\n['decimal' in sys.modules, 'fractions' in sys.modules]"
    assert ok(ex(ds, code, profile="dec"))["result"] == [True, True]
    assert ok(ex(ds, code))["result"] == [False, False]
    assert ok(ex(ds, code, profile="default"))["result"] == [False, False]
    # the profile's memory applies when the request names none
    prof = ds.health()["profiles"]["dec"]
    assert prof["memoryMb"] == 96 and prof["builtin"] is False


def test_unknown_profile_and_bad_data_fields_are_400(ds):
    cases = [
        ({"profile": "nope"}, "context.taskDetails.profile"),
        ({"profile": "../x"}, "context.taskDetails.profile"),
        ({"files": {"../x": "aGk="}}, "context.taskDetails.files"),
        ({"files": {"/etc/x": "aGk="}}, "context.taskDetails.files"),
        ({"files": {"x": "not base64!"}}, "context.taskDetails.files"),
        ({"files": ["x"]}, "context.taskDetails.files"),
        ({"collect": ["../*"]}, "context.taskDetails.collect"),
        ({"collect": "*.png"}, "context.taskDetails.collect"),
    ]
    for task, field in cases:
        r = ds.execute(executor_request("1", **task))
        assert r.status == 400, (task, r)
        assert r.json["error"]["field"] == field, (task, r)


# ---- artifacts ------------------------------------------------------------------------------------

DISPLAYS = """
class Svg:
    def _repr_svg_(self):
        return '<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"/>'
class Md:
    def _repr_markdown_(self):
        return "# title"
class Js:
    def _repr_json_(self):
        return {"a": [1, 2]}
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": "x", "text/html": "<b>bundle</b>"}
class Plain:
    def __repr__(self):
        return "Plain()"
display(Svg(), Md(), Js(), Bundle(), Plain())
"""


def test_display_follows_the_ipython_protocol(ds):
    resp = ex(ds, DISPLAYS)
    got = [(a["mimeType"], artifact_bytes(a)) for a in resp["artifacts"]]
    assert got == [
        ("image/svg+xml", b'<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"/>'),
        ("text/markdown", b"# title"),
        ("application/json", b'{"a": [1, 2]}'),
        ("text/html", b"<b>bundle</b>"),
    ], got
    assert ok(resp)["stdout"] == "Plain()\n"  # no rich form: printed, as a REPL would


def test_plt_show_sends_each_figure_once_and_jit_gets_artifacts(ds):
    code = ("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n"
            "plt.figure('second one')\nplt.plot([3, 1])\nlen(plt.get_fignums())")
    resp = ex(ds, code, profile="datascience")
    assert ok(resp)["result"] == 1  # the first was closed by show()
    assert [a["name"] for a in resp["artifacts"]] == ["figure-1.png", "second-one.png"]
    for a in resp["artifacts"]:
        png_size(artifact_bytes(a))


def test_a_figure_drawn_before_an_exception_still_comes_back(ds):
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nraise ValueError('late')"
    resp = ex(ds, code, profile="datascience")
    assert resp["data"]["code"] == "APPLICATION_ERROR"
    assert [a["name"] for a in resp["artifacts"]] == ["figure-1.png"]
    png_size(artifact_bytes(resp["artifacts"][0]))


DATA_MD = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "DATA.md").read_text()


def test_the_documented_curl_example_returns_its_chart(ds):
    body = json.loads(re.search(r"-d '(\{.*?\})'", DATA_MD, re.S).group(1))
    resp = ds.execute(body).json
    assert ok(resp)["result"] == {"Lima": 5, "Oslo": 7, "Pune": 7}
    table, chart = resp["artifacts"]
    assert table["mimeType"] == "text/html" and "Pune" in artifact_bytes(table).decode()
    assert (chart["name"], chart["mimeType"]) == ("figure-1.png", "image/png")
    width, height = png_size(artifact_bytes(chart))
    assert "(%d × %d pixels)" % (width, height) in DATA_MD


def test_files_go_in_and_collected_files_come_back(ds):
    files = {"input/numbers.csv": base64.b64encode(b"1\n2\n3\n").decode(),
             "blob.bin": base64.b64encode(bytes(range(256))).decode()}
    r = ds.execute(jit_request("handlers/science.py", "read_input", files=files))
    assert ok(r.json) == {"cwd": "/tmp", "rows": ["1", "2", "3"]}
    code = ("import os\nos.makedirs('out/deep')\nopen('out/a.csv','w').write('x,y\\n1,2\\n')\n"
            "open('out/deep/b.json','w').write('{}')\nopen('skip.txt','w').write('no')\n"
            "os.symlink('/etc/passwd', 'out/link.csv')\n"
            "assert open('blob.bin','rb').read() == bytes(range(256))\n")
    resp = ex(ds, code, files=files, collect=["out/*.csv", "out/**/*.json", "missing/*"])
    ok(resp)
    got = {a["name"]: (a["mimeType"], artifact_bytes(a)) for a in resp["artifacts"]}
    assert got["out/a.csv"] == ("text/csv", b"x,y\n1,2\n")
    assert got["out/deep/b.json"] == ("application/json", b"{}")
    assert "skip.txt" not in got
    assert set(got) <= {"out/a.csv", "out/deep/b.json", "out/link.csv"}


def test_files_that_do_not_fit_are_413(make_server):
    s = make_server("--pool-size", "1", "--tmp-size-mb", "1")
    big = base64.b64encode(b"x" * (2 << 20)).decode()
    r = s.execute(executor_request("1", files={"big.bin": big}))
    assert r.status == 413, r
    assert r.json["error"]["code"] == "FILES_TOO_LARGE"


def test_artifact_caps_keep_the_result_and_say_what_was_dropped(make_server):
    s = make_server("--pool-size", "1", "--max-artifacts", "2", "--max-artifacts-mb", "1")
    code = ("import matplotlib.pyplot as plt\nfor i in range(3):\n    plt.figure()\n"
            "    plt.plot([i, 1])\nopen('big.bin', 'wb').write(b'x' * (2 << 20))\n42")
    resp = ex(s, code, collect=["big.bin"])
    assert ok(resp)["result"] == 42
    assert len(resp["artifacts"]) == 2
    err = resp["artifactsError"]
    assert err["code"] == "ARTIFACT_LIMIT"
    assert err["dropped"] == 2 and err["maxCount"] == 2 and err["maxBytes"] == 1 << 20
    assert "--max-artifacts" in err["message"]


# ---- sessions -----------------------------------------------------------------------------------

def create_session(server, **body):
    r = server.request("POST", "/v1/sessions", body)
    assert r.status == 201, r
    return r.json


def test_a_session_with_a_profile_streams_its_figures(ds):
    info = create_session(ds, profile="datascience")
    assert info["profile"] == "datascience" and info["memoryMb"] == 512
    sid = info["sessionId"]
    code = ("import pandas as pd, matplotlib.pyplot as plt\n"
            "df = pd.DataFrame({'x': [1, 2, 3], 'y': [3, 1, 2]})\n"
            "df.plot(x='x', y='y')\nplt.show()\nprint('after show')\ndisplay(df)\nlen(df)")
    r = ds.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code},
                   headers={"Accept": "text/event-stream"})
    assert r.status == 200, r
    names = []
    for block in r.raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        if "event" in lines:
            names.append(lines["event"])
    events = sse_events(r.raw)
    displays = [e for e, n in zip(events, names) if n == "display"]
    assert [d["mimeType"] for d in displays] == ["image/png", "text/html"], names
    png_size(artifact_bytes(displays[0]))
    done = events[-1]
    assert names[-1] == "execution_done" and done["status"] == "ok" and done["result"] == "3"
    assert [a["mimeType"] for a in done["artifacts"]] == ["image/png", "text/html"]
    # a later execution does not repeat them; state survives
    r = ds.request("POST", "/v1/sessions/%s/execute" % sid, {"code": "df.y.sum()"})
    assert r.json["result"] == "6" and r.json["artifacts"] == []
    assert ds.request("DELETE", "/v1/sessions/" + sid).status == 204


def test_session_profile_must_exist(ds):
    r = ds.request("POST", "/v1/sessions", {"profile": "nope"})
    assert r.status == 400 and r.json["error"]["field"] == "profile", r
    r = ds.request("POST", "/v1/sessions", {"profile": 3})
    assert r.status == 400 and r.json["error"]["field"] == "profile", r


def test_session_files_over_http(ds):
    sid = create_session(ds)["sessionId"]
    base = "/v1/sessions/%s/files" % sid
    blob = bytes(range(256)) * 10
    r = ds.request("PUT", base + "/data/in.bin", blob)
    assert r.status == 201 and r.json == {"path": "data/in.bin", "size": 2560}, r
    code = ("import os\nd = open('data/in.bin','rb').read()\n"
            "open('data/out.txt','w').write(str(len(d)))\nos.stat('data/in.bin').st_uid")
    r = ds.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    assert r.json["status"] == "ok" and r.json["result"] == "65534", r
    listing = ds.request("GET", base).json
    assert [(f["path"], f["size"]) for f in listing["files"]] == [("data/in.bin", 2560),
                                                                   ("data/out.txt", 4)]
    assert listing["quotaBytes"] == 64 << 20 and listing["usedBytes"] > 0
    got = ds.request("GET", base + "/data/in.bin")
    assert got.status == 200 and got.raw == blob
    assert got.header("Content-Type") == "application/octet-stream"
    assert ds.request("GET", base + "/data/out.txt").raw == b"2560"
    assert ds.request("DELETE", base + "/data/in.bin").status == 204
    assert ds.request("GET", base + "/data/in.bin").status == 404
    assert ds.request("DELETE", base + "/data/in.bin").status == 404
    assert ds.request("GET", base + "/data").status == 409
    assert ds.request("PUT", base + "/data", b"x").status == 409
    for bad in ("/a//b", "/./a", "/..%2Fx", "/%2e%2e/x"):
        assert ds.request("GET", base + bad).status in (400, 404), bad
    assert ds.request("POST", base + "/x", b"x").status == 405
    assert ds.request("GET", "/v1/sessions/nope/files").status == 404
    assert ds.request("DELETE", "/v1/sessions/" + sid).status == 204
    assert ds.request("GET", base).status == 404


def test_session_files_quota_is_413(make_server):
    s = make_server("--pool-size", "1", "--session-pool-size", "1", "--tmp-size-mb", "1")
    sid = create_session(s)["sessionId"]
    r = s.request("PUT", "/v1/sessions/%s/files/big.bin" % sid, b"x" * (2 << 20))
    assert r.status == 413 and r.json["error"]["code"] == "QUOTA_EXCEEDED", r
    assert s.request("PUT", "/v1/sessions/%s/files/small.bin" % sid, b"x" * 1000).status == 201


# ---- MCP ----------------------------------------------------------------------------------------

def test_mcp_run_python_returns_images_and_resources():
    c = McpStdio("--mcp-profile", "datascience", "--profile-pool-size", "1")
    try:
        res = c.call("run_python", {
            "code": ("import pandas as pd, matplotlib.pyplot as plt\n"
                     "df = pd.read_csv('in/sales.csv')\nprint(open('raw.bin','rb').read())\n"
                     "df.plot()\ndisplay(df)\nint(df.n.sum())"),
            "files": {"in/sales.csv": "n\n1\n2\n", "raw.bin": {"base64": "AAEC"}},
            "timeout": 60}, timeout=180)
        assert not res.get("isError"), res
        types = [b["type"] for b in res["content"]]
        assert types == ["text", "resource", "image"], types
        text = res["content"][0]["text"]
        assert "b'\\x00\\x01\\x02'" in text and "[result] 3" in text
        assert "[artifact] figure-1.png (image/png," in text
        image = res["content"][2]
        assert image["mimeType"] == "image/png"
        png_size(base64.b64decode(image["data"]))
        resource = res["content"][1]["resource"]
        assert resource["mimeType"] == "text/html" and "<table" in resource["text"]
        assert resource["uri"].startswith("sandboxd://artifacts/display-")
        meta = res["structuredContent"]["artifacts"]
        assert [m["mimeType"] for m in meta] == ["text/html", "image/png"]
        assert all("data" not in m for m in meta)
        bad = c.call("run_python", {"code": "1", "files": {"../x": "y"}})
        assert bad["isError"] and "files" in bad["content"][0]["text"]
    finally:
        c.close()


# ---- --site-packages ------------------------------------------------------------------------------

LIB_C = "int answer(void) { return 42; }\n"
PKG_INIT = """
import ctypes, os
_here = os.path.dirname(__file__)
# libs/libanswer.so -> <elsewhere>/current (absolute) -> versions/libanswer.so.1 (relative)
answer = ctypes.CDLL(os.path.join(_here, "libs", "libanswer.so")).answer
"""


@pytest.fixture
def venv_site():
    """A virtualenv-like site directory whose package loads a library through a chain of
    symlinks that leaves the directory: like an alternatives link, and outside /tmp (the
    sandbox has its own /tmp)."""
    top = tempfile.mkdtemp(prefix="sandboxd-venv-", dir="/var/tmp")
    os.chmod(top, 0o755)
    site = os.path.join(top, "site-packages")
    ext = os.path.join(top, "external")
    os.makedirs(os.path.join(site, "answerpkg", "libs"))
    os.makedirs(os.path.join(ext, "versions"))
    src = os.path.join(top, "answer.c")
    with open(src, "w") as f:
        f.write(LIB_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", os.path.join(ext, "versions", "libanswer.so.1"),
                    src], check=True)
    os.symlink("versions/libanswer.so.1", os.path.join(ext, "current"))
    os.symlink(os.path.join(ext, "current"), os.path.join(site, "answerpkg", "libs", "libanswer.so"))
    with open(os.path.join(site, "answerpkg", "__init__.py"), "w") as f:
        f.write(PKG_INIT)
    for root, dirs, files in os.walk(top):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    yield site
    shutil.rmtree(top, ignore_errors=True)


def test_site_packages_and_the_libraries_their_links_reach(make_server, venv_site):
    s = make_server("--pool-size", "1", "--site-packages", venv_site)
    resp = ex(s, "import answerpkg\nanswerpkg.answer()")
    assert ok(resp)["result"] == 42
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("import answerpkg\ndef main(r):\n    return answerpkg.answer()\n")
    try:
        p = subprocess.run([BIN, "run", f.name, "--function", "main", "--site-packages",
                            venv_site], capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(f.name)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout) == 42


def test_site_packages_under_tmp_is_refused():
    p = subprocess.run([BIN, "run", "/dev/null", "--site-packages", "/tmp"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode != 0 and "--site-packages" in p.stderr
