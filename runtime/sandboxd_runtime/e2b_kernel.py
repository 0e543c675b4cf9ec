# SPDX-License-Identifier: MIT
"""One code-interpreter context of an E2B sandbox: a Python namespace in a process of its own,
forked from the agent (e2b.py), that runs code the way E2B's Jupyter-based server does.

What it answers, as the lines of E2B's /execute NDJSON (template/server/messaging.py of
e2b-dev/code-interpreter; docs/internals/e2b.md):
  {"type": "number_of_executions", "execution_count": N}   first, as Jupyter's execute_input
  {"type": "stdout"|"stderr", "text", "timestamp"}          as the code prints
  {"type": "result", "is_main_result", "text", "html", "png", ...}
      display() calls and figures (is_main_result false), the last expression's value (true)
  {"type": "error", "name", "value", "traceback"}
The value of the last expression is shown as Jupyter shows it: IPython's display formatter
(text/plain as IPython's pretty printer writes it, text/html for pandas, image/png for
matplotlib figures, ...) when IPython is installed, else repr() and the _repr_*_ methods.

Frames on the socket to the agent (4-byte length, JSON): kernel -> agent {"eid", "out": line}
and {"eid", "done": true}; agent -> kernel {"op": "execute", "eid", "code", "envs"}. SIGINT
from the agent interrupts the running code (KeyboardInterrupt), as Jupyter's interrupt does.
The process writes nothing else anywhere: fd 1 and 2 are pipes whose bytes (os.system, C
libraries) come back as stdout/stderr lines of the running execution, as ipykernel does.
"""
import ast
import asyncio
import base64
import builtins
import codecs
import datetime
import io
import json
import linecache
import os
import select
import signal
import sys
import threading
import time
import traceback

from sandboxd_runtime import artifacts, proto, worker

FLUSH_INTERVAL = 0.2  # seconds output may wait for a newline before it is sent anyway
FLUSH_BYTES = 8192

# E2B's Result: which MIME type becomes which member (template/server/api/models/result.py).
MIME_KEYS = (
    ("text/html", "html"), ("text/markdown", "markdown"), ("image/svg+xml", "svg"),
    ("image/png", "png"), ("image/jpeg", "jpeg"), ("application/pdf", "pdf"),
    ("text/latex", "latex"), ("application/json", "json"), ("application/javascript", "javascript"),
    ("e2b/data", "data"), ("e2b/chart", "chart"),
)
BINARY_MIMES = {"image/png", "image/jpeg", "application/pdf"}


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class Link:
    """The socket to the agent; writes from any thread, one frame at a time."""

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()
        self.buf = bytearray()

    def send(self, msg):
        data = proto.frame(msg)
        with self.lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]

    def recv(self):
        while True:
            try:
                for body in proto.split_frames(self.buf):
                    return json.loads(body)
            except proto.ProtocolError:
                os._exit(3)
            try:
                chunk = os.read(self.fd, 1 << 16)
            except InterruptedError:
                continue
            if not chunk:
                os._exit(0)  # the agent is gone
            self.buf += chunk


