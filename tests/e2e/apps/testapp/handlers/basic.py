"""Handlers exercised by the end-to-end tests: one per behaviour."""
import base64
import os
import sys
import time


def add(request, context):
    body = request["body"]
    return {"sum": body["a"] + body["b"]}


def one_param(request):
    return {"source": request["source"]}


def one_param_echo(request):
    return request


def no_param():
    return "no parameters"


def echo_context(request, context):
    return context


def prints(request, context):
    print("to stdout")
    print("to stderr", file=sys.stderr)
    return {"printed": True}


def raises(request, context):
    def inner():
        raise ValueError("bad value %d" % request["body"]["n"])

    inner()


def http_ok(request, context):
    return {"statusCode": 201, "headers": {"X-Test": "yes"}, "body": {"created": True}}


def http_bytes(request, context):
    return {"statusCode": 200, "body": b"\x00\x01binary\xff"}


def http_text(request, context):
    return {"statusCode": 404, "body": "not here"}


def bad_status(request, context):
    return {"statusCode": 42}


def not_json(request, context):
    return {"value": {1, 2, 3}}


def nan(request, context):
    return float("nan")


def returns_none(request, context):
    return None


async def async_handler(request, context):
    import asyncio

    await asyncio.sleep(0.01)
    return "awaited"


def sleep_forever(request, context):
    while True:
        time.sleep(1)


def busy_loop(request, context):
    while True:
        pass


def memory_bomb(request, context):
    chunks = []
    while True:
        chunks.append(bytearray(16 << 20))


def output_flood(request, context):
    block = "x" * 65536
    while True:
        sys.stdout.write(block)


def crash(request, context):
    import ctypes

    ctypes.string_at(0)  # a real segmentation fault


def exit_early(request, context):
    os._exit(3)


def sleep_ms(request, context):
    time.sleep(request["body"]["ms"] / 1000.0)
    return {"slept": request["body"]["ms"]}


def write_tmp(request, context):
    path = "/tmp/marker"
    existed = os.path.exists(path)
    with open(path, "w") as f:
        f.write(request["body"].get("value", "x"))
    return {"existed": existed}


def json_work(request, context):
    import json

    data = {"items": list(range(200))}
    for _ in range(50):
        data = json.loads(json.dumps(data))
    return {"n": len(data["items"])}


def identity(request, context):
    return {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd()}


def b64(request, context):
    return base64.b64encode(b"abc").decode()


def fast_then_slow(request, context):
    """Quick unless asked to hang: lets a test build a history, then exceed it."""
    if request["body"].get("hang"):
        time.sleep(30)
    return "quick"
