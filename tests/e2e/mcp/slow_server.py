# SPDX-License-Identifier: MIT
"""An MCP server over stdio whose calls take time, answered concurrently (asyncio), for tests
of what sandboxd does while tool calls are in flight.
   slow_server.py            tools: sleep {seconds} (answers {"pid", "slept"} after that long),
                             pid (answers {"pid"} at once)
   slow_server.py stubborn   the same, but ignores SIGTERM and stdin EOF (only SIGKILL ends it)
With $SLOW_SERVER_MARKS (a directory) set, each process creates pid-<pid> there when it starts
and call-<pid>-<id> when a sleep call begins, so that a test knows what is running."""
import asyncio
import json
import os
import signal
import sys

from stdio_peer import answer_common, send, unknown

STUBBORN = sys.argv[1:] == ["stubborn"]
TOOLS = [{"name": "sleep", "description": "answers after `seconds`",
          "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
         {"name": "pid", "description": "answers with the server's pid",
          "inputSchema": {"type": "object"}}]


def result(mid, value):
    send({"jsonrpc": "2.0", "id": mid, "result": {
        "content": [{"type": "text", "text": json.dumps(value)}]}})


def mark(name):
    marks = os.environ.get("SLOW_SERVER_MARKS")
    if marks:
        open(os.path.join(marks, name), "w").close()


async def call(mid, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "sleep":
        seconds = float(args.get("seconds", 1))
        mark("call-%d-%s" % (os.getpid(), mid))
        await asyncio.sleep(seconds)
        result(mid, {"pid": os.getpid(), "slept": seconds})
    elif name == "pid":
        result(mid, {"pid": os.getpid()})
    else:
        unknown({"id": mid, "method": "tools/call " + str(name)})


async def main():
    if STUBBORN:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    mark("pid-%d" % os.getpid())
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks = set()
    while True:
        line = await reader.readline()
        if not line:
            break
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None or answer_common(msg, "slow", TOOLS):
            continue
        if method == "tools/call":
            t = asyncio.ensure_future(call(mid, msg.get("params") or {}))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        else:
            unknown(msg)
    if STUBBORN:
        await asyncio.sleep(3600)  # stdin is gone: stay anyway, until SIGKILL


asyncio.run(main())
