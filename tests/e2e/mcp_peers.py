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
