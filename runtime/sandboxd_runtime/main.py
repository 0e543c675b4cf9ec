# SPDX-License-Identifier: MIT
"""Dispatch on the mode the host started us in."""
import os
import sys


def run(mode, args):
    if mode == "oneshot":
        from sandboxd_runtime import worker

        worker.serve_one(warm=False)  # not forked: no copy-on-write to pay in advance
    elif mode == "zygote":
        from sandboxd_runtime import worker, zygote

        worker.preload()  # before the first fork: every cell inherits them
        zygote.serve(args)
    elif mode == "selftest":
        from sandboxd_runtime import selftest

        selftest.report()
    else:
        sys.stderr.write("sandboxd runtime: unknown mode %r\n" % mode)
        os._exit(2)
