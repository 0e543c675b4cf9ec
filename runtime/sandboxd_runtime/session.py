# SPDX-License-Identifier: MIT
"""Persistent sessions ("code mode"): one interpreter, many executions.

Variables survive between executions; code may use top-level ``await``;
``await mcp_<server>.<tool>(**args)`` travels as an ``rpc_request`` frame to
the host, which calls the real MCP server (the sandbox has no network) and
answers with ``rpc_response``. Memory, saved tools and files live on the host,
per workspace, reached the same way.

Frames (fd 3), in addition to worker.py's:
  host -> runtime  {"type": "execute", "id": N, "code": "..."}
                   {"type": "rpc_response", "id": R, "success": bool, "payload"|"error": ...}
  runtime -> host  {"type": "session_ready", ...}             (answer to the session job)
                   {"type": "rpc_request", "id": R, "payload": {...}}
                   {"type": "display", "artifact": {name, mimeType, data, size}}
                   {"type": "execution_done", "id": N, "status": "ok"|"error"|"timeout",
                    "error": {type, message, traceback}|null, "result": repr|null,
                    "durationMs": ms, "artifactsDropped"?: {count, bytes}}

A time limit is enforced by the host: SIGINT first (the execution is
interrupted and the session survives), SIGKILL if that does not work.
stdout and stderr go to their own pipes, written through, so the host streams
them as they come; they are flushed before execution_done.
"""
import __future__
import ast
import asyncio
import base64
import builtins
import inspect
import io
import json
import keyword
import linecache
import os
import select
import signal
import sys
import _signal
import time

from sandboxd_runtime import artifacts, errors, helpers, mcpapi, network, preflight, proto
from sandboxd_runtime.mcpapi import COMPAT, DISCOVERED, SERVERS, ApprovalDenied, MCPError  # noqa: F401
from sandboxd_runtime.checks import NOT_SENT


class ExecutionTimeout(BaseException):
    """Raised into running code when the host interrupts it (time limit)."""


# ---- the channel to the host ----------------------------------------------------------------

