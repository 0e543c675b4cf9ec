# SPDX-License-Identifier: MIT
"""Real MCP servers for the tests: @modelcontextprotocol/server-everything (stdio and
Streamable HTTP), server-filesystem and server-memory from tests/node (installed by
tests/run.sh), a flaky Python server and a recording one (mcp/recording_server.py)."""
import json
import os
import pathlib
import socket
import subprocess
import time

HERE = pathlib.Path(__file__).resolve().parent
NODE_DIR = HERE.parent / "node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
EVERYTHING = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FILESYSTEM = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
MEMORY = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
FLAKY = HERE / "mcp" / "flaky_server.py"
RECORDING = HERE / "mcp" / "recording_server.py"
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


def codemode_config(record, root=None, memory_file=None, hostile=False):
    """An --mcp-config object for the code-mode tests: "rec" (the recording server, its calls
    appended to the file record), and with root also "filesystem" (server-filesystem on root)
    and "memory" (server-memory, its graph in memory_file), "everything"."""
    require_node()
    for path in (FILESYSTEM, MEMORY):
        assert path.exists(), "%s is not installed: run `npm ci` in tests/node" % path
    servers = {"rec": {"command": "/usr/bin/python3",
                       "args": [str(RECORDING), str(record)] + (["hostile"] if hostile else [])}}
    if root:
        servers["filesystem"] = {"command": str(NODE), "args": [str(FILESYSTEM), str(root)]}
        servers["memory"] = {"command": str(NODE), "args": [str(MEMORY)],
                             "env": {"MEMORY_FILE_PATH": str(memory_file)}}
        servers["everything"] = {"command": str(NODE), "args": [str(EVERYTHING), "stdio"]}
    return {"mcpServers": servers}


def recorded(record):
    """The calls the recording server got: [{"tool", "arguments"}]."""
    try:
        with open(record) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


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
