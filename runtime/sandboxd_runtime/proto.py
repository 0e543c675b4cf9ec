# SPDX-License-Identifier: MIT
"""Framed JSON messages on fd 3: a 4-byte big-endian length, then UTF-8 JSON.

The protocol fd is separate from stdout and stderr, so nothing a program
prints (or a C extension writes to fd 1) can be mistaken for a result.

The frames are read and written by the C half of the json module (_json: the very scanner
and encoder json.loads and json.dumps use), without its Python half: that imports re, and
enum, collections and functools behind it, about 10 ms of a one-shot interpreter's start
that most jobs never need. Where _json is not (another implementation), json does it all.
"""
import os
import struct
import sys

try:
    from _json import encode_basestring as _c_encode_basestring
    from _json import make_encoder as _c_make_encoder
    from _json import make_scanner as _c_make_scanner
except ImportError:
    _c_make_scanner = None

FD = 3
MAX_FRAME = 256 << 20
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The host closed the channel or sent something that is not a frame."""


INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1


class _Patterns:
    """The regular expressions of the rare bodies, compiled (and re imported) on first need.

    LONG_DIGITS: any integer outside the 64-bit range has at least 19 digits in JSON.
    FLOAT_FORMS: floats that Python writes otherwise than sandboxd does (src/util/jdump.c):
    with an exponent ("1e+22", where sandboxd writes "1e22"), or 16 digits before the point
    ("1000000000000000.0", where sandboxd writes "1e15"). A result's value reaches the client
    as this text (the host passes it through), so it must read as every other float sandboxd
    writes. FLOAT_TOKENS: a string (skipped), or a float of those forms."""

    ready = False

    @classmethod
    def get(cls):
        if not cls.ready:
            import re

            cls.LONG_DIGITS = re.compile(r"[0-9]{19}")
            cls.FLOAT_FORMS = re.compile(r"[0-9]e[-+]|[0-9]{16}\.")
            cls.FLOAT_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"'
                                          r"|-?[0-9]+(?:\.[0-9]+)?e[-+][0-9]+|-?[0-9]{16}\.[0-9]+")
            cls.ready = True
        return cls


# Every byte a digit is, as "0"; every other, as " ": sixteen digits in a row are one find.
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))


def _rare(data):
    """Does the UTF-8 body hold 16 digits in a row, or a digit followed by e+ or e-? The
    common body has neither, and is sent as json wrote it (C-speed scans, no re)."""
    if b"0000000000000000" in data.translate(_DIGITS):
        return True
    for mark in (b"e+", b"e-"):
        i = data.find(mark)
        while i > 0:
            if 48 <= data[i - 1] <= 57:
                return True
            i = data.find(mark, i + 2)
    return False


class _Context:
    """What the C scanner reads from json.JSONDecoder: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__
    memo = {}


_scan = _c_make_scanner(_Context()) if _c_make_scanner else None
_SPACE = " \t\n\r"


def loads(data):
    """json.loads of a frame's UTF-8 bytes."""
    if _scan is None:
        import json

        return json.loads(data)
    text = data.decode("utf-8", "surrogatepass") if isinstance(data, (bytes, bytearray)) else data
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError("Expecting value: char %d" % exc.value) from None
    if text[end:].strip(_SPACE):
        raise ValueError("Extra data: char %d" % end)
    return value


