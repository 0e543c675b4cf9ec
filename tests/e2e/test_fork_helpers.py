# SPDX-License-Identifier: MIT
"""The helpers of aniprasad/mcp-server-code-execution-mode (the fork of upstream) in
`sandboxd mcp --compat code-execution-mode`, driven over stdio as its users drive it:
memories with the fork's return values and timestamps, time zones, the execution folder per
run (code.py, output.txt), and save_file / save_image / render_chart answering file:// URLs of
real host paths (copies kept in the session's workspace, which outlive the session). Tests marked "fork: tests/X.py::name" port the assertions of that test of the
fork."""
import ast
import json
import os
import pathlib

import pytest

from harness import McpStdio


@pytest.fixture(scope="module")
def bridge(tmp_path_factory):
    """One bridge for the module (its state directory starts empty); the tests use memory keys
    of their own."""
    home = tmp_path_factory.mktemp("home")
    (home / "MCPs").mkdir()
    c = McpStdio("mcp", "--compat", "code-execution-mode", "--pool-size", "0",
                 "--session-pool-size", "1", "--state-dir", str(home / ".state"),
                 env={"HOME": str(home)}, exact=True)
    yield c
    c.close()


def run(c, code):
    r = c.call("run_python", {"code": code})
    assert not r.get("isError"), r
    text = r["content"][0]["text"]
    return "" if text == "Success (no output)" else text


def value(c, expr):
    """The JSON value of expr, computed in the session."""
    return json.loads(run(c, "import json\nprint(json.dumps(%s))" % expr))


# ---- fork: tests/test_memory.py::MemorySystemTests -------------------------------------------

def test_save_and_load_simple_value(bridge):
    """fork: tests/test_memory.py::MemorySystemTests::test_save_and_load_simple_value"""
    result = value(bridge, "save_memory('test_key', 'test_value')")
    assert "saved" in result
    assert value(bridge, "load_memory('test_key')") == "test_value"


def test_save_and_load_dict_and_list(bridge):
    """fork: ::test_save_and_load_dict and ::test_save_and_load_list"""
    data = {"goal": "Build API", "progress": ["Step 1", "Step 2"]}
    run(bridge, "save_memory('project_context', %r)\nsave_memory('my_list', %r)"
                % (data, [1, 2, 3, "four", {"five": 5}]))
    assert value(bridge, "load_memory('project_context')") == data
    assert value(bridge, "load_memory('my_list')") == [1, 2, 3, "four", {"five": 5}]


def test_load_nonexistent_returns_default(bridge):
    """fork: ::test_load_nonexistent_returns_default"""
    assert value(bridge, "load_memory('nonexistent', default='fallback')") == "fallback"
    assert value(bridge, "load_memory('nonexistent')") is None


def test_delete_memory(bridge):
    """fork: ::test_delete_memory and ::test_delete_nonexistent"""
    run(bridge, "save_memory('to_delete', 'value')")
    assert value(bridge, "memory_exists('to_delete')") is True
    assert "deleted" in value(bridge, "delete_memory('to_delete')")
    assert value(bridge, "memory_exists('to_delete')") is False
    assert "not found" in value(bridge, "delete_memory('never_existed')")


def test_list_memories(bridge):
    """fork: ::test_list_memories and ::test_save_with_metadata — entries {key, metadata,
    created_at, updated_at}"""
    run(bridge, "save_memory('key1', 'value1')\nsave_memory('key2', 'value2')\n"
                "save_memory('key3', {'nested': 'data'})\n"
                "save_memory('tagged', 'value', metadata={'tags': ['important', 'project-x']})")
    memories = value(bridge, "list_memories()")
    keys = [m["key"] for m in memories]
    for k in ("key1", "key2", "key3", "tagged"):
        assert k in keys
    tagged = next(m for m in memories if m["key"] == "tagged")
    assert tagged["metadata"]["tags"] == ["important", "project-x"]
    assert set(tagged) == {"key", "metadata", "created_at", "updated_at"}
    assert isinstance(tagged["created_at"], float)


def test_memory_exists(bridge):
    """fork: ::test_memory_exists"""
    assert value(bridge, "memory_exists('new_key')") is False
    run(bridge, "save_memory('new_key', 'value')")
    assert value(bridge, "memory_exists('new_key')") is True


