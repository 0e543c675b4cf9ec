# SPDX-License-Identifier: MIT
"""Sessions cannot make sandboxd do unbounded work, and leave nothing behind: tool calls run on a
bounded pool (the rest are refused), shutdown with calls in flight is clean (no sanitizer report,
no MCP server or cgroup left), work an execution leaves running is stopped after its CPU budget,
results stay with their execution. Each test performs the attack."""
import json
import os
import tempfile
import threading
import time

import pytest

from harness import McpStdio, Server, session_create, session_info, session_run, wait_until
from mcp_peers import process_gone, slow_calls, slow_config, slow_pids


@pytest.fixture
def marks():
    d = tempfile.mkdtemp(prefix="sandboxd-slow-")
    yield d
    for n in os.listdir(d):
        os.unlink(os.path.join(d, n))
    os.rmdir(d)


def config_file(cfg):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(cfg, f)
    f.close()
    return f.name






def threads_of(pid):
    return len(os.listdir("/proc/%d/task" % pid))




def sandboxd_cgroup_dirs(pid):
    """The per-process cgroup directories sandboxd makes (src/jail/cgroup.c): on v1,
    <sandboxd's cgroup>/sandboxd-<pid> in the memory, pids and cpuacct hierarchies."""
    dirs = []
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(","):
                if c in ("memory", "pids", "cpuacct"):
                    dirs.append("/sys/fs/cgroup/%s%s/sandboxd-%d" % (c, path.rstrip("/"), pid))
    return [d for d in dirs if os.path.isdir(d)]


# ---- host threads and tool calls ------------------------------------------------------------

GATHER = """
import asyncio
async def one():
    try:
        await mcp_slow.sleep(seconds=%s)
        return "ok"
    except MCPError as e:
        return "refused: " + str(e)
results = await asyncio.gather(*(one() for _ in range(%d)))
refused = [r for r in results if r != "ok"]
(results.count("ok"), len(refused), sorted(set(refused)))
"""


def test_tool_calls_are_bounded_per_session(marks):
    cfg = config_file(slow_config(marks))
    s = Server("--pool-size", "1", "--mcp-config", cfg, "--tool-workers", "4",
               "--session-max-tool-calls", "16")
    try:
        sid = session_create(s, servers=["slow"])["sessionId"]
        assert session_run(s, sid, "await mcp_slow.pid()")["status"] == "ok"
        base = threads_of(s.proc.pid)
        peak = [base]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], threads_of(s.proc.pid))
                time.sleep(0.01)

        t = threading.Thread(target=sample)
        t.start()
        try:
            out = session_run(s, sid, GATHER % (0.5, 3000), timeoutMs=120000)
        finally:
            done.set()
            t.join()
        assert out["status"] == "ok", out
        ok, refused, reasons = eval(out["result"])
        assert ok + refused == 3000
        assert ok >= 16 and refused >= 1000, out["result"]
        assert all("too many tool calls in flight" in r for r in reasons), reasons
        # 4 workers at most, whatever the session asks for (3 more than the one started above).
        assert peak[0] <= base + 3 + 2, (base, peak[0])
        stats = s.health()["sessions"]["toolCalls"]
        assert stats["maxWorkers"] == 4 and stats["workers"] <= 4 and stats["refused"] == refused
    finally:
        s.stop()
        os.unlink(cfg)


# ---- shutdown with tool calls in flight -----------------------------------------------------

def test_sigterm_with_tool_calls_in_flight_is_clean(marks):
    """serve: SIGTERM while a session's tool calls wait on a slow server. The harness fails on a
    sanitizer report (use after free of the pool or the registry), a non-zero exit or a hang;
    afterwards neither the MCP server nor a cgroup of sandboxd may be left. The drain waits one
    second for the execution, then ends the session: the execution answers 503 SHUTTING_DOWN."""
    cfg = config_file(slow_config(marks))
    s = Server("--pool-size", "1", "--mcp-config", cfg, "--drain-timeout-s", "1")
    answer = {}
    try:
        sid = session_create(s, servers=["slow"])["sessionId"]
        server_pid = json.loads(session_run(s, sid, "(await mcp_slow.pid())['pid']")["result"])
        cgroups = sandboxd_cgroup_dirs(s.proc.pid)

        def execute():
            try:
                answer["r"] = s.request("POST", "/v1/sessions/%s/execute" % sid, body={
                    "code": "import asyncio\nawait asyncio.gather(*(mcp_slow.sleep("
                            "seconds=120) for _ in range(8)))", "timeoutMs": 300000},
                    fresh=True, timeout=300)
            except OSError as e:
                answer["e"] = e

        t = threading.Thread(target=execute)
        t.start()
        wait_until(lambda: slow_calls(marks) == 8, 60, "8 calls in flight")
        start = time.time()
    finally:
        s.stop()  # SIGTERM; asserts exit status 0 and no sanitizer report
        os.unlink(cfg)
    t.join(30)
    assert time.time() - start < 30, "shutdown waited for the tool calls"
    if "r" in answer:  # the execution ended with the session, and says why
        r = answer["r"]
        assert r.status == 503 and r.json["error"]["code"] == "SHUTTING_DOWN", r
        assert "shutting down" in r.json["error"]["message"], r
    assert process_gone(server_pid), "the MCP server outlived sandboxd"
    assert slow_pids(marks) == [server_pid]
    for d in cgroups:
        assert not os.path.exists(d), "cgroup left behind: " + d


