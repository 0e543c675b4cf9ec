# SPDX-License-Identifier: MIT
"""deploy/local-cluster.sh driven as an operator would: the instances, HAProxy, and with
postgres=True a PostgreSQL of the script's own that every instance shares (--state-store)."""
import os
import pathlib
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from harness import BIN, CELL_LIB, SANITIZER_MARKERS, Endpoint, free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
APPS = pathlib.Path(__file__).resolve().parent / "apps"
INSTANCES = ["i1", "i2", "i3"]


class Cluster:
    def __init__(self, postgres=False, serve_args=()):
        self.port = free_port()
        self.log_dir = tempfile.mkdtemp(prefix="sandboxd-cluster-logs-")
        args = [str(ROOT / "deploy" / "local-cluster.sh"), "--instances", str(len(INSTANCES)),
                "--port", str(self.port), "--bin", BIN, "--log-dir", self.log_dir]
        if postgres:
            args.append("--postgres")
        args += ["--", "--definitions", str(APPS), "--no-mcp-discovery", "--pool-size", "1",
                 "--zygotes", "1", "--session-pool-size", "1", "--template-pool-size", "0",
                 *serve_args]
        if CELL_LIB:
            args += ["--cell-lib", CELL_LIB]
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        self.lines = queue.Queue()
        self.output = []
        threading.Thread(target=self._read, daemon=True).start()
        self.instances = {}  # id -> (pid, port)
        self.store = None  # with postgres: (url, password file)
        deadline = time.time() + 240
        while True:
            line = self.next_line(deadline)
            m = re.match(r"local-cluster: instance (\S+) pid (\d+) port (\d+)", line)
            if m:
                self.instances[m.group(1)] = (int(m.group(2)), int(m.group(3)))
            m = re.match(r"local-cluster: postgresql pid \d+ url (\S+) password-file (\S+)", line)
            if m:
                self.store = (m.group(1), m.group(2))
            if line.startswith("local-cluster: ready on"):
                break
        assert sorted(self.instances) == INSTANCES, self.output
        self.proxy = Endpoint(self.port)  # HAProxy

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def next_line(self, deadline):
        try:
            line = self.lines.get(timeout=max(0.1, deadline - time.time()))
        except queue.Empty:
            raise AssertionError("local-cluster.sh said nothing more:\n" + "".join(self.output))
        assert line is not None, "local-cluster.sh ended:\n" + "".join(self.output) + self.logs()
        return line

    def logs(self):
        out = []
        for name in sorted(os.listdir(self.log_dir)):
            with open(os.path.join(self.log_dir, name), errors="replace") as f:
                out.append("--- %s\n%s" % (name, f.read()[-3000:]))
        return "\n".join(out)

    def stop(self, check=False):
        """check: the script exits 0 and no instance's log holds a sanitizer report."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=120)
        logs = self.logs()
        shutil.rmtree(self.log_dir, ignore_errors=True)
        if check:
            assert self.proc.returncode == 0, "".join(self.output) + logs
            for marker in SANITIZER_MARKERS:
                assert marker not in logs, logs


