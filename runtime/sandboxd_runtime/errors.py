# SPDX-License-Identifier: MIT
"""Turning Python failures into the structured errors of the /execute contract."""
import traceback

RUNTIME_PREFIX = "/sandboxd/runtime/"


def user_traceback(exc):
    """The traceback of exc without the runtime's own frames in front."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(RUNTIME_PREFIX):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def error(code, message, details=None):
    return {"type": "error", "code": code, "message": message, "details": details or {}}


def from_exception(exc):
    """APPLICATION_ERROR (or MEMORY_LIMIT) for an exception raised by user code."""
    name = type(exc).__qualname__
    if type(exc).__module__ not in ("builtins", "__main__"):
        name = "%s.%s" % (type(exc).__module__, name)
    if isinstance(exc, MemoryError):
        return error(
            "MEMORY_LIMIT",
            "the program ran out of memory (MemoryError)",
            {"type": name, "traceback": user_traceback(exc)},
        )
    details = {"type": name, "message": str(exc), "traceback": user_traceback(exc)}
    if isinstance(exc, SyntaxError):
        details["line"] = exc.lineno
        details["column"] = exc.offset
        details["text"] = (exc.text or "").rstrip("\n")
        message = "%s: %s (line %s, column %s)" % (name, exc.msg, exc.lineno, exc.offset)
    else:
        message = "%s: %s" % (name, exc) if str(exc) else name
    return error("APPLICATION_ERROR", message, details)


def invalid_result(value, reason):
    try:
        shown = repr(value)
    except Exception:  # a hostile __repr__ must not take the runtime down
        shown = "<unrepresentable>"
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return error(
        "INVALID_RESULT",
        "the return value cannot be sent as JSON: %s" % reason,
        {"type": type(value).__qualname__, "repr": shown},
    )