class Channel:
    """Frames on fd 3, readable from the event loop and, for the synchronous helpers,
    by blocking until the awaited answer arrives."""

    def __init__(self, fd):
        self.fd = fd
        self.loop = None       # set once the event loop runs
        self.buf = bytearray()
        self.futures = {}      # rpc id -> asyncio future
        self.answers = {}      # rpc id -> message, for synchronous waiters
        self.commands = []     # execute commands not yet taken
        self.command_waiter = None
        self.next_id = 0
        os.set_blocking(fd, False)

    def send(self, msg):
        data = proto.encode(msg)
        body = len(data).to_bytes(4, "big") + data
        view = memoryview(body)
        while view:
            try:
                n = os.write(self.fd, view)
            except BlockingIOError:
                # The host stops reading requests while answers pile up that we have not read:
                # read them now, or both sides would wait for each other.
                readable, _, _ = select.select([self.fd], [self.fd], [])
                if readable:
                    self._take()
                continue
            view = view[n:]
        if self.buf and self.loop is not None:
            self.loop.call_soon_threadsafe(self._dispatch_buffered)

    def _take(self):
        """Append what can be read without blocking to the buffer."""
        if not proto.take_available(self.fd, self.buf):
            os._exit(0)  # the host closed the session

    def _dispatch_buffered(self):
        for msg in self._frames():
            self.dispatch(msg)

    def _frames(self):
        try:
            for body in proto.split_frames(self.buf):
                yield json.loads(body)
        except proto.ProtocolError:
            os._exit(3)

    def pump(self):
        """Read what is there and dispatch it."""
        self._take()
        self._dispatch_buffered()

    def dispatch(self, msg):
        kind = msg.get("type")
        if kind == "rpc_response":
            rid = msg.get("id")
            fut = self.futures.pop(rid, None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
            elif fut is None:
                self.answers[rid] = msg
        elif kind == "execute":
            self.commands.append(msg)
            if self.command_waiter is not None and not self.command_waiter.done():
                self.command_waiter.set_result(None)
        elif kind == "add_servers" and NAMESPACE:
            # More servers for this session (a later call named them): proxies join the
            # namespace; the host sends this before the execution that needs them.
            mcpapi.add_servers(msg.get("servers") or [], NAMESPACE["ns"])
        elif kind == "shutdown":
            os._exit(0)

    def new_id(self):
        self.next_id += 1
        return self.next_id

    async def call(self, payload):
        rid = self.new_id()
        fut = asyncio.get_running_loop().create_future()
        self.futures[rid] = fut
        self.send({"type": "rpc_request", "id": rid, "payload": payload})
        return _answer(await fut, payload)

    def call_sync(self, payload):
        rid = self.new_id()
        self.answers.pop(rid, None)
        self.send({"type": "rpc_request", "id": rid, "payload": payload})
        while rid not in self.answers:
            select.select([self.fd], [], [])
            self.pump()
        return _answer(self.answers.pop(rid), payload)

    async def next_command(self):
        while not self.commands:
            self.command_waiter = asyncio.get_running_loop().create_future()
            await self.command_waiter
            self.command_waiter = None
        return self.commands.pop(0)


def _answer(msg, payload):
    if msg.get("success", False):
        return msg.get("payload")
    message = msg.get("error") or "the host refused the call"
    if msg.get("errorKind") == "os" and isinstance(msg.get("errno"), int):
        # The state directory's file system failed (a full disk: ENOSPC): an OSError, as for
        # any file the code would write itself.
        raise OSError(msg["errno"], message)
    cls = ApprovalDenied if msg.get("errorKind") == "approval_denied" else MCPError
    raise cls(message, server=payload.get("server"), tool=payload.get("tool"),
              kind=msg.get("errorKind"))


CHANNEL = None


# ---- memory, tools, files (stored by the host, per workspace) -------------------------------

def _host(payload):
    return CHANNEL.call_sync(payload)


RESERVED_TOOL_NAMES = {"mcp", "mcp_servers", "LOADED_MCP_SERVERS", "MCPError", "ApprovalDenied",
                       "NOT_SENT"}


def check_tool(name, source):
    """A saved tool is one plain function definition, and nothing else: no decorator, default
    values that are literals, annotations kept as strings, a name that shadows nothing of the
    session's. Defining it then runs no code at all. Returns the code object to exec."""
    if (not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name)
            or name.startswith(("mcp_", "__")) or name in RESERVED_TOOL_NAMES
            or name in HELPERS or hasattr(builtins, name)):
        raise ValueError("%r cannot be the name of a saved tool (it is not an identifier, or "
                         "it is one of the session's or Python's own names)" % (name,))
    filename = "<saved tool %s>" % name
    tree = ast.parse(source, filename, "exec")
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ValueError("a saved tool is exactly one function definition")
    fn = tree.body[0]
    if fn.name != name:
        raise ValueError("the function is called %r, not %r" % (fn.name, name))
    if fn.decorator_list:
        raise ValueError("a saved tool cannot have decorators")
    for default in fn.args.defaults + [d for d in fn.args.kw_defaults if d is not None]:
        try:
            ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError("the default values of a saved tool must be literals") from None
    return compile(tree, filename, "exec", flags=__future__.annotations.compiler_flag,
                   dont_inherit=True)


def save_tool(func):
    """Keep func's source in the workspace; later sessions of it define it at start."""
    if not callable(func) or not getattr(func, "__name__", None):
        raise TypeError("save_tool expects a function")
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as exc:
        raise ValueError("cannot find the source of %r: %s" % (func, exc)) from None
    if source.startswith((" ", "\t")):
        source = inspect.cleandoc(source)
    check_tool(func.__name__, source)
    _host({"type": "save_tool", "name": func.__name__, "source": source})
    return "Tool %r saved." % func.__name__


def save_file(name, content, **kwargs):
    """Keep a file in the workspace (its name back); in compat mode the fork's: into this
    run's execution folder, its file:// URL back."""
    if mcpapi.compat():
        return helpers.save_file(name, content, **kwargs)
    data = content.encode() if isinstance(content, str) else bytes(content)
    reply = _host({"type": "save_file", "name": name,
                   "content": base64.b64encode(data).decode("ascii")})
    return reply.get("path", name)


def list_execution_files():
    """The workspace's files; in compat mode the fork's {images, data, other} of this run."""
    if mcpapi.compat():
        return helpers.list_execution_files()
    return _host({"type": "list_files"}).get("files", [])