def test_update_memory(bridge):
    """fork: ::test_update_memory, ::test_update_memory_list_append,
    ::test_update_nonexistent_memory"""
    run(bridge, "save_memory('counter', 0)")
    assert value(bridge, "update_memory('counter', lambda x: x + 1)") == 1
    assert value(bridge, "update_memory('counter', lambda x: x + 1)") == 2
    assert value(bridge, "load_memory('counter')") == 2
    run(bridge, "save_memory('tasks', ['task1'])")
    assert value(bridge, "update_memory('tasks', lambda tasks: tasks + ['task2'])") == \
        ["task1", "task2"]
    assert value(bridge, "update_memory('new_list', lambda x: [] if x is None else x + [1])") \
        == []


def test_key_sanitization(bridge):
    """fork: ::test_key_sanitization — keys with spaces, slashes and other characters load
    back by the same key."""
    run(bridge, "save_memory('key with spaces!', 'value1')\n"
                "save_memory('key/with/slashes', 'value2')\n"
                "save_memory('key@special#chars', 'value3')")
    assert value(bridge, "[load_memory('key with spaces!'), load_memory('key/with/slashes'), "
                         "load_memory('key@special#chars')]") == ["value1", "value2", "value3"]


def test_overwrite_preserves_created_at(bridge):
    """fork: ::test_overwrite_preserves_created_at — through get_memory_info, the fork's full
    record."""
    run(bridge, "save_memory('timestamp_test', 'original')")
    first = value(bridge, "get_memory_info('timestamp_test')")
    assert set(first) == {"key", "value", "metadata", "created_at", "updated_at"}
    assert first["value"] == "original"
    run(bridge, "import time\ntime.sleep(0.01)\nsave_memory('timestamp_test', 'updated')")
    updated = value(bridge, "get_memory_info('timestamp_test')")
    assert updated["created_at"] == first["created_at"]
    assert updated["updated_at"] > first["created_at"]
    assert updated["value"] == "updated"
    assert value(bridge, "get_memory_info('absent')") is None


def test_memory_functions_in_namespace_and_runtime(bridge):
    """fork: tests/test_memory.py::EntrypointMemoryCodeTests — the functions are defined,
    exported to mcp.runtime, and the capability summary mentions them."""
    names = ["save_memory", "load_memory", "delete_memory", "list_memories", "update_memory",
             "memory_exists", "get_memory_info"]
    assert value(bridge, "[callable(globals()[n]) and getattr(__import__('mcp.runtime', "
                         "fromlist=['x']), n) is globals()[n] for n in %r]" % names) == \
        [True] * len(names)
    summary = value(bridge, "__import__('mcp.runtime', fromlist=['x']).capability_summary()")
    assert "save_memory" in summary


# ---- time zones ----------------------------------------------------------------------------------

def test_time_helpers(bridge):
    out = value(bridge, "[now('Asia/Tokyo').utcoffset().total_seconds(), "
                        "str(now().tzinfo), "
                        "convert_time(__import__('datetime').datetime(2024, 1, 1, 12), "
                        "'Europe/Paris').isoformat(), "
                        "'Europe/London' in list_timezones('Europe'), "
                        "all(z.startswith('America') for z in list_timezones('America')), "
                        "len(list_timezones()) > 300]")
    assert out == [32400.0, "UTC", "2024-01-01T13:00:00+01:00", True, True, True]


# ---- the execution folder and files ---------------------------------------------------------------

def host_path(url):
    """The host path of a kept file: in a workspace's runs/ of the state directory (a path that
    names no host PID: the sandbox is not told sandboxd's PID)."""
    assert url.startswith("file:///") and "/workspaces/" in url and "/runs/" in url, url
    assert "/proc/" not in url, url
    return pathlib.Path(url[len("file://"):])


def test_execution_folder_keeps_code_and_output(bridge):
    run(bridge, "folder = execution_folder()\nprint('marker-output')")
    r = value(bridge, "[str(folder), open(folder / 'code.py').read(), "
                      "open(folder / 'output.txt').read(), str(execution_folder()) != "
                      "str(folder)]")
    assert r[0].startswith("/tmp/executions/")
    assert r[1] == "folder = execution_folder()\nprint('marker-output')"
    assert r[2] == "marker-output\n"
    assert r[3] is True  # every run has its own


