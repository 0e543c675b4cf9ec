# SPDX-License-Identifier: MIT
"""A zygote that dies takes every one of its cells with it; the pool frees them all and starts
over. The pool thread once kept the cells to free in a 64-slot list and leaked the rest (their
memory and their descriptors), with --pool-size allowed up to 4096."""
import os
import pathlib
import signal

from harness import Server, jit_request, wait_until

APPS = pathlib.Path(__file__).resolve().parent / "apps"
CELLS = 72  # more than the old list held


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def test_a_dying_zygote_with_many_cells_leaks_nothing():
    srv = Server("--pool-size", str(CELLS), "--pool-max", str(CELLS), "--zygotes", "1",
                 "--session-pool-size", "0", definitions=APPS)
    try:
        wait_until(lambda: srv.health()["pool"]["ready"] == CELLS, 240, "the pool to fill")
        before = fds(srv.proc.pid)
        zygote = srv.health()["pool"]["zygotes"][0]["pid"]
        os.kill(zygote, signal.SIGKILL)
        wait_until(lambda: srv.health()["pool"]["zygotes"][0]["pid"] != zygote, 60,
                   "a new zygote")
        wait_until(lambda: srv.health()["pool"]["ready"] == CELLS, 240, "the pool to refill")
        after = fds(srv.proc.pid)
        assert after <= before + 4, (before, after)  # each leaked cell kept descriptors
        assert "leaking" not in srv.logs()
        r = srv.execute(jit_request("handlers/basic.py", "add", {"a": 1, "b": 2}))
        assert r.status == 200 and r.json["data"] == {"sum": 3}, r
    finally:
        srv.stop()  # under ASan, a leaked cell is also a leak report and a non-zero exit
