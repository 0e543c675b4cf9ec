# SPDX-License-Identifier: MIT
"""Attack harness: every attack runs twice, through the cold jail (`sandboxd run`,
jail_spawn) and through the warm pool (`sandboxd serve`, zygote cells), because the two
paths confine with different code. Each attack is Python source whose last expression is
the result; `attack(code)` returns the whole /execute-style response."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from harness import BIN, Server, executor_request  # noqa: E402

TMP_MB = 16
SUID_SOURCE = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) { printf("%d %d\n", (int)getuid(), (int)geteuid()); return 0; }
"""


def _suid_helper_dir():
    """A directory holding a setuid-root program that prints its real and effective uid."""
    ready = os.environ.get("SANDBOXD_SUID_DIR")
    if ready:
        return ready
    if os.geteuid() != 0:
        pytest.fail("rootless run without SANDBOXD_SUID_DIR (tests/rootless.sh prepares it)")
    # Not under /tmp, which every jail has its own of: the toolbox could bind a program from
    # here, and must refuse this one (test_toolbox.py).
    d = tempfile.mkdtemp(prefix="sandboxd-suid-", dir="/var/tmp")
    os.chmod(d, 0o755)
    src = os.path.join(d, "whoami.c")
    with open(src, "w") as f:
        f.write(SUID_SOURCE)
    subprocess.run(["gcc", "-O1", "-o", os.path.join(d, "whoami"), src], check=True)
    os.chmod(os.path.join(d, "whoami"), 0o4755)
    return d


@pytest.fixture(scope="session")
def suid_dir():
    d = _suid_helper_dir()
    yield d
    if not os.environ.get("SANDBOXD_SUID_DIR"):
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def secret_dir():
    """A host directory with a mode-600 file, bound read-only into every sandbox."""
    d = tempfile.mkdtemp(prefix="sandboxd-secret-")
    os.chmod(d, 0o755)
    p = os.path.join(d, "secret.txt")
    with open(p, "w") as f:
        f.write("TOP-SECRET-HOST-DATA")
    os.chmod(p, 0o600)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _jail_args(suid_dir, secret_dir):
    # The toolbox is asked for the setuid helper too: it must refuse it (test_toolbox.py).
    return ["--tmp-size-mb", str(TMP_MB), "--bind", "%s:/opt/suid" % suid_dir,
            "--bind", "%s:/opt/secret" % secret_dir,
            "--toolbox-add", os.path.join(suid_dir, "whoami")]


class Cold:
    name = "cold"

    def __init__(self, args):
        self.args = args

    def __call__(self, code, timeout_ms=5000, memory_mb=128, procs=32, output_kb=1024):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(code)
        os.chmod(f.name, 0o644)
        try:
            p = subprocess.run(
                [BIN, "run", f.name, "--full", "--timeout-ms", str(timeout_ms),
                 "--memory-mb", str(memory_mb), "--max-procs", str(procs),
                 "--output-limit-kb", str(output_kb)] + self.args,
                capture_output=True, text=True, timeout=120)
        finally:
            os.unlink(f.name)
        assert p.returncode in (0, 1), "sandboxd run failed (%d): %s" % (p.returncode, p.stderr[-3000:])
        return json.loads(p.stdout)


class Warm:
    name = "warm"

    def __init__(self, server):
        self.server = server

    def __call__(self, code, timeout_ms=5000, memory_mb=128, procs=32, output_kb=1024):
        r = self.server.execute(executor_request(code, timeoutMs=timeout_ms, memoryMb=memory_mb))
        assert r.status == 200, r
        return r.json


@pytest.fixture(scope="session")
def warm_server(suid_dir, secret_dir):
    s = Server("--pool-size", "2", "--max-procs", "32", "--output-limit-kb", "1024",
               *_jail_args(suid_dir, secret_dir))
    yield s
    s.stop()


@pytest.fixture(params=["cold", "warm"])
def attack(request, suid_dir, secret_dir):
    if request.param == "cold":
        return Cold(_jail_args(suid_dir, secret_dir))
    return Warm(request.getfixturevalue("warm_server"))


def loopback_listener(timeout):
    """A TCP listener on the host's 127.0.0.1 (the caller closes it), and its port."""
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(timeout)
    return srv, srv.getsockname()[1]


def result(resp):
    assert resp["resultType"] == "generic", resp
    return resp["data"]["result"]


def error_code(resp):
    assert resp["resultType"] == "error", resp
    return resp["data"]["code"]
