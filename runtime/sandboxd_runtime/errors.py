# SPDX-License-Identifier: MIT
"""Turning Python failures into the structured errors of the /execute contract.

traceback is imported when an error is formatted: a one-shot interpreter whose code succeeds
never needs it (a zygote imports it ahead: worker.preload)."""

RUNTIME_PREFIX = "/sandboxd/runtime/"

# Bytes (UTF-8) a message or a traceback may take: the job's output limit (worker.py sets it).
# The host cuts longer ones the same way; cutting here keeps the frame small.
LIMIT = 1 << 20
MARKER = "\n[... truncated: %d bytes in all]"


def cap(text, limit=None):
    """text, or its start and MARKER when its UTF-8 form is over limit bytes."""
    limit = LIMIT if limit is None else limit
    if len(text) <= limit // 4:
        return text
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    marker = MARKER % len(data)
    keep = max(limit - len(marker.encode("utf-8")), 0)
    return data[:keep].decode("utf-8", "ignore") + marker


def user_traceback(exc):
    """The traceback of exc without the runtime's own frames in front."""
    import traceback

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
    cut = []

    def capped(text):
        out = cap(text)
        if out is not text:
            cut.append(True)
        return out

    if isinstance(exc, MemoryError):
        return error(
            "MEMORY_LIMIT",
            "the program ran out of memory (MemoryError)",
            {"type": name, "traceback": capped(user_traceback(exc))},
        )
    text = str(exc)
    details = {"type": capped(name), "message": capped(text),
               "traceback": capped(user_traceback(exc))}
    if isinstance(exc, SyntaxError):
        details["line"] = exc.lineno
        details["column"] = exc.offset
        details["text"] = capped((exc.text or "").rstrip("\n"))
        message = "%s: %s (line %s, column %s)" % (name, exc.msg, exc.lineno, exc.offset)
    else:
        message = "%s: %s" % (name, text) if text else name
    message = capped(message)
    if cut:
        details["truncated"] = True
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
