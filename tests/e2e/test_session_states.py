# SPDX-License-Identifier: MIT
"""The lifecycle of a session (docs/internals/session.md) driven over HTTP: the edges a client
can make happen, seen through GET /v1/sessions/ID (busy: RUNNING, stopped: STOPPED) and the
answers. sandboxd asserts every transition, and the harness requires a clean exit at stop."""
import threading
import time

from harness import Server, session_create, session_info, session_run, wait_until


def test_a_cpu_budget_of_0_stops_the_session_after_every_execution():
    s = Server("--pool-size", "1", "--session-cpu-budget-ms", "0")
    try:
        sid = session_create(s)["sessionId"]
        out = session_run(s, sid, "x = 41")
        assert out["status"] == "ok" and out["sessionAlive"], out
        info = session_info(s, sid)  # RUNNING -> STOPPED at once
        assert info["stopped"] is True and info["busy"] is False and info["alive"] is True, info
        assert "CPU budget of 0 ms" in info["stoppedReason"], info
        out = session_run(s, sid, "x + 1")  # STOPPED -> RUNNING: it continues where it was
        assert out["status"] == "ok" and out["result"] == "42", out
        info = session_info(s, sid)
        assert info["stopped"] is True and info["executions"] == 2, info
    finally:
        s.stop()


def test_a_session_deleted_while_it_runs_answers_and_is_gone():
    s = Server("--pool-size", "1")
    try:
        sid = session_create(s)["sessionId"]
        answers = []
        t = threading.Thread(target=lambda: answers.append(
            session_run(s, sid, "import time\ntime.sleep(60)")))
        t.start()
        wait_until(lambda: session_info(s, sid)["busy"], 30, "the execution to run")
        assert s.request("DELETE", "/v1/sessions/" + sid, fresh=True).status == 204  # -> ENDED
        t.join(60)
        assert answers, "the execution did not return"
        out = answers[0]
        assert out["status"] != "ok" and out["sessionAlive"] is False, out
        assert "ended while the execution ran: it was deleted" in out["error"]["message"], out
        assert s.request("GET", "/v1/sessions/" + sid, fresh=True).status == 404
        r = s.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": "1"}, fresh=True)
        assert r.status == 404, r
        # The server goes on: a new session runs.
        sid2 = session_create(s)["sessionId"]
        assert session_run(s, sid2, "1 + 1")["result"] == "2"
    finally:
        s.stop()


def test_the_reaper_spares_a_running_session():
    s = Server("--pool-size", "1")
    try:
        sid = session_create(s, idleTimeoutS=1)["sessionId"]
        # Runs past its idle timeout: RUNNING is never reaped.
        out = session_run(s, sid, "import time\ntime.sleep(2.5)\n'awake'")
        assert out["status"] == "ok" and out["result"] == "'awake'", out
        assert session_info(s, sid)["alive"] is True
        # Idle from the end of that execution on: reaped then.
        deadline = time.time() + 30
        while s.request("GET", "/v1/sessions/" + sid, fresh=True).status == 200:
            assert time.time() < deadline, "the idle session was not reaped"
            time.sleep(0.2)
    finally:
        s.stop()