class Kernel:
    def __init__(self, link, limits):
        self.link = link
        self.eid = None            # the running execution's id
        self.count = 0             # Jupyter's execution_count
        self.out_limit = int((limits or {}).get("outputBytes") or (1 << 20))
        self.out_used = 0
        self.out_cut = False
        self.lock = threading.Lock()  # eid and the output accounting
        self.ns = {"__name__": "__main__", "__builtins__": builtins}
        self.loop = asyncio.new_event_loop()
        self.formatter = None
        self.streams = {}

    # ---- what goes to the client ----

    def emit(self, line):
        with self.lock:
            eid = self.eid
        if eid is None:
            return
        try:
            self.link.send({"eid": eid, "out": line})
        except (TypeError, ValueError, RecursionError) as exc:  # a value JSON cannot carry
            self.link.send({"eid": eid, "out": {
                "type": "stderr", "text": "sandboxd: an output could not be sent: %s\n" % exc,
                "timestamp": now_iso()}})

    def output(self, name, text):
        """Printed text of the running execution, within its output limit."""
        if not text:
            return
        with self.lock:
            eid = self.eid
            if eid is None or self.out_cut:
                return
            size = len(text.encode("utf-8", "replace"))
            if self.out_used + size > self.out_limit:
                self.out_cut = True
                text = "\n[sandboxd: the output limit of %d bytes was reached; the rest of this " \
                       "execution's output is dropped]\n" % self.out_limit
                name = "stderr"
            self.out_used += size
        self.link.send({"eid": eid, "out": {"type": name, "text": text, "timestamp": now_iso()}})

    # ---- display ----

    def bundle(self, obj):
        """The MIME bundle of obj ({mime: str or object}), as IPython's formatter makes it."""
        if self.formatter is None:
            self.formatter = make_formatter()
            patch_ipython_display(self, self.formatter is not False)
        if self.formatter is not False:
            data, _meta = self.formatter.format(obj)
        else:
            data = fallback_bundle(obj)
        out = {}
        for mime, value in data.items():
            if mime in BINARY_MIMES and isinstance(value, (bytes, bytearray)):
                value = base64.b64encode(bytes(value)).decode("ascii")
            out[mime] = value
        if isinstance(obj, (list, dict)) and "application/json" not in out:
            value = json_value(obj)
            if value is not None:
                out["application/json"] = value
        if is_dataframe(obj):
            value = json_value(dataframe_data(obj))
            if value is not None:
                out["e2b/data"] = value
        return out

    def show(self, obj, main):
        try:
            data = self.bundle(obj)
        except Exception as exc:  # a broken _repr_ must not end the execution
            data = {"text/plain": "<%s: its representation failed: %s>" % (
                type(obj).__name__, exc)}
        if data:
            self.emit(result_line(data, main))

    def display(self, *objs, **_ignored):
        for obj in objs:
            self.show(obj, False)

    def flush_figures(self):
        """Open pyplot figures as results (matplotlib's inline backend does so at the end of a
        cell and on plt.show()), then closed."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in plt.get_fignums():
            try:
                self.show(plt.figure(num), False)
            except Exception as exc:
                self.output("stderr", "sandboxd: a figure could not be drawn: %s\n" % exc)
        plt.close("all")

    # ---- running code ----

    def execute(self, msg):
        eid = msg.get("eid")
        code = msg.get("code") or ""
        envs = msg.get("envs") if isinstance(msg.get("envs"), dict) else {}
        self.count += 1
        with self.lock:
            self.eid = eid
            self.out_used = 0
            self.out_cut = False
        self.emit({"type": "number_of_executions", "execution_count": self.count})
        saved = {k: os.environ.get(k) for k in envs}
        for k, v in envs.items():
            if isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v:
                os.environ[k] = v
        try:
            self.run_cell(code, "<cell In[%d]>" % self.count)
            try:
                self.flush_figures()
            except KeyboardInterrupt:
                pass
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            self.sync_output()
            with self.lock:
                self.eid = None
            self.link.send({"eid": eid, "done": True})

    def run_cell(self, code, filename):
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        task = None
        try:
            try:
                tree = ast.parse(code, filename, "exec")
            except SyntaxError as exc:
                self.error(exc)
                return
            last = None
            silent = code.rstrip().endswith(";")  # IPython: a trailing ';' hides the value
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            body = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
            tail = compile(last, filename, "eval", flags=flags, dont_inherit=True) if last else None
            value = None
            for obj in (body, tail):
                if obj is None:
                    continue
                value = eval(obj, self.ns)
                if asyncio.iscoroutine(value):
                    task = self.loop.create_task(value)
                    value = self.loop.run_until_complete(task)
                    task = None
            if tail is not None and value is not None and not silent:
                self.ns["_"] = value
                self.ns.setdefault("Out", {})[self.count] = value
                self.sync_output()  # what was printed comes before the value, as in Jupyter
                self.show(value, True)
        except BaseException as exc:
            if task is not None and not task.done():
                task.cancel()
                try:
                    self.loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
                except BaseException:
                    pass
            if isinstance(exc, SystemExit) and exc.code in (None, 0):
                return  # sys.exit() ends the cell, not the context, as in Jupyter
            self.error(exc)

    def sync_output(self):
        for stream in self.streams.values():
            stream.flush()
        flush_fd_output()

    def error(self, exc):
        self.sync_output()
        name = type(exc).__name__
        value = str(exc)
        if isinstance(exc, SyntaxError):
            value = exc.msg or value
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename.startswith(
                ("/sandboxd/runtime/", __file__)):
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(exc), exc, tb))
        self.emit({"type": "error", "name": name, "value": value, "traceback": text})


class Stream(io.TextIOBase):
    """sys.stdout / sys.stderr of the context: what is printed goes out as lines of the running
    execution, at each newline (or after FLUSH_INTERVAL, or FLUSH_BYTES)."""

    def __init__(self, kernel, name):
        self.kernel = kernel
        self.name_ = name
        self.buf = []
        self.size = 0
        self.lock = threading.Lock()

    @property
    def encoding(self):
        return "utf-8"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        with self.lock:
            self.buf.append(s)
            self.size += len(s)
            due = "\n" in s or self.size >= FLUSH_BYTES
        if due:
            self.flush()
        return len(s)

    def flush(self):
        with self.lock:
            text = "".join(self.buf)
            self.buf = []
            self.size = 0
        if text:
            self.kernel.output(self.name_, text)


class _FdPipe:
    """fd 1 or 2 of the context, a pipe whose bytes become output lines. Whoever holds lock
    reads and sends, so a read is never half done outside it: drain() under the lock sends
    everything written before it was called, with no handover to the pump's thread."""

    def __init__(self, kernel, fd, name):
        self.kernel = kernel
        self.name = name
        self.lock = threading.Lock()
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        os.set_blocking(r, False)
        self.r = r
        self.poll = select.poll()
        self.poll.register(r, select.POLLIN)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")  # chunks split characters

    def _read_all(self):
        """What the pipe holds now, sent (lock held). False at its end."""
        while True:
            try:
                data = os.read(self.r, 1 << 16)
            except BlockingIOError:
                return True
            except InterruptedError:
                continue
            if not data:
                return False
            self.kernel.output(self.name, self.decoder.decode(data))

    def pump(self):
        while True:
            self.poll.poll()
            with self.lock:
                if not self._read_all():
                    return

    def drain(self):
        with self.lock:
            self._read_all()