def test_save_file_image_and_chart_give_host_urls(bridge):
    code = ("import matplotlib.pyplot as plt\n"
            "u1 = save_file('results.csv', 'a,b\\n1,2\\n')\n"
            "u2 = save_file('raw.bin', b'\\x00\\x01', subdir='')\n"
            "fig, ax = plt.subplots()\nax.plot([1, 2], [3, 4])\n"
            "u3 = save_image('line.png', fig)\n"
            "u4 = render_chart([{'day': 'Mon', 'temp': 25, 'city': 'A'}, "
            "{'day': 'Tue', 'temp': 28, 'city': 'A'}, {'day': 'Mon', 'temp': 20, 'city': 'B'}], "
            "'bar', x='day', y='temp', series='city', title='Temps')\n"
            "import json\nprint(json.dumps([u1, u2, u3, u4, list_execution_files()]))")
    r = bridge.call("run_python", {"code": code})
    assert not r.get("isError"), r
    lines = r["content"][0]["text"].splitlines()
    u1, u2, u3, u4, listing = json.loads(lines[-1])
    assert lines[0] == u4  # render_chart prints its URL, as the fork's does
    assert host_path(u1).read_text() == "a,b\n1,2\n"
    assert u1.endswith("_data_results.csv") and "/runs/" in u1
    assert host_path(u2).read_bytes() == b"\x00\x01"
    for u in (u3, u4):
        assert host_path(u).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert u4.endswith("_images_chart_1.png")
    assert listing == {"images": ["chart_1.png", "line.png"], "data": ["results.csv"],
                       "other": ["code.py", "raw.bin"]}
    with pytest.raises(AssertionError):
        run(bridge, "save_file('../escape', 'x')")


def test_oldest_execution_folders_are_dropped(bridge):
    for i in range(22):
        run(bridge, "x = %d" % i)
    folders = value(bridge, "sorted(__import__('os').listdir('/tmp/executions'))")
    assert len(folders) == 20
    # this run's own folder is made when it ends: the newest is the last x = ... run's
    newest = value(bridge, "open('/tmp/executions/%s/code.py').read()" % folders[-1])
    assert newest == "x = 21"
    assert os.sep not in folders[0]


def test_native_mode_gains_the_image_helpers(tmp_path):
    """In the native mode save_image and render_chart are gains: the URL, and the image as an
    artifact of the execution (an image block of run_python's answer); save_file keeps saving
    into the workspace."""
    c = McpStdio("--session-pool-size", "1")
    try:
        r = c.call("run_python", {"code": "u = save_image('dot.png', bytes.fromhex("
                                          "'89504e470d0a1a0a'))\n"
                                          "print(u, save_file('notes.txt', 'n'))"})
        assert not r.get("isError"), r
        url, saved = r["structuredContent"]["stdout"].split()
        assert host_path(url).read_bytes() == bytes.fromhex("89504e470d0a1a0a")
        assert saved == "notes.txt"
        assert [c["type"] for c in r["content"]].count("image") == 1, r["content"]
    finally:
        c.close()


def test_saved_images_download_over_http(make_server):
    """The execution folder is the session's: what save_image and render_chart wrote is served
    by GET /v1/sessions/{id}/files/executions/..., the same bytes as at the URL's host path."""
    s = make_server("--session-pool-size", "1")
    r = s.request("POST", "/v1/sessions", {})
    assert r.status == 201, r
    sid = r.json["sessionId"]
    code = ("u = save_image('dot.bin', b'\\x89PNG-bytes')\n"
            "u2 = render_chart([{'a': 'x', 'b': 1}, {'a': 'y', 'b': 2}], 'line', 'a', 'b')\n"
            "rel = str(execution_folder().relative_to('/tmp'))\n(u, rel)")
    r = s.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    assert r.json["status"] == "ok", r.json
    url, rel = ast.literal_eval(r.json["result"])
    got = s.request("GET", "/v1/sessions/%s/files/%s/images/dot.bin" % (sid, rel))
    assert got.status == 200 and got.raw == b"\x89PNG-bytes"
    assert host_path(url).read_bytes() == got.raw
    chart = s.request("GET", "/v1/sessions/%s/files/%s/images/chart_1.png" % (sid, rel))
    assert chart.status == 200 and chart.raw[:8] == b"\x89PNG\r\n\x1a\n"
    listing = s.request("GET", "/v1/sessions/%s/files" % sid).json["files"]
    assert sorted(f["path"] for f in listing) == [rel + "/code.py", rel + "/images/chart_1.png",
                                                 rel + "/images/dot.bin"]
