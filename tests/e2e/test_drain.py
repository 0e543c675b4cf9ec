# SPDX-License-Identifier: MIT
"""Probes and shutdown (CONTRACT §11, docs/API.md "Probes and draining"): /livez, /readyz, and
SIGTERM draining: no new work, what runs finishes up to --drain-timeout-s, what is left then
gets a clear "shutting down" answer, and the process exits 0 with nothing leaked (the ASan
build's log is checked by the harness, the cgroups here)."""
import os
import signal
import time

from harness import McpHttp, executor_request, jit_request
from rawhttp import connect, in_thread, read_until_closed, send_json, sse_events, wait_for

S = "handlers/basic.py"


def sleeper(seconds, value=7):
    return executor_request("import time\ndef f():\n    time.sleep(%s)\n    return %d\n"
                            % (seconds, value), functionName="f", timeoutMs=60000)


def exited(server, timeout):
    try:
        server.proc.wait(timeout)
    except Exception:
        raise AssertionError("sandboxd did not exit:\n" + server.logs()[-3000:])
    return server.proc.returncode


def sse_stream(server, sid, code, timeout_ms=60000):
    """Start a streamed session execution; returns the socket (read it to follow)."""
    c = connect(server, timeout=30)
    send_json(c, "POST", "/v1/sessions/%s/execute" % sid, {"code": code, "timeoutMs": timeout_ms},
              {"Accept": "text/event-stream"})
    return c


def cgroup_dirs(pid):
    """The directories that hold sandboxd's cell cgroups: cgroup v1 <ours>/sandboxd-<pid> per
    controller, v2 <ours>/cells (sandboxd moves itself to <ours>/supervisor)."""
    dirs = []
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            path = path.rstrip("/")
            if controllers == "":  # v2
                base = "/sys/fs/cgroup" + path
                if base.endswith("/supervisor"):
                    base = base[:-len("/supervisor")]
                dirs.append(base + "/cells")
            for ctl in ("memory", "pids"):
                if ctl in controllers.split(","):
                    dirs.append("/sys/fs/cgroup/%s%s/sandboxd-%d" % (ctl, path, pid))
    return dirs


def cell_cgroups(dirs):
    return [os.path.join(d, e) for d in dirs if os.path.isdir(d) for e in os.listdir(d)
            if e.startswith("c") and os.path.isdir(os.path.join(d, e))]


def test_probes(server):
    r = server.request("GET", "/livez", fresh=True)
    assert r.status == 200 and r.json == {"status": "alive"}
    # The pools start behind /healthz: ready once one has an interpreter.
    r = wait_for(lambda: (lambda r: r if r.status == 200 else None)(
        server.request("GET", "/readyz", fresh=True)), 60, "/readyz 200")
    assert r.json == {"status": "ready"}, r
    assert server.request("POST", "/readyz", fresh=True).status == 405


def test_readyz_is_503_while_the_pool_cannot_make_interpreters(make_server):
    s = make_server("--pool-size", "2", "--zygotes", "1")
    wait_for(lambda: s.request("GET", "/readyz", fresh=True).status == 200, 60, "ready")
    for z in s.health()["pool"]["zygotes"]:
        os.kill(z["pid"], signal.SIGKILL)
    r = wait_for(lambda: (lambda r: r if r.status == 503 else None)(
        s.request("GET", "/readyz", fresh=True)), 5, "/readyz 503")
    assert r.json["status"] == "degraded" and r.header("Retry-After") == "1"
    wait_for(lambda: s.request("GET", "/readyz", fresh=True).status == 200, 20, "the restart")
    assert s.execute(jit_request(S, "add", {"a": 1, "b": 2}), fresh=True).json["data"] == {"sum": 3}


def test_sigterm_drains_running_work_and_refuses_new_work(make_server):
    s = make_server("--pool-size", "2", "--drain-timeout-s", "20")
    mcp = McpHttp(s)
    sid = s.request("POST", "/v1/sessions", {}).json["sessionId"]
    t1, slow = in_thread(lambda: s.execute(sleeper(1.5), fresh=True, timeout=60))
    t2, sess = in_thread(lambda: s.request("POST", "/v1/sessions/%s/execute" % sid, {
        "code": "import time\ntime.sleep(1.5)\nprint('slept')"}, fresh=True, timeout=60))
    wait_for(lambda: s.health()["executions"]["running"] >= 1, 10, "the execution to start")
    time.sleep(0.2)
    s.proc.send_signal(signal.SIGTERM)
    signalled = time.time()
    r = wait_for(lambda: (lambda r: r if r.status == 503 else None)(
        s.request("GET", "/readyz", fresh=True)), 2, "/readyz 503")
    assert r.json["status"] == "draining"
    assert s.request("GET", "/livez", fresh=True).status == 200
    assert s.request("GET", "/healthz", fresh=True).json["status"] == "draining"
    r = s.execute(jit_request(S, "add", {"a": 1, "b": 2}), fresh=True)
    assert r.status == 503 and r.json["error"]["code"] == "SHUTTING_DOWN", r
    assert r.header("Retry-After") == "1" and r.header("Connection") == "close"
    r = s.request("POST", "/v1/sessions", {}, fresh=True)
    assert r.status == 503 and r.json["error"]["code"] == "SHUTTING_DOWN", r
    r = s.request("POST", "/v1/sessions/%s/execute" % sid, {"code": "1"}, fresh=True)
    assert r.status == 503 and r.json["error"]["code"] == "SHUTTING_DOWN", r
    r = mcp.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    assert r.status == 503, r
    t1.join(30)
    t2.join(30)
    assert slow["value"].status == 200 and slow["value"].json["data"]["result"] == 7, slow
    assert sess["value"].status == 200 and sess["value"].json["stdout"] == "slept\n", sess
    assert exited(s, 15) == 0
    assert time.time() - signalled < 10  # done when the work was, not at the deadline
    assert "drained: every request was answered" in s.logs()


