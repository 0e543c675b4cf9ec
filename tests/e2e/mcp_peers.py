# SPDX-License-Identifier: MIT
"""Real MCP servers for the tests: @modelcontextprotocol/server-everything (stdio and
Streamable HTTP) from tests/node (installed by tests/run.sh), and a flaky Python server."""
import os
import pathlib
import socket
import subprocess
import time

HERE = pathlib.Path(__file__).resolve().parent
NODE_DIR = HERE.parent / "node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
EVERYTHING = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FLAKY = HERE / "mcp" / "flaky_server.py"
SLOW = HERE / "mcp" / "slow_server.py"


def require_node():
    assert NODE.exists() and EVERYTHING.exists(), (
        "the MCP test peers are not installed: run `npm ci` in tests/node (tests/run.sh does)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EverythingHTTP:
    """server-everything over Streamable HTTP on a free loopback port."""

    def __init__(self):
        require_node()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d/mcp" % self.port
        self.proc = subprocess.Popen([str(NODE), str(EVERYTHING), "streamableHttp"],
                                     env=dict(os.environ, PORT=str(self.port)),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server-everything (HTTP) did not start")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def config(http_url=None):
    require_node()
    servers = {
        "everything": {"command": str(NODE), "args": [str(EVERYTHING), "stdio"]},
        "flaky": {"command": "/usr/bin/python3", "args": [str(FLAKY), "normal"]},
        "broken": {"command": "/usr/bin/python3", "args": [str(FLAKY), "crash-on-start"]},
    }
    if http_url:
        servers["everything-http"] = {"url": http_url}
    return {"mcpServers": servers}


def slow_config(marks=None, stubborn=False):
    """An --mcp-config object naming the slow server as "slow" (tests/e2e/mcp/slow_server.py);
    marks: a directory where it records its pid and the calls it is running."""
    server = {"command": "/usr/bin/python3", "args": [str(SLOW)] + (["stubborn"] if stubborn else [])}
    if marks:
        server["env"] = {"SLOW_SERVER_MARKS": str(marks)}
    return {"mcpServers": {"slow": server}}


def slow_pids(marks):
    """Pids of the slow servers that recorded themselves in marks."""
    return [int(n[4:]) for n in os.listdir(marks) if n.startswith("pid-")]


def slow_calls(marks):
    """How many sleep calls the slow servers of marks began."""
    return sum(1 for n in os.listdir(marks) if n.startswith("call-"))


def process_gone(pid, timeout=10):
    """True once pid is no process (or only a zombie nobody will reap: not ours to judge)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False
