# SPDX-License-Identifier: MIT
"""HTTP on raw sockets, for tests of what http.client hides or refuses to do: half-sent heads,
bodies that never end, clients that stop reading, streams read as they arrive. Plus two small
helpers for tests that run a request in the background or wait for a state."""
import json
import socket
import threading
import time


def connect(server, timeout=10, rcvbuf=None):
    c = socket.socket()
    if rcvbuf:  # before connect, so that the window is small from the start
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    c.settimeout(timeout)
    c.connect(("127.0.0.1", server.port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def send_json(c, method, path, body, headers=None):
    data = json.dumps(body).encode()
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" % (method,
                                                                                        path)
    head += "".join("%s: %s\r\n" % kv for kv in (headers or {}).items())
    c.sendall(head.encode() + b"Content-Length: %d\r\n\r\n" % len(data) + data)


def read_until_closed(c, timeout):
    """Everything the server sends until it closes (socket.timeout when it does not)."""
    c.settimeout(timeout)
    out = b""
    while True:
        try:
            d = c.recv(65536)
        except ConnectionResetError:
            return out
        if not d:
            return out
        out += d


def status_of(raw):
    assert raw.startswith(b"HTTP/1.1 "), raw[:200]
    return int(raw[9:12])


def json_body(raw):
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


def dechunk(raw):
    """The body of a raw response with chunked transfer coding (as far as it came)."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"chunked" in head.lower(), head
    body = b""
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        body += rest[:size]
        rest = rest[size + 2:]
    return body


def sse_events(raw):
    """(event, data) pairs of a raw text/event-stream response."""
    events = []
    name = None
    for line in dechunk(raw).decode(errors="replace").split("\n"):
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and name:
            events.append((name, json.loads(line[6:])))
            name = None
    return events


def in_thread(fn):
    """Run fn in a thread: (thread, box); box gets "value" or "error", and "seconds"."""
    box = {}

    def run():
        start = time.time()
        try:
            box["value"] = fn()
        except Exception as e:  # the test's assertions on box report it
            box["error"] = e
        box["seconds"] = time.time() - start

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def wait_for(pred, timeout, what):
    """The first true value of pred() within timeout seconds (AssertionError otherwise)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)
