# SPDX-License-Identifier: MIT
"""Rich outputs ("artifacts") and the files of an execution.

An artifact is {"name", "mimeType", "data" (base64), "size"}, sent to the host
as a frame {"type": "display", "artifact": {...}} the moment it exists, so a
session streams it (SSE event "display") while the code still runs. Sources:
  - display(obj): the IPython display protocol, the first of _repr_png_,
    _repr_jpeg_, _repr_svg_, _repr_html_, _repr_markdown_, _repr_json_ (or
    _repr_mimebundle_) that answers; a matplotlib figure as PNG; anything else
    is printed, as a REPL would;
  - matplotlib: plt.show() (the backend is sandboxd_runtime.mplbackend) and
    every figure still open when the execution ends, as PNG, then closed;
  - files of the working directory matching the job's "collect" globs.
The count and the bytes are capped (the job's limits); what is over the caps is
not sent but counted, and the host reports it. The host checks and caps all of
it again: this code runs next to the user's and proves nothing.

base64, glob, json and mimetypes are imported where first needed: most executions make no
artifact, and a one-shot interpreter would import them (and re, urllib, ipaddress, fnmatch
behind them) for nothing. A zygote imports them ahead (worker.preload), so its cells do not pay
per execution.
"""
import builtins
import os
import stat
import sys

from sandboxd_runtime import proto

# (method, MIME type) in order of preference: one artifact per displayed object.
REPR_METHODS = (
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_json_", "application/json"),
)
BINARY = {"image/png", "image/jpeg"}
MAX_COLLECT_FILES = 1000  # files one glob list may match before the rest are ignored


class Collector:
    """Counts what is sent against the caps; one per execution."""

    def __init__(self, max_count=32, max_bytes=16 << 20, send=None):
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.send = send or (lambda msg: proto.write(msg))
        self.count = 0
        self.bytes = 0
        self.dropped = 0
        self.dropped_bytes = 0
        self.names = set()

    def unique(self, name):
        if name not in self.names:
            return name
        stem, dot, ext = name.rpartition(".")
        if not dot:
            stem, ext = name, ""
        i = 2
        while True:
            cand = "%s-%d%s%s" % (stem, i, "." if dot else "", ext)
            if cand not in self.names:
                return cand
            i += 1

    def add(self, name, mime, data):
        if self.count >= self.max_count or self.bytes + len(data) > self.max_bytes:
            self.dropped += 1
            self.dropped_bytes += len(data)
            return False
        name = self.unique(name)
        self.names.add(name)
        self.count += 1
        self.bytes += len(data)
        import base64

        self.send({"type": "display", "artifact": {
            "name": name, "mimeType": mime, "size": len(data),
            "data": base64.b64encode(data).decode("ascii")}})
        return True

    def summary(self):
        """What the final frame says about drops (empty when nothing was dropped)."""
        if not self.dropped:
            return {}
        return {"artifactsDropped": {"count": self.dropped, "bytes": self.dropped_bytes}}


CURRENT = Collector()
_serial = 0


def begin(limits, send=None):
    """A fresh collector for one execution, with the job's caps."""
    global CURRENT
    caps = (limits or {}).get("artifacts") or {}
    CURRENT = Collector(int(caps.get("count", 32)), int(caps.get("bytes", 16 << 20)), send)
    builtins.display = display
    return CURRENT


def _next_name(kind, ext):
    global _serial
    _serial += 1
    return "%s-%d.%s" % (kind, _serial, ext)


def _as_bytes(value, mime):
    """The bytes of one representation, or None when it is unusable."""
    if isinstance(value, tuple) and value:  # (data, metadata)
        value = value[0]
    if value is None:
        return None
    if mime in BINARY:
        if isinstance(value, str):  # some libraries hand images over base64-encoded
            import base64

            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                return None
        return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None
    if mime == "application/json":
        if isinstance(value, (bytes, str)):
            return value.encode() if isinstance(value, str) else bytes(value)
        import json

        return json.dumps(value, allow_nan=False).encode()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return str(value).encode("utf-8", "replace")


def _is_figure(obj):
    mod = type(obj).__module__ or ""
    return mod.startswith("matplotlib.") and hasattr(obj, "savefig") and hasattr(obj, "canvas")


def figure_png(fig):
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def _represent(obj):
    """(MIME type, bytes) of the richest representation obj offers, or None."""
    if _is_figure(obj):
        return "image/png", figure_png(obj)
    bundle_fn = getattr(obj, "_repr_mimebundle_", None)
    if callable(bundle_fn):
        bundle = bundle_fn()
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        if isinstance(bundle, dict):
            for _method, mime in REPR_METHODS:
                data = _as_bytes(bundle.get(mime), mime)
                if data is not None:
                    return mime, data
    for method, mime in REPR_METHODS:
        fn = getattr(obj, method, None)
        if not callable(fn):
            continue
        data = _as_bytes(fn(), mime)
        if data is not None:
            return mime, data
    return None


def display(*objs, **_ignored):
    """Show objects as a notebook would: an artifact per object, else its repr printed."""
    for obj in objs:
        rep = _represent(obj)
        if rep is None:
            print(repr(obj))
            continue
        mime, data = rep
        import mimetypes

        ext = mimetypes.guess_extension(mime) or ".bin"
        CURRENT.add(_next_name("display", ext.lstrip(".")), mime, data)


def flush_figures():
    """Every open pyplot figure as a PNG artifact, then closed (plt.show() and the end of an
    execution). Nothing when pyplot was never imported."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in plt.get_fignums():
        fig = plt.figure(num)
        label = fig.get_label() or ""
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in label)[:40].strip("-")
        CURRENT.add("%s.png" % (safe or "figure-%d" % num), "image/png", figure_png(fig))
    plt.close("all")


def collect(patterns, root="."):
    """Files under root matching patterns (relative globs, ** allowed), in order."""
    if not patterns:
        return
    import glob
    import mimetypes

    seen = []
    for pattern in patterns or ():
        if not isinstance(pattern, str) or pattern.startswith("/") or ".." in pattern.split("/"):
            continue
        for rel in sorted(glob.glob(pattern, root_dir=root, recursive=True)):
            if rel not in seen:
                seen.append(rel)
            if len(seen) >= MAX_COLLECT_FILES:
                break
    for rel in seen:
        path = os.path.join(root, rel)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            room = CURRENT.max_bytes - CURRENT.bytes
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(max(room, 0) + 1)
            if len(data) > room:  # counted as dropped with its real size
                CURRENT.dropped += 1
                CURRENT.dropped_bytes += st.st_size
                continue
        finally:
            os.close(fd)
        mime = mimetypes.guess_type(rel)[0] or "application/octet-stream"
        CURRENT.add(rel, mime, data)


def finish(collect_patterns=None):
    """The end of an execution: open figures, then collected files. Never raises: a broken
    figure or file must not turn a result into an error."""
    for step in (flush_figures, lambda: collect(collect_patterns)):
        try:
            step()
        except Exception as exc:  # e.g. a figure that cannot render
            sys.stderr.write("sandboxd: artifacts: %s: %s\n" % (type(exc).__name__, exc))
    return CURRENT.summary()


def place_files(files, root="."):
    """Write the job's files ({relative path: base64}) under root before the code runs."""
    if files:
        import base64
    for rel, b64 in (files or {}).items():
        parts = rel.split("/")
        if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError("files: %r is not a relative path" % rel)
        path = os.path.join(root, *parts)
        if len(parts) > 1:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        data = base64.b64decode(b64, validate=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