_FD_PIPES = []


def capture_fds(kernel):
    """fd 1 and 2 become pipes; a thread each sends what arrives as output of the running
    execution (what os.system, subprocesses and C libraries write), as ipykernel does."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        pipe = _FdPipe(kernel, fd, name)
        _FD_PIPES.append(pipe)
        threading.Thread(target=pipe.pump, daemon=True, name="e2b-" + name).start()


def flush_fd_output():
    """Send everything written on fd 1 and 2 before now (as output of the running execution)."""
    for pipe in _FD_PIPES:
        pipe.drain()


def make_formatter():
    """IPython's DisplayFormatter with E2B's additions (matplotlib figures as PNG), or False
    when IPython is not installed."""
    try:
        from IPython.core.formatters import DisplayFormatter
    except ImportError:
        return False
    fmt = DisplayFormatter()
    png = fmt.formatters["image/png"]
    png.for_type_by_name("matplotlib.figure", "Figure", artifacts.figure_png)
    return fmt


def fallback_bundle(obj):
    data = {"text/plain": repr(obj)}
    if artifacts._is_figure(obj):
        data["image/png"] = artifacts.figure_png(obj)
        return data
    for method, mime in artifacts.REPR_METHODS:
        fn = getattr(obj, method, None)
        if callable(fn):
            try:
                value = fn()
            except Exception:
                continue
            if value is not None:
                data[mime] = value[0] if isinstance(value, tuple) else value
    return data


def is_dataframe(obj):
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def dataframe_data(df):
    """E2B's e2b/data of a DataFrame: its columns as lists (template/startup_scripts)."""
    out = df.to_dict(orient="list")
    for key, values in out.items():
        out[key] = [v.isoformat() if hasattr(v, "isoformat") else v for v in values]
    return {str(k): v for k, v in out.items()}


