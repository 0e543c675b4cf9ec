# SPDX-License-Identifier: MIT
"""A zygote that dies takes every one of its cells with it; the pool frees them all and starts
over. The pool thread once kept the cells to free in a 64-slot list and leaked the rest (their
memory and their descriptors), with --pool-size allowed up to 4096.

And the zygote's runtime names a cell's confinement steps from libsbxcell (the step table of
src/jail/confine.h), not from a list of its own."""
import errno
import importlib
import os
import pathlib
import signal
import sys

from harness import BIN, CELL_LIB, ROOT, Server, jit_request, wait_until

APPS = pathlib.Path(__file__).resolve().parent / "apps"
CELLS = 72  # more than the old list held


def runtime_zygote():
    sys.path.insert(0, str(ROOT / "runtime"))
    try:
        return importlib.import_module("sandboxd_runtime.zygote")
    finally:
        sys.path.remove(str(ROOT / "runtime"))


def test_the_runtime_names_cell_steps_from_the_library():
    zygote = runtime_zygote()
    assert not hasattr(zygote, "STEP_NAMES")  # the old positional copy of the warm steps
    lib = zygote.load_cell_lib(CELL_LIB or os.path.join(os.path.dirname(BIN), "libsbxcell.so"))
    names = [zygote.step_name(lib, i) for i in range(lib.sbx_step_count())]
    assert len(set(names)) == len(names) and "?" not in names, names
    assert "seccomp" in names and "unshare(user)" in names, names
    assert zygote.step_name(lib, lib.sbx_step_fds()) == "file descriptors"
    assert zygote.step_name(lib, -1) == zygote.step_name(lib, len(names)) == "?"


def test_a_failed_cell_is_reported_by_the_library_s_step_name_and_fd():
    class Planted:  # a library with other steps: what the runtime says must follow it
        def sbx_step_count(self):
            return 3

        def sbx_step_name(self, step):
            return [b"alpha", b"beta", b"gamma"][step]

        def sbx_step_fds(self):
            return 1

    zygote = runtime_zygote()
    msg, fd = zygote.setup_failure(Planted(), 0, errno.EPERM, 9)
    assert msg["code"] == "INTERNAL" and msg["details"] == {"step": "alpha"}, msg
    assert msg["message"] == "cell setup failed at alpha: " + os.strerror(errno.EPERM)
    assert fd == 9  # the fds are not placed yet: the proto fd the cell was handed
    assert zygote.setup_failure(Planted(), 1, errno.EBADF, 9)[1] == 9
    msg, fd = zygote.setup_failure(Planted(), 2, errno.ENOMEM, 9)
    assert msg["details"] == {"step": "gamma"} and fd == 3  # after them: fd 3
    assert zygote.setup_failure(Planted(), 7, errno.EIO, 9)[0]["details"] == {"step": "?"}


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
