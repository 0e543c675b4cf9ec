# SPDX-License-Identifier: MIT
"""Results as an attack on sandboxd's memory: a result near the cap costs sandboxd a small
multiple of its size (it passes through as text, never parsed into a tree), and one over the cap
is refused with INVALID_RESULT. The dense shape ([0, 0, ...]) is the one that used to cost ~22x."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from harness import Server, executor_request  # noqa: E402

MB = 1 << 20


def vmhwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def ask(server, n):
    code = "class C:\n    def m(self):\n        return [0] * %d\n" % n
    r = server.execute(executor_request(code, className="C", methodName="m", memoryMb=1024,
                                        timeoutMs=60000), timeout=300)
    assert r.status == 200, r
    return r


def test_a_result_near_the_cap_costs_a_small_multiple_of_its_size():
    s = Server("--pool-size", "1", "--max-result-mb", "32", "--max-memory-mb", "1024")
    try:
        ask(s, 10)  # everything a request needs, allocated once
        before = vmhwm(s.proc.pid)
        n = 15 * MB  # "0," each: a 30 MiB result, under the 32 MiB cap
        r = ask(s, n)
        size = 2 * n
        grew = vmhwm(s.proc.pid) - before
        assert r.json["resultType"] == "generic", r.raw[:300]
        assert len(r.json["data"]["result"]) == n
        # The stated bound (docs/SECURITY.md): the frame, and the response that copies it.
        assert grew <= 3 * size, "peak RSS grew %.1f MiB for a %.1f MiB result" % (
            grew / MB, size / MB)
        over = ask(s, 17 * MB).json  # 34 MiB
        assert over["resultType"] == "error" and over["data"]["code"] == "INVALID_RESULT", over
        assert "larger than the limit of %d bytes" % (32 * MB) in over["data"]["message"], over
    finally:
        s.stop()


def test_a_dense_result_that_is_parsed_is_refused_not_exploded():
    """Where a result has to be parsed (a session's frames), a frame whose tree would be far
    larger than its text is refused; sandboxd stays small."""
    s = Server("--pool-size", "1", "--max-memory-mb", "1024")
    try:
        r = s.request("POST", "/v1/sessions", body={"memoryMb": 1024})
        assert r.status == 201, r
        sid = r.json["sessionId"]
        before = vmhwm(s.proc.pid)
        code = ("import json, os, select\nbody = json.dumps({'type': 'rpc_request', 'id': 1, "
                "'payload': {'type': 'memory', 'op': 'save', 'key': 'k', 'value': [0] * (12 << 20)}"
                "}).encode()\nview = memoryview(len(body).to_bytes(4, 'big') + body)\n"
                "while view:\n    select.select([], [3], [])\n    try:\n"
                "        view = view[os.write(3, view):]\n    except BlockingIOError:\n"
                "        pass\n1")
        r = s.request("POST", "/v1/sessions/%s/execute" % sid, body={"code": code, "timeoutMs": 60000},
                      timeout=300)
        assert r.status == 200, r
        out = r.json
        assert out["sessionAlive"] is False, out
        assert "too many values for its size" in out["error"]["message"], out
        assert vmhwm(s.proc.pid) - before <= 3 * 24 * MB + 16 * MB
    finally:
        s.stop()