def _plain(value):
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return item()
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError


JSON_MAX = 1 << 20


def json_value(obj):
    """obj as plain JSON (numpy values turned into numbers), or None when it is not JSON or
    larger than JSON_MAX."""
    try:
        text = json.dumps(obj, default=_plain, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return json.loads(text) if len(text) <= JSON_MAX else None


def result_line(data, main):
    """A "result" line from a MIME bundle, as E2B's Result model builds it."""
    data = dict(data)
    line = {"type": "result"}
    text = data.pop("text/plain", None)
    if isinstance(text, str) and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if text is not None:
        line["text"] = text if isinstance(text, str) else str(text)
    for mime, key in MIME_KEYS:
        value = data.pop(mime, None)
        if value is None:
            continue
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("utf-8", "replace")
        line[key] = value
    extra = {}
    for mime, value in data.items():
        if isinstance(value, (str, int, float, bool, list, dict)):
            extra[mime] = value
    line["extra"] = extra
    line["is_main_result"] = bool(main)
    return line


def configure(kernel, msg):
    """What the agent tells a context before its first execution: its directory, environment and
    limits (worker.apply_limits: a context forked before the sandbox's job sets its own)."""
    for k, v in (msg.get("env") or {}).items():
        if isinstance(k, str) and isinstance(v, str) and k and "=" not in k and \
                "\0" not in k + v:
            os.environ[k] = v
    try:
        os.chdir(msg.get("cwd") or "/home/user")
    except OSError:
        pass
    limits = msg.get("limits") or {}
    kernel.out_limit = int(limits.get("outputBytes") or kernel.out_limit)
    try:
        worker.apply_limits(limits)
    except (OSError, ValueError):
        pass


def warm_up(kernel):
    """Run the first execution's path once, unseen (no execution id): the pages it touches are
    this process's own before a request comes."""
    ns, kernel.ns = kernel.ns, {"__name__": "__warmup__", "__builtins__": builtins}
    try:
        kernel.run_cell("1 + 1", "<warm-up>")
        kernel.bundle([1, "x"])
    finally:
        kernel.ns = ns  # the user's namespace starts empty
        linecache.cache.pop("<warm-up>", None)


def main(sock_fd):
    """The context process, right after the fork: never returns."""
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    link = Link(sock_fd)
    kernel = Kernel(link, {})
    capture_fds(kernel)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = Stream(kernel, name)
        kernel.streams[name] = stream
        setattr(sys, name, stream)
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    builtins.display = kernel.display
    artifacts.flush_figures = kernel.flush_figures  # plt.show() (mplbackend) shows them here
    patch_ipython_display(kernel, False)

    def flusher():
        while True:
            time.sleep(FLUSH_INTERVAL)
            for stream in list(kernel.streams.values()):
                try:
                    stream.flush()
                except Exception:
                    pass

    threading.Thread(target=flusher, daemon=True, name="e2b-flush").start()
    try:
        warm_up(kernel)
    except BaseException:
        pass
    while True:
        try:
            msg = link.recv()
        except KeyboardInterrupt:
            continue  # an interrupt that came after its execution ended
        if msg.get("op") == "configure":
            configure(kernel, msg)
        elif msg.get("op") == "execute":
            try:
                kernel.execute(msg)
            except KeyboardInterrupt:
                link.send({"eid": msg.get("eid"), "done": True})


def patch_ipython_display(kernel, load):
    """IPython.display.display prints when no IPython shell runs: make it show, as in Jupyter.
    Done at the start when the zygote imported IPython (the code-interpreter template), else
    (load) once the formatter has imported it."""
    mod = sys.modules.get("IPython.core.display_functions")
    if mod is None:
        if not load:
            return
        try:
            import IPython.core.display_functions as mod
        except ImportError:
            return
    mod.display = kernel.display
    disp = sys.modules.get("IPython.display")
    if disp is not None:
        disp.display = kernel.display
    core = sys.modules.get("IPython.core.display")
    if core is not None and hasattr(core, "display"):
        core.display = kernel.display