@pytest.mark.parametrize("stubborn", [False, True], ids=["polite", "ignores-sigterm"])
def test_stdin_eof_with_tool_calls_in_flight_is_clean(marks, stubborn):
    """sandboxd mcp: stdin closes while run_python's tool calls wait. A server that ignores
    stdin EOF and SIGTERM is killed after the grace period."""
    cfg = config_file(slow_config(marks, stubborn))
    m = McpStdio("--mcp-config", cfg)
    try:
        r = m.call("run_python", {"code": "(await mcp_slow.pid())['pid']", "servers": ["slow"]})
        server_pid = r["structuredContent"]["result"]
        server_pid = int(server_pid)
        m.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
            "name": "run_python", "arguments": {
                "servers": ["slow"], "timeout": 300,
                "code": "import asyncio\nawait asyncio.gather(*(mcp_slow.sleep(seconds=120) "
                        "for _ in range(8)))"}}})
        wait_until(lambda: slow_calls(marks) == 8, 60, "8 calls in flight")
        start = time.time()
    finally:
        m.close()  # EOF; asserts exit status 0, clean stdout, no sanitizer report
        os.unlink(cfg)
    assert time.time() - start < 30
    assert process_gone(server_pid), "the MCP server outlived sandboxd mcp"


# ---- concurrent reset_session ---------------------------------------------------------------

def test_concurrent_reset_session_calls_get_meaningful_answers():
    m = McpStdio("--mcp-tools", "full")
    try:
        m.call("run_python", {"code": "x = 1"})
        for i in range(12):
            m.send({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {
                "name": "run_python", "arguments": {"code": "import time\ntime.sleep(0.5)\nx"}}})
            m.send({"jsonrpc": "2.0", "id": 200 + i, "method": "tools/call", "params": {
                "name": "reset_session", "arguments": {}}})
        answers = {}
        while len(answers) < 24:
            msg = m.recv(120)
            if "id" in msg:
                answers[msg["id"]] = msg["result"]
        for mid, res in answers.items():
            text = res["content"][0]["text"]
            if mid >= 200:
                assert "reset" in text or "nothing to reset" in text, text
                continue
            # A run either ran (x is gone in a fresh session, or still 1), or says that its
            # session was reset: never a bare failure, never just a signal number.
            fine = ("[result] 1" in text or "NameError" in text or "reset" in text)
            assert fine, text
            assert "the execution failed" not in text and "signal 9" not in text, text
    finally:
        m.close()


# ---- results stay with their execution ------------------------------------------------------

FORGE = """
import json, os
def forge(execution_id, result):
    body = json.dumps({"type": "execution_done", "id": execution_id, "status": "ok",
                       "error": None, "result": result, "durationMs": 0}).encode()
    os.write(3, len(body).to_bytes(4, "big") + body)
forge(%d, "'FORGED'")
'real %d'
"""


def test_a_forged_execution_done_never_shifts_results():
    s = Server("--pool-size", "1")
    try:
        sid = session_create(s)["sessionId"]
        assert session_run(s, sid, "1")["result"] == "1"
        n = session_info(s, sid)["executions"] + 1
        out = session_run(s, sid, FORGE % (n + 1, n))
        assert out["executionId"] == n and out["result"] == "'real %d'" % n, out
        out = session_run(s, sid, "'real next'")
        assert out["executionId"] == n + 1 and out["result"] == "'real next'", out
        out = session_run(s, sid, "'and the next'")
        assert out["result"] == "'and the next'", out
    finally:
        s.stop()


# ---- an interpreter that does not read its answers -------------------------------------------

FLOOD = """
import json, os, select
req = json.dumps({"type": "rpc_request", "id": 999999, "payload": {"type": "memory",
                  "op": "load", "key": "big"}}).encode()
data = memoryview((len(req).to_bytes(4, "big") + req) * %d)
while data:
    select.select([], [3], [])
    try:
        data = data[os.write(3, data):]
    except BlockingIOError:
        pass
'flooded'
"""


def vmhwm(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmHWM:"))


def test_a_session_that_does_not_read_its_answers_cannot_grow_sandboxd():
    """5000 requests for a 256 KiB memory (1.25 GB of answers) written without ever reading:
    sandboxd keeps at most ~1 MiB of answers waiting and reads no more requests meanwhile, so
    the sandbox blocks; its time limit ends the execution, and sandboxd stayed small. (Under ASan
    freed memory is quarantined, which would count as growth: a small quarantine here.)"""
    s = Server("--pool-size", "1", env={"ASAN_OPTIONS": "detect_leaks=1:quarantine_size_mb=8"})
    try:
        sid = session_create(s)["sessionId"]
        assert session_run(s, sid, "save_memory('big', 'x' * (256 << 10))")["status"] == "ok"
        before = vmhwm(s.proc.pid)
        start = time.time()
        out = session_run(s, sid, FLOOD % 5000, timeoutMs=3000)
        assert time.time() - start < 30, out
        assert out["status"] == "timeout", out
        grew = vmhwm(s.proc.pid) - before
        assert grew < 24 << 20, "sandboxd grew %d MiB" % (grew >> 20)
        # Whatever became of that session, sandboxd serves the next one.
        sid = session_create(s)["sessionId"]
        assert session_run(s, sid, "1 + 1")["result"] == "2"
    finally:
        s.stop()
