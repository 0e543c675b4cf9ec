# SPDX-License-Identifier: MIT
"""Numbers keep their value (docs/API.md "Numbers"): floats come back with every digit
(the shortest text that reads back as the same double), integers are 64-bit signed and one
outside that range is refused with a message naming the range — through /execute (JIT and
EXECUTOR), sessions and MCP run_python. A seeded property test sends a few hundred random
values down each path and names the first one that changed."""
import json
import math
import random
import struct

import pytest

from harness import McpStdio, Server, executor_request, jit_request

SEED = 20240611
INT64 = (-(1 << 63), (1 << 63) - 1)


@pytest.fixture(scope="module")
def srv(apps_dir):
    s = Server("--pool-size", "2", definitions=apps_dir)
    yield s
    s.stop()


def random_floats(rng, n):
    """Doubles from every corner: random bit patterns, decimals as people write them,
    subnormals, extremes."""
    out = [0.1, 1234567890.123456, math.pi, -0.0, 5e-324, 1.7976931348623157e308, 1e22, 1e-7,
           0.30000000000000004, 2.0 ** 53 + 2, 123456789.0]
    while len(out) < n:
        kind = rng.randrange(3)
        if kind == 0:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if math.isnan(v) or math.isinf(v):
                continue
        elif kind == 1:
            v = round(rng.uniform(-1e6, 1e6), rng.randrange(0, 12))
        else:
            v = rng.uniform(-1, 1) * 10.0 ** rng.randrange(-300, 300)
        out.append(float(v))
    return out


def random_ints(rng, n):
    out = [0, 1, -1, INT64[0], INT64[1], 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 62]
    while len(out) < n:
        out.append(rng.randint(*INT64) >> rng.randrange(64))
    return out


def same(sent, got, where):
    """Exact equality, type included (1.0 stays a float, 1 an int), naming the offender."""
    assert len(sent) == len(got), where
    for a, b in zip(sent, got):
        assert type(a) is type(b) and (a == b and math.copysign(1, a) == math.copysign(1, b)
                                       if isinstance(a, float) else a == b), \
            "%s: sent %r (%s), got back %r (%s)" % (where, a, float.hex(a) if isinstance(a, float)
                                                    else "int", b, type(b).__name__)


def values():
    rng = random.Random(SEED)
    return random_floats(rng, 300) + random_ints(rng, 100)


# ---- /execute ------------------------------------------------------------------------------

def test_floats_keep_every_digit(srv):
    code = "def f():\n    return [1234567890.123456, 3.141592653589793, 0.1, 1e22, 2.0]\n"
    r = srv.execute(executor_request(code, functionName="f"))
    assert r.status == 200, r
    assert b"[1234567890.123456,3.141592653589793,0.1,1e22,2.0]" in r.raw
    assert r.json["data"]["result"] == [1234567890.123456, math.pi, 0.1, 1e22, 2.0]


def test_property_executor_round_trip(srv):
    sent = values()
    code = "def echo(values):\n    return values\n"
    r = srv.execute(executor_request(code, functionName="echo", methodParams={"values": sent}))
    assert r.status == 200 and r.json["resultType"] == "generic", r
    same(sent, r.json["data"]["result"], "EXECUTOR methodParams -> result")


def test_property_jit_round_trip(srv):
    sent = values()
    r = srv.execute(jit_request("handlers/basic.py", "one_param_echo", body={"values": sent}))
    assert r.status == 200 and r.json["resultType"] == "generic", r
    same(sent, r.json["data"]["body"]["values"], "JIT requestData -> result")


@pytest.mark.parametrize("value", [2 ** 70, -(2 ** 63) - 1, 2 ** 63])
def test_integers_beyond_64_bits_are_refused_by_name(srv, value):
    code = "def f():\n    return {'n': [%d]}\n" % value
    r = srv.execute(executor_request(code, functionName="f"))
    assert r.status == 200, r
    data = r.json["data"]
    assert data["code"] == "INVALID_RESULT", data
    assert "integer %d at $['n'][0] is outside the range" % value in data["message"], data
    assert "-2**63 to 2**63-1" in data["message"]


def test_property_big_integers_are_named(srv):
    """Seeded: an integer beyond 64 bits hidden among good ones is the one the error names."""
    rng = random.Random(SEED + 1)
    for _ in range(25):
        good = random_ints(rng, 10)
        big = rng.choice([1, -1]) * rng.randint(2 ** 63, 2 ** rng.randrange(64, 300))
        if big == -(2 ** 63):
            big -= 1
        at = rng.randrange(len(good) + 1)
        values = good[:at] + [big] + good[at:]
        code = "def f():\n    return {'v': %r}\n" % (values,)
        data = srv.execute(executor_request(code, functionName="f")).json["data"]
        assert data["code"] == "INVALID_RESULT", (big, data)
        assert "integer %d at $['v'][%d] is outside" % (big, at) in data["message"], \
            (big, at, data["message"])


def test_integers_beyond_64_bits_in_requests_are_refused(srv):
    body = '{"requestId": "r", "requestData": {"source": "x", "n": %d}, "context": {}}' % 2 ** 70
    r = srv.request("POST", "/execute", body, {"Content-Type": "application/json"})
    assert r.status == 400 and r.json["error"]["code"] == "INVALID_JSON", r
    assert "too big integer" in r.json["error"]["message"]


# ---- sessions and MCP run_python -------------------------------------------------------------

CHECK = """\
import json
sent = json.loads(%r)
save_memory("numbers", sent)
got = load_memory("numbers")
bad = [(a, b) for a, b in zip(sent, got) if type(a) is not type(b) or repr(a) != repr(b)]
print("round trip:", "ok" if len(got) == len(sent) and not bad else "CHANGED %%r" %% bad[:3])
"""


def test_property_session_memory_round_trip(srv):
    """Values saved by session code are kept by the host (JSON on disk) and loaded back."""
    sid = srv.request("POST", "/v1/sessions", {}).json["sessionId"]
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, {"code": CHECK % json.dumps(values())})
    assert r.status == 200 and r.json["status"] == "ok", r
    assert r.json["stdout"] == "round trip: ok\n", r.json["stdout"]
    r = srv.request("POST", "/v1/sessions/%s/execute" % sid, {"code": "save_memory('big', 2**70)"})
    assert r.json["status"] == "error", r
    assert "outside the range sandboxd carries" in r.json["error"]["message"], r.json["error"]
    srv.request("DELETE", "/v1/sessions/%s" % sid)


def test_property_mcp_run_python_round_trip():
    c = McpStdio()
    try:
        result = c.call("run_python", {"code": CHECK % json.dumps(values()) +
                                       "print(json.dumps({'pi': 3.141592653589793}))\n"})
    finally:
        c.close()
    assert result.get("isError") is not True, result
    text = result["content"][0]["text"]
    assert "round trip: ok" in text, text
    assert '{"pi": 3.141592653589793}' in text
