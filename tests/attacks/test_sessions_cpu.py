# SPDX-License-Identifier: MIT
"""Work an execution leaves running in a session (a thread, a subprocess) cannot use the host's
CPU for long: after a small budget the kernel's CPU timer fires and the session is stopped until
its next execution. Runs as root and rootless (tests/rootless.sh), where there are no cgroups."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from harness import Server, session_create, session_info, session_run, wait_until  # noqa: E402










def test_leftover_threads_and_processes_stop_after_the_cpu_budget():
    s = Server("--pool-size", "1", "--session-cpu-budget-ms", "1000")
    try:
        sid = session_create(s)["sessionId"]
        before = session_info(s, sid)
        assert before["stopped"] is False and before["cpuBudgetMs"] == 1000
        out = session_run(s, sid, "import threading\ndone = False\ndef spin():\n    while not done:\n"
                          "        pass\nthreading.Thread(target=spin, daemon=True).start()\n'started'")
        assert out["status"] == "ok" and out["sessionAlive"], out
        # The spinning thread may use its second of CPU, then the kernel's timer fires and
        # sandboxd stops the session (generous: the machine may be loaded).
        wait_until(lambda: session_info(s, sid)["stopped"], 60, "the session to be stopped")
        stopped = session_info(s, sid)
        assert "CPU budget of 1000 ms" in stopped["stoppedReason"], stopped
        assert 900 <= stopped["idleCpuMs"] <= 3000, stopped
        time.sleep(1)
        later = session_info(s, sid)
        assert later["cpuMs"] - stopped["cpuMs"] < 20, (stopped, later)  # no CPU while stopped
        # The next execution continues it (the thread runs during the execution, which counts
        # it) and ends it; then the session is idle and quiet.
        out = session_run(s, sid, "import time\ndone = True\ntime.sleep(0.2)\n'ended'")
        assert out["status"] == "ok" and not session_info(s, sid)["stopped"], out
        # Its own CPU, measured by the kernel: a busy loop of about 300 ms.
        out = session_run(s, sid, "import time\nt = time.process_time()\nwhile time.process_time() - t "
                          "< 0.3:\n    pass")
        assert 250 <= out["verdict"]["cpuMs"] <= 2000, out["verdict"]
        quiet = session_info(s, sid)
        time.sleep(1)
        assert session_info(s, sid)["cpuMs"] - quiet["cpuMs"] < 20
        assert session_info(s, sid)["stopped"] is False
        # A subprocess left running is stopped when the execution returns.
        out = session_run(s, sid, "import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', "
                          "'while True: pass'])\n'spawned'")
        assert out["status"] == "ok", out
        time.sleep(0.5)
        a = session_info(s, sid)["cpuMs"]
        time.sleep(1)
        assert session_info(s, sid)["cpuMs"] - a < 20
        out = session_run(s, sid, "p.kill(); p.wait()")
        assert out["status"] == "ok", out
    finally:
        s.stop()