def _not_json(o):
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps(msg):
    """json.dumps(msg, ensure_ascii=False, allow_nan=False, separators=(",", ":"))."""
    if _scan is None:
        import json

        return json.dumps(msg, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if isinstance(msg, str):
        return _c_encode_basestring(msg)
    # A fresh encoder each time, as json makes one: its markers (circular references) must
    # start empty even after a value that could not be encoded.
    encoder = _c_make_encoder({}, _not_json, _c_encode_basestring, None, ":", ",", False, False,
                              False)
    return "".join(encoder(msg, 0))


def jdump_real(x):
    """x as sandboxd writes a float (jdump_real() in src/util/jdump.c): the first of %.15g,
    %.16g, %.17g that reads back as x (subnormals from %.1g), an exponent without '+' or
    leading zeros, and ".0" on an integral value."""
    first = 1 if x != 0 and abs(x) < sys.float_info.min else 15
    for prec in range(first, 18):
        text = "%.*g" % (prec, x)
        if float(text) == x:
            break
    mantissa, e, exponent = text.partition("e")
    if e:
        return "%se%d" % (mantissa, int(exponent))
    return text if "." in text else text + ".0"


def _float_token(m):
    token = m.group(0)
    return token if token[0] == '"' else jdump_real(float(token))


def check_integers(value):
    """Raise ValueError naming the first integer outside the 64-bit range in value: sandboxd
    (and its JSON library) carries integers as 64-bit signed numbers, in both directions."""
    nodes = [(value, -1, None)]  # (value, parent's index, key in the parent): no path copies
    stack = [0]
    while stack:
        at = stack.pop()
        v = nodes[at][0]
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            if INT_MIN <= v <= INT_MAX:
                continue
            parts = []
            while nodes[at][1] >= 0:
                parts.append(nodes[at][2])
                at = nodes[at][1]
            where = "$" + "".join("[%d]" % p if isinstance(p, int) else "[%r]" % p
                                  for p in reversed(parts))
            shown = str(v) if v.bit_length() < 4000 else "an integer of %d bits" % v.bit_length()
            raise ValueError("integer %s at %s is outside the range sandboxd carries "
                             "(-2**63 to 2**63-1, 64-bit signed); send it as a string or "
                             "a float" % (shown, where))
        items = v.items() if isinstance(v, dict) else enumerate(v) \
            if isinstance(v, (list, tuple)) else ()
        for k, x in items:
            nodes.append((x, at, k))
            stack.append(len(nodes) - 1)


def encode(msg):
    """Serialise msg; raises ValueError/TypeError for values JSON cannot carry."""
    body = dumps(msg)
    data = body.encode("utf-8")
    if _rare(data):
        p = _Patterns.get()
        if p.LONG_DIGITS.search(body):  # rare: digits in strings, or a big integer
            check_integers(msg)
        if p.FLOAT_FORMS.search(body):  # rare: such digits in strings, or such a float
            data = p.FLOAT_TOKENS.sub(_float_token, body).encode("utf-8")
    return data


def write_bytes(body, fd=FD):
    data = _HEADER.pack(len(body)) + body
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write(msg, fd=FD):
    write_bytes(encode(msg), fd)


def take_available(fd, buf):
    """Append what a non-blocking fd has to buf; False once its other end closed."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            return False
        buf += data


def split_frames(buf):
    """The bodies of the whole frames at the start of buf (a bytearray), removed from it; what
    is left is the start of the next frame. Raises ProtocolError for a frame over MAX_FRAME."""
    while len(buf) >= 4:
        (n,) = _HEADER.unpack_from(buf)
        if n > MAX_FRAME:
            raise ProtocolError("frame of %d bytes is over the limit" % n)
        if len(buf) < 4 + n:
            return
        body = bytes(buf[4:4 + n])
        del buf[:4 + n]
        yield body


def frame(msg):
    """msg as a frame: its 4-byte length, then its JSON."""
    body = encode(msg)
    return _HEADER.pack(len(body)) + body


def _read_exact(fd, n):
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise ProtocolError("channel closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read(fd=FD):
    (length,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if length > MAX_FRAME:
        raise ProtocolError("frame of %d bytes is over the limit" % length)
    try:
        return loads(_read_exact(fd, length))
    except ValueError as exc:
        raise ProtocolError("frame is not JSON: %s" % exc) from None


_next_rpc = 0


def rpc_call(payload, fd=FD):
    """A blocking request to the host (one-shot jobs: the LLM call of a template).
    Returns the payload of the answer, raises RpcError with the host's message."""
    global _next_rpc
    _next_rpc += 1
    rid = _next_rpc
    write({"type": "rpc_request", "id": rid, "payload": payload}, fd)
    while True:
        msg = read(fd)
        if msg.get("type") == "rpc_response" and msg.get("id") == rid:
            if msg.get("success"):
                return msg.get("payload")
            raise RpcError(msg.get("error") or "the host refused the call", msg.get("errorKind"),
                           msg.get("details"))


class RpcError(Exception):
    def __init__(self, message, kind=None, details=None):
        super().__init__(message)
        self.kind = kind
        self.details = details or {}
