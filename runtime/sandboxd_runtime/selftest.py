# SPDX-License-Identifier: MIT
"""What a sandboxed process observes about its own confinement.

The host runs this once at start-up inside a real jail and refuses to serve
if a layer it believes active is not (so /healthz reports facts, not
intentions).
"""
import json
import os
import socket
import sys


def _status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def _try(fn):
    try:
        fn()
        return "allowed"
    except OSError as exc:
        return "denied: %s" % (exc.strerror or exc)


def report():
    st = _status()
    with open("/proc/net/dev") as f:
        ifaces = [line.split(":")[0].strip() for line in f.readlines()[2:]]
    facts = {
        "pid": os.getpid(),
        "uid": os.getuid(),
        "hostname": socket.gethostname(),
        "seccomp": int(st.get("Seccomp", "0")),
        "noNewPrivs": int(st.get("NoNewPrivs", "0")),
        "capEff": st.get("CapEff"),
        "capBnd": st.get("CapBnd"),
        "netInterfaces": ifaces,
        "inetSocket": _try(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()),
        "writeRoot": _try(lambda: open("/sandboxd-selftest", "w").close()),
        "writeTmp": _try(lambda: open("/tmp/.selftest", "w").close()),
        "python": sys.version.split()[0],
    }
    sys.stdout.write(json.dumps(facts) + "\n")
    sys.stdout.flush()