def test_work_past_the_drain_deadline_gets_a_clear_shutdown_error(make_server):
    s = make_server("--pool-size", "2", "--drain-timeout-s", "2")
    sid = s.request("POST", "/v1/sessions", {}).json["sessionId"]
    sid2 = s.request("POST", "/v1/sessions", {}).json["sessionId"]
    t1, sess = in_thread(lambda: s.request("POST", "/v1/sessions/%s/execute" % sid, {
        "code": "import time\ntime.sleep(120)", "timeoutMs": 600000}, fresh=True, timeout=60))
    t2, run = in_thread(lambda: s.execute(sleeper(50), fresh=True, timeout=60))
    stream = sse_stream(s, sid2, "import time\nprint('going', flush=True)\ntime.sleep(120)",
                        timeout_ms=600000)
    wait_for(lambda: s.health()["executions"]["running"] >= 1, 10, "the execution to start")
    time.sleep(0.5)
    s.proc.send_signal(signal.SIGTERM)
    signalled = time.time()
    t1.join(30)
    t2.join(30)
    r = sess["value"]
    assert r.status == 503 and r.json["error"]["code"] == "SHUTTING_DOWN", r
    assert "shutting down" in r.json["error"]["message"]
    r = run["value"]
    assert r.status == 503 and r.json["error"]["code"] == "SHUTTING_DOWN", r
    events = sse_events(read_until_closed(stream, 30))
    stream.close()
    assert events[0] == ("stdout", {"data": "going\n"}), events
    assert events[-1][0] == "error" and events[-1][1]["code"] == "SHUTTING_DOWN", events
    assert exited(s, 20) == 0
    assert time.time() - signalled < 2 + 6


def test_a_second_signal_ends_the_drain_at_once(make_server):
    s = make_server("--pool-size", "1", "--drain-timeout-s", "120")
    sid = s.request("POST", "/v1/sessions", {}).json["sessionId"]
    t, sess = in_thread(lambda: s.request("POST", "/v1/sessions/%s/execute" % sid, {
        "code": "import time\ntime.sleep(120)", "timeoutMs": 600000}, fresh=True, timeout=60))
    wait_for(lambda: s.request("GET", "/v1/sessions/" + sid, fresh=True).json["busy"], 10,
             "the execution to start")
    time.sleep(0.3)
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert s.proc.poll() is None  # draining, waiting for the session
    s.proc.send_signal(signal.SIGINT)
    start = time.time()
    t.join(30)
    assert sess["value"].status == 503, sess
    assert sess["value"].json["error"]["code"] == "SHUTTING_DOWN"
    assert exited(s, 20) == 0
    assert time.time() - start < 6


def test_sigterm_while_session_streams_run_frees_nothing_in_use(make_server):
    """Several SSE streams of busy sessions when SIGTERM comes: every stream thread is finished
    before the sessions are freed (no sanitizer report, exit 0) and no cell cgroup is left."""
    s = make_server("--pool-size", "2", "--drain-timeout-s", "1")
    streams = []
    for i in range(4):
        sid = s.request("POST", "/v1/sessions", {}).json["sessionId"]
        streams.append(sse_stream(s, sid, "import time\nfor i in range(100000):\n"
                                          "    print(i, flush=True)\n    time.sleep(0.01)\n"))
    started = []
    for c in streams:  # every stream is under way
        c.settimeout(30)
        first = b""
        while b"event: stdout" not in first:
            first += c.recv(65536)
        started.append(first)
    dirs = cgroup_dirs(s.proc.pid)
    assert cell_cgroups(dirs), "no cell cgroup found in %s" % dirs
    s.proc.send_signal(signal.SIGTERM)
    for c, first in zip(streams, started):
        events = sse_events(first + read_until_closed(c, 30))
        c.close()
        assert events[-1][0] == "error" and events[-1][1]["code"] == "SHUTTING_DOWN", events[-3:]
    assert exited(s, 30) == 0
    assert not cell_cgroups(dirs), "cgroups left behind"