def help_(*args):
    """Python's help() for the sandbox (no pager, no interactive prompt): help(obj) prints the
    documentation of obj (a tool: its signature and docstring); help() what the session
    offers."""
    if not args:
        print(mcpapi.capability_summary())
        return
    import pydoc
    pydoc.Helper(io.StringIO(), sys.stdout).help(*args)


# ---- the namespace ------------------------------------------------------------------------

HELPERS = {
    "save_memory": helpers.save_memory, "load_memory": helpers.load_memory,
    "delete_memory": helpers.delete_memory, "list_memories": helpers.list_memories,
    "update_memory": helpers.update_memory, "memory_exists": helpers.memory_exists,
    "get_memory_info": helpers.get_memory_info, "now": helpers.now,
    "convert_time": helpers.convert_time, "list_timezones": helpers.list_timezones,
    "execution_folder": helpers.execution_folder, "save_image": helpers.save_image,
    "render_chart": helpers.render_chart, "save_tool": save_tool, "save_file": save_file, "list_execution_files": list_execution_files,
    "list_tools": mcpapi.list_tools, "search_tool_docs": mcpapi.search_tool_docs,
    "query_tool_docs": mcpapi.query_tool_docs, "list_servers": mcpapi.list_servers,
    "describe_server": mcpapi.describe_server,
    "capability_summary": mcpapi.capability_summary, "MCPError": MCPError,
    "ApprovalDenied": ApprovalDenied, "NOT_SENT": NOT_SENT, "help": help_,
}

NAMESPACE = {}  # the session's globals, once built (add_servers frames extend it)


def build_namespace(init, pkg):
    """The session's globals: pkg (mcpapi.install_modules), the init job's servers and saved
    tools, the helpers."""
    ns = {"__name__": "__main__", "__builtins__": builtins}
    DISCOVERED[:] = init.get("discovered", [])
    if init.get("compat"):
        COMPAT["mode"] = init["compat"]
    ns["mcp"] = pkg
    mcpapi.add_servers(init.get("servers", []), ns)
    ns.update(HELPERS)
    failed = []
    for tool in init.get("tools", []):
        name, source = tool.get("name"), tool.get("source", "")
        # Checked again here, before any user code runs: the workspace may hold anything (a
        # source saved by a forged request). Nothing a tool holds can stop the session start.
        try:
            code = check_tool(name, source)
            filename = "<saved tool %s>" % name
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            exec(code, ns)
        except Exception as exc:
            failed.append({"name": str(name), "error": "%s: %s" % (type(exc).__name__, exc)})
    NAMESPACE.clear()
    NAMESPACE["ns"] = ns
    return ns, failed


# ---- executions ---------------------------------------------------------------------------

RUNNING = False


_SIGINT = int(signal.SIGINT)


def _on_sigint(signum, frame):
    if RUNNING:
        raise ExecutionTimeout()


def _compile(code, filename, ns):
    """(body, last-expression) code objects, both allowing top-level await. The pre-flight runs
    on the tree first: a call of a tool that would fail stops the code here."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(code, filename, "exec")
    if SERVERS:  # no server, no proxy: no call to check (and no walk of the tree)
        preflight.check(tree, ns, mcpapi.ServerProxy)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    tail = compile(last, filename, "eval", flags=flags, dont_inherit=True) if last else None
    return body, tail


def _result_repr(value):
    if value is None:
        return None
    try:
        text = repr(value)
    except Exception as exc:  # a hostile __repr__ is the user's problem, not ours
        text = "<repr failed: %s>" % type(exc).__name__
    return text if len(text) <= 10000 else text[:10000] + "..."


def run_code(loop, ns, code, filename):
    """Run one execution; returns (status, error, result)."""
    global RUNNING
    task = None
    try:
        RUNNING = True
        body, tail = _compile(code, filename, ns)
        value = None
        for obj in (body, tail):
            if obj is None:
                continue
            value = eval(obj, ns)
            if inspect.iscoroutine(value):
                task = loop.create_task(value)
                value = loop.run_until_complete(task)
                task = None
        if tail is not None:
            ns["_"] = value
        RUNNING = False
        return "ok", None, _result_repr(value if tail is not None else None)
    except ExecutionTimeout:
        RUNNING = False
        if task is not None and not task.done():
            task.cancel()
            try:
                loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
            except BaseException:
                pass
        return "timeout", {"type": "TimeoutError", "message": "the execution was interrupted "
                           "at its time limit; the session is intact", "traceback": ""}, None
    except preflight.PreflightError as exc:
        # Nothing ran: the message says which call, where, and the tool's signature.
        RUNNING = False
        return "error", {"type": type(exc.error).__name__,
                         "message": "line %d (checked before the code ran; nothing was run or "
                                    "sent): %s" % (exc.line, exc.error),
                         "traceback": "", "line": exc.line}, None
    except SystemExit as exc:
        # sys.exit() ends the execution, not the session: 0 or None is a success with its
        # output, anything else an error that names the code (a message counts as 1, as in
        # Python, and is printed to stderr the way Python prints it).
        RUNNING = False
        if task is not None and not task.done():
            task.cancel()
        if exc.code is None or exc.code == 0:
            return "ok", None, None
        code = exc.code if isinstance(exc.code, int) else 1
        if not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
        return "error", {"type": "SystemExit", "message": "exit code %d" % code,
                         "traceback": "", "exitCode": code}, None
    except BaseException as exc:
        RUNNING = False
        if task is not None and not task.done():
            task.cancel()
        err = errors.from_exception(exc)["details"]
        return "error", {"type": err.get("type"), "message": err.get("message") or err.get("type"),
                         "traceback": err.get("traceback", ""),
                         **({"line": err["line"], "column": err["column"]}
                            if "line" in err else {}),
                         **({"truncated": True} if err.get("truncated") else {})}, None


# What prepare() made ahead of the session job: the event loop and the `mcp` package.
PREPARED = {}


def _setup():
    """The session's process-wide set-up that needs nothing of the init job: streams written
    through, SIGINT interrupting executions, an event loop, the `mcp` package. A new event loop
    alone is ~0.8 ms (a selector, a self-pipe, ~140 copied pages), most of a session's start."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(write_through=True, line_buffering=True)
        except (AttributeError, io.UnsupportedOperation):
            pass
    # _signal's signal(): signal.signal() would build enums from the old and new handler.
    _signal.signal(_SIGINT, _on_sigint)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pkg = mcpapi.install_modules({n: f for n, f in HELPERS.items() if not hasattr(mcpapi, n)})
    return loop, pkg


def prepare():
    """In a cell of the sessions' pool, while it waits for its job (worker.serve_one): the
    set-up every session does first, off the session's start (docs/internals/session.md).
    Only the runtime's own code runs here, and nothing of it depends on who the cell will
    serve: the job (a session's init, or another kind, which ignores it) still brings all of
    that."""
    PREPARED["setup"] = _setup()


def serve(init):
    """Become a session. Never returns."""
    global CHANNEL
    loop, pkg = PREPARED.pop("setup", None) or _setup()
    CHANNEL = Channel(proto.FD)
    mcpapi.CHANNEL = CHANNEL
    helpers.HOST = CHANNEL.call_sync
    helpers.STATE["host_workdir"] = init.get("hostWorkdir")
    network.apply(init.get("network"))
    ns, failed = build_namespace(init, pkg)
    CHANNEL.loop = loop
    loop.add_reader(proto.FD, CHANNEL.pump)
    CHANNEL.send({"type": "session_ready", "pid": os.getpid(), "servers": list(SERVERS),
                  "toolsLoaded": [t["name"] for t in init.get("tools", [])
                                  if t["name"] not in {f["name"] for f in failed}],
                  "toolsFailed": failed})
    count = 0
    while True:
        cmd = loop.run_until_complete(CHANNEL.next_command())
        count += 1
        filename = "<cell %d>" % count
        code = cmd.get("code", "")
        # Registered so that tracebacks show the source and save_tool can find it.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        start = time.perf_counter()
        # Figures and display() go out as "display" frames while the code runs.
        artifacts.begin(init.get("limits"), send=CHANNEL.send)
        helpers.begin_run(code)
        status, error, result = run_code(loop, ns, code, filename)
        dropped = artifacts.finish()  # figures still open
        helpers.finish_run()  # the run's folder kept on the host, before the answer
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        CHANNEL.send({"type": "execution_done", "id": cmd.get("id"), "status": status,
                      "error": error, "result": result,
                      "durationMs": round((time.perf_counter() - start) * 1000, 3), **dropped})
