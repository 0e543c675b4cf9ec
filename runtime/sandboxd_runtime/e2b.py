# SPDX-License-Identifier: MIT
"""The sandbox side of an E2B sandbox (docs/E2B.md): what E2B runs in its VM as envd (files,
processes) and the code-interpreter server (contexts), inside sandboxd's jail.

The process is an agent session's interpreter (session.h: init of the sandbox's pid namespace)
and serves the host over fd 3 until the host ends the sandbox. One thread, one loop over fd 3,
the pipes of the commands it started, the sockets of its code contexts and SIGCHLD. It never
trusts what those write, and the host never trusts what it writes.

Frames (4-byte length, JSON), host -> agent:
  {"type": "e2b", "rid": R, "op": OP, ...}
agent -> host:
  {"type": "e2b", "rid": R, "ok": {...}}              the answer to a unary op
  {"type": "e2b", "rid": R, "error": {"code", "message"}}   (Connect code names)
  {"type": "e2b", "rid": R, "start": {"pid": P}}      proc.start / proc.connect: then events by pid
  {"type": "e2b", "pid": P, "stream": "stdout"|"stderr", "data": base64}
  {"type": "e2b", "pid": P, "end": {"exitCode", "exited", "status", "error"?}}
  {"type": "e2b", "rid": R, "accepted": true}         ci.execute: then lines, then done
  {"type": "e2b", "rid": R, "out": {an /execute NDJSON line}}
  {"type": "e2b", "rid": R, "done": true}
docs/internals/e2b.md lists every op.
"""
import base64
import errno
import heapq
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import uuid

from sandboxd_runtime import e2b_kernel, network, proto
from sandboxd_runtime.e2b_files import FS_OPS, HOME, OpError, resolve

USER = "user"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
CHUNK = 32 << 10            # envd's stdChunkSize: output is sent in pieces of at most this
OUT_HIGH = 8 << 20          # frames for the host waiting: stop reading pipes and contexts
OUT_LOW = 1 << 20           # ... until it is down to this
INTERRUPT_GRACE = 2.0       # an interrupted context that does not stop is restarted

# Go's syscall signal names, as envd's ProcessState.String() writes them ("signal: killed").
SIGNAL_NAMES = {signal.SIGKILL: "killed", signal.SIGTERM: "terminated", signal.SIGINT: "interrupt",
                signal.SIGHUP: "hangup", signal.SIGSEGV: "segmentation fault",
                signal.SIGABRT: "aborted", signal.SIGPIPE: "broken pipe",
                signal.SIGQUIT: "quit", signal.SIGBUS: "bus error",
                signal.SIGFPE: "floating point exception", signal.SIGXCPU: "CPU time limit exceeded",
                signal.SIGXFSZ: "file size limit exceeded"}


# ---- processes --------------------------------------------------------------------------------

class Proc:
    def __init__(self, popen, config, tag, stdin):
        self.popen = popen
        self.pid = popen.pid
        self.config = config
        self.tag = tag
        self.stdin = stdin          # fd, or None
        self.stdin_buf = bytearray()
        self.close_stdin = False
        self.fds = {}               # fd -> "stdout" | "stderr"
        self.deadline = None


class Context:
    def __init__(self, cid, language, cwd):
        self.id = cid
        self.language = language
        self.cwd = cwd
        self.pid = None
        self.sock = None
        self.buf = bytearray()
        self.queue = []             # executions waiting: their ops
        self.current = None         # the running execution's rid
        self.interrupted_at = None


class Agent:
    def __init__(self, init):
        self.sel = selectors.DefaultSelector()
        self.out = bytearray()
        self.inbuf = bytearray()
        self.writing = False
        self.paused = False
        self.procs = {}             # pid -> Proc
        self.contexts = {}          # id -> Context
        self.kernels = {}           # kernel pid -> Context
        self.defaults = {}          # language -> context id
        self.timers = []            # heap of (when, seq, fn)
        self.seq = 0
        self.limits = init.get("limits") or {}
        envs = init.get("envVars")
        self.envs = {k: v for k, v in (envs or {}).items()
                     if isinstance(k, str) and isinstance(v, str)}
        os.set_blocking(proto.FD, False)
        self.sel.register(proto.FD, selectors.EVENT_READ, self.on_host)
        self.wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda *_: None)  # pid 1 of the sandbox ends only with the host
        self.sel.register(self.wake_r, selectors.EVENT_READ, self.on_signal)

    # ---- the host channel ----

    def send(self, msg):
        self.out += proto.frame(msg)
        self.flush()

    def flush(self):
        while self.out:
            try:
                n = os.write(proto.FD, self.out)
            except BlockingIOError:
                break
            except OSError:
                os._exit(0)  # the host is gone
            del self.out[:n]
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.out else 0)
        if self.writing != bool(self.out):
            self.sel.modify(proto.FD, want, self.on_host)
            self.writing = bool(self.out)
        if not self.paused and len(self.out) > OUT_HIGH:
            self.pause(True)
        elif self.paused and len(self.out) < OUT_LOW:
            self.pause(False)

    def pause(self, on):
        """Backpressure: while the host has not taken OUT_HIGH bytes, read no more output."""
        self.paused = on
        for p in self.procs.values():
            for fd in p.fds:
                (self.sel.unregister if on else self._watch_fd)(fd)
        for ctx in self.contexts.values():
            if ctx.sock is not None:
                if on:
                    self.sel.unregister(ctx.sock.fileno())
                else:
                    self.sel.register(ctx.sock.fileno(), selectors.EVENT_READ,
                                      lambda m, c=ctx: self.on_kernel(c))

    def _watch_fd(self, fd):
        proc = next(p for p in self.procs.values() if fd in p.fds)
        self.sel.register(fd, selectors.EVENT_READ, lambda m, p=proc, f=fd: self.on_output(p, f))

    def on_host(self, mask):
        if mask & selectors.EVENT_WRITE:
            self.flush()
        if not mask & selectors.EVENT_READ:
            return
        if not proto.take_available(proto.FD, self.inbuf):
            os._exit(0)  # the host ended the sandbox
        try:
            for body in proto.split_frames(self.inbuf):
                self.dispatch(json.loads(body))
        except proto.ProtocolError:
            os._exit(3)

    def reply(self, rid, **kw):
        self.send({"type": "e2b", "rid": rid, **kw})

    def dispatch(self, msg):
        if msg.get("type") == "shutdown":
            os._exit(0)
        if msg.get("type") != "e2b":
            return
        rid, op = msg.get("rid"), msg.get("op")
        try:
            if op in FS_OPS:
                self.reply(rid, ok=FS_OPS[op](msg))
            elif op == "proc.start":
                self.proc_start(rid, msg)
            elif op == "proc.connect":
                p = self.find_proc(msg)
                self.reply(rid, start={"pid": p.pid})
            elif op == "proc.list":
                self.reply(rid, ok={"processes": [
                    {"pid": p.pid, "config": p.config, **({"tag": p.tag} if p.tag else {})}
                    for p in self.procs.values()]})
            elif op == "proc.signal":
                self.proc_signal(self.find_proc(msg), msg.get("signal"))
                self.reply(rid, ok={})
            elif op == "proc.input":
                self.proc_input(self.find_proc(msg), msg.get("data"))
                self.reply(rid, ok={})
            elif op == "proc.closeStdin":
                p = self.find_proc(msg)
                p.close_stdin = True
                self.write_stdin(p)
                self.reply(rid, ok={})
            elif op == "ci.execute":
                self.ci_execute(rid, msg)
            elif op == "ci.interrupt":
                self.ci_interrupt(msg.get("target"))
            elif op == "ci.create":
                ctx = self.new_context(msg.get("language"), msg.get("cwd"))
                self.reply(rid, ok=self.describe(ctx))
            elif op == "ci.list":
                self.reply(rid, ok={"contexts": [self.describe(c) for c in self.contexts.values()]})
            elif op == "ci.delete":
                self.end_context(self.find_context(msg.get("id")), restart=False)
                self.reply(rid, ok={})
            elif op == "ci.restart":
                self.end_context(self.find_context(msg.get("id")), restart=True)
                self.reply(rid, ok={})
            else:
                raise OpError("unimplemented", "unknown op %r" % (op,))
        except OpError as exc:
            if rid is not None:
                self.reply(rid, error={"code": exc.code, "message": exc.message})
        except OSError as exc:
            # What the sandbox's own limits refuse (no process left to fork, no memory): the
            # caller hears it, the agent goes on.
            if rid is not None:
                code = "resource_exhausted" if exc.errno in (errno.EAGAIN, errno.ENOMEM,
                                                             errno.EMFILE) else "internal"
                self.reply(rid, error={"code": code, "message": "%s: %s" % (
                    op, exc.strerror or exc)})

    # ---- processes ----

    def find_proc(self, msg):
        pid, tag = msg.get("pid"), msg.get("tag")
        for p in self.procs.values():
            if (pid is not None and p.pid == pid) or (tag is not None and p.tag == tag):
                return p
        raise OpError("not_found", "process with %s not found" % (
            "pid %s" % pid if pid is not None else "tag %r" % (tag,)))

    def proc_start(self, rid, msg):
        cmd, args = msg.get("cmd"), msg.get("args") or []
        if not isinstance(cmd, str) or not cmd or not all(isinstance(a, str) for a in args):
            raise OpError("invalid_argument", "cmd must be a string and args strings")
        cwd = resolve(msg.get("cwd") or HOME)
        if not os.path.isdir(cwd):
            raise OpError("invalid_argument", "cwd '%s' does not exist" % cwd)
        # PWD: the shell shows the directory by the name it was given (/home/user is a link).
        env = {"PATH": os.environ.get("PATH", DEFAULT_PATH), "HOME": HOME, "USER": USER,
               "LOGNAME": USER, "PWD": cwd}
        for name in network.PROXY_VARIABLES + network.CA_VARIABLES:
            if name in os.environ:
                env[name] = os.environ[name]
        env.update(self.envs)
        for k, v in (msg.get("envs") or {}).items():
            if isinstance(k, str) and isinstance(v, str) and k and "=" not in k:
                env[k] = v
        if any("\0" in k + v for k, v in env.items()) or "\0" in cmd + "".join(args):
            raise OpError("invalid_argument", "NUL bytes in the command or its environment")
        stdin = bool(msg.get("stdin"))
        try:
            popen = subprocess.Popen([cmd] + list(args), cwd=cwd, env=env,
                                     stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, close_fds=True, bufsize=0)
        except OSError as exc:
            raise OpError("invalid_argument", "error starting process '%s': %s" % (
                " ".join([cmd] + list(args)), exc.strerror or exc)) from None
        config = {"cmd": cmd, "args": list(args), "envs": msg.get("envs") or {}, "cwd": cwd}
        tag = msg.get("tag") if isinstance(msg.get("tag"), str) else None
        p = Proc(popen, config, tag, popen.stdin.fileno() if stdin else None)
        if p.stdin is not None:
            os.set_blocking(p.stdin, False)
        for f, name in ((popen.stdout, "stdout"), (popen.stderr, "stderr")):
            fd = f.fileno()
            os.set_blocking(fd, False)
            p.fds[fd] = name
        self.procs[p.pid] = p
        self.reply(rid, start={"pid": p.pid})
        for fd in p.fds:
            if not self.paused:
                self._watch_fd(fd)
        timeout = msg.get("timeoutMs")
        if isinstance(timeout, int) and timeout > 0:
            self.at(time.monotonic() + timeout / 1000, lambda: self.expire(p))

    def expire(self, p):
        """Connect-Timeout-Ms passed: envd kills the process (its context's deadline)."""
        if self.procs.get(p.pid) is p:
            self.kill_group(p, signal.SIGKILL)

    def kill_group(self, p, sig):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass

    def proc_signal(self, p, sig):
        names = {"SIGNAL_SIGKILL": signal.SIGKILL, "SIGNAL_SIGTERM": signal.SIGTERM,
                 9: signal.SIGKILL, 15: signal.SIGTERM}
        if sig not in names:
            raise OpError("invalid_argument", "unsupported signal %r" % (sig,))
        self.kill_group(p, names[sig])

    def proc_input(self, p, data):
        if p.stdin is None or p.close_stdin:
            raise OpError("failed_precondition", "stdin not enabled or closed")
        try:
            raw = base64.b64decode(data or "", validate=True)
        except ValueError:
            raise OpError("invalid_argument", "stdin data is not base64") from None
        if len(p.stdin_buf) + len(raw) > OUT_HIGH:
            raise OpError("resource_exhausted", "the process does not read its stdin")
        p.stdin_buf += raw
        self.write_stdin(p)

    def write_stdin(self, p):
        if p.stdin is None:
            return
        try:
            while p.stdin_buf:
                n = os.write(p.stdin, p.stdin_buf)
                del p.stdin_buf[:n]
        except BlockingIOError:
            pass
        except OSError:
            p.stdin_buf.clear()
        registered = p.stdin in self.sel.get_map()
        if p.stdin_buf and not registered:
            self.sel.register(p.stdin, selectors.EVENT_WRITE, lambda m, q=p: self.write_stdin(q))
        elif not p.stdin_buf:
            if registered:
                self.sel.unregister(p.stdin)
            if p.close_stdin:
                p.popen.stdin.close()
                p.stdin = None

    def on_output(self, p, fd, drain=False):
        while True:
            try:
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.close_fd(p, fd)
                return
            self.send({"type": "e2b", "pid": p.pid, "stream": p.fds[fd],
                       "data": base64.b64encode(data).decode("ascii")})
            if not drain:
                return  # one chunk per turn: other sources get theirs

    def close_fd(self, p, fd):
        if fd in self.sel.get_map():
            self.sel.unregister(fd)
        name = p.fds.pop(fd, None)
        f = p.popen.stdout if name == "stdout" else p.popen.stderr
        if f is not None:
            f.close()

    def proc_ended(self, p, status):
        # What the pipes hold now, then they are closed, as Go's cmd.Wait() does.
        for fd in list(p.fds):
            self.on_output(p, fd, drain=True)
            if fd in p.fds:
                self.close_fd(p, fd)
        if p.stdin is not None:
            if p.stdin in self.sel.get_map():
                self.sel.unregister(p.stdin)
            p.popen.stdin.close()
            p.stdin = None
        p.popen.returncode = os.waitstatus_to_exitcode(status)
        del self.procs[p.pid]
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
            end = {"exitCode": code, "exited": True, "status": "exit status %d" % code}
        else:
            sig = os.WTERMSIG(status)
            end = {"exitCode": -1, "exited": False,
                   "status": "signal: %s" % SIGNAL_NAMES.get(sig, "signal %d" % sig)}
        if end["status"] != "exit status 0":
            end["error"] = end["status"]
        self.send({"type": "e2b", "pid": p.pid, "end": end})

    def on_signal(self, mask):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.procs:
                self.proc_ended(self.procs[pid], status)
            elif pid in self.kernels:
                self.kernel_ended(self.kernels.pop(pid))
            # anything else: an orphan this init reaps

    # ---- timers ----

    def at(self, when, fn):
        self.seq += 1
        heapq.heappush(self.timers, (when, self.seq, fn))

    def next_delay(self):
        if not self.timers:
            return None
        return max(0.0, self.timers[0][0] - time.monotonic())

    def run_timers(self):
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            _, _, fn = heapq.heappop(self.timers)
            fn()

    # ---- code contexts ----

    def describe(self, ctx):
        return {"id": ctx.id, "language": ctx.language, "cwd": ctx.cwd}

    def find_context(self, cid):
        ctx = self.contexts.get(cid) if isinstance(cid, str) else None
        if ctx is None:
            raise OpError("not_found", "Context %s not found" % (cid,))
        return ctx

    def new_context(self, language, cwd, adopt=None):
        language = normalize_language(language)
        if language != "python":
            raise OpError("invalid_argument", unsupported_language(language))
        cwd = resolve(cwd or HOME)
        if not os.path.isdir(cwd):
            raise OpError("invalid_argument", "Failed to set working directory: %s does not "
                          "exist" % cwd)
        ctx = Context(str(uuid.uuid4()), language, cwd)
        self.contexts[ctx.id] = ctx
        self.spawn_kernel(ctx, adopt)
        return ctx

    def kernel_config(self, ctx):
        env = dict(self.envs)
        env.update({"HOME": HOME, "USER": USER, "LOGNAME": USER})
        return {"op": "configure", "cwd": ctx.cwd, "env": env, "limits": self.limits}

    def spawn_kernel(self, ctx, adopt=None):
        """The context's process: a fork of this one, or (adopt) the one forked in advance while
        this interpreter waited in the pool (prefork())."""
        if adopt is not None:
            pid, parent = adopt
        else:
            pid, parent = fork_kernel()
        parent.setblocking(True)
        parent.sendall(proto.frame(self.kernel_config(ctx)))
        parent.setblocking(False)
        ctx.pid, ctx.sock, ctx.buf = pid, parent, bytearray()
        self.kernels[pid] = ctx
        if not self.paused:
            self.sel.register(parent.fileno(), selectors.EVENT_READ,
                              lambda m, c=ctx: self.on_kernel(c))

    def on_kernel(self, ctx):
        sock = ctx.sock
        try:
            data = sock.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            # The code closed its end, or the process is ending: a process without its link is
            # of no use, and its end (SIGCHLD) restarts the context.
            self.kill_kernel(ctx)
            return
        ctx.buf += data
        try:
            bodies = list(proto.split_frames(ctx.buf))
        except proto.ProtocolError:
            bodies = None
        for body in bodies or ():
            try:
                msg = json.loads(body)
            except ValueError:
                bodies = None  # the code wrote on the socket itself
                break
            if not isinstance(msg, dict) or msg.get("eid") != ctx.current \
                    or ctx.current is None:
                continue  # late, or forged by the code: not this execution's
            if msg.get("done"):
                self.execution_done(ctx)
            elif isinstance(msg.get("out"), dict):
                self.reply(ctx.current, out=msg["out"])
        if bodies is None:
            self.kill_kernel(ctx)  # its protocol is broken: a fresh process takes its place

    def drop_kernel_socket(self, ctx):
        if ctx.sock is not None:
            if ctx.sock.fileno() in self.sel.get_map():
                self.sel.unregister(ctx.sock.fileno())
            ctx.sock.close()
            ctx.sock = None

    def kill_kernel(self, ctx):
        if ctx.pid is not None:
            try:
                os.kill(ctx.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.drop_kernel_socket(ctx)

    def kernel_ended(self, ctx):
        """A context's process ended: its execution says so, and (unless the context was
        deleted) a fresh process takes its place, as Jupyter restarts a dead kernel."""
        self.drop_kernel_socket(ctx)
        ctx.pid = None
        if ctx.current is not None:
            self.reply(ctx.current, out={
                "type": "error", "name": "ContextRestarting",
                "value": "the context's process ended while the code ran (out of memory, "
                         "killed, or it exited); its variables are lost and it was restarted",
                "traceback": ""})
            self.execution_done(ctx, restart=False)
        if self.contexts.get(ctx.id) is ctx:
            self.next_execution(ctx)

    def end_context(self, ctx, restart):
        if not restart:
            del self.contexts[ctx.id]
            for lang, cid in list(self.defaults.items()):
                if cid == ctx.id:
                    del self.defaults[lang]
            for op in ctx.queue:
                self.reply(op["rid"], error={"code": "not_found",
                                             "message": "Context %s was removed" % ctx.id})
            ctx.queue = []
        self.kill_kernel(ctx)  # kernel_ended() restarts it when it is still listed

    def default_context(self, language, adopt=None):
        cid = self.defaults.get(language)
        if cid in self.contexts:
            return self.contexts[cid]
        ctx = self.new_context(language, HOME, adopt)
        self.defaults[language] = ctx.id
        return ctx

    def ci_execute(self, rid, msg):
        code = msg.get("code")
        if not isinstance(code, str):
            raise OpError("invalid_argument", "code must be a string")
        if msg.get("context"):
            ctx = self.find_context(msg.get("context"))
        else:
            ctx = self.default_context(normalize_language(msg.get("language")))
        self.reply(rid, accepted=True)
        ctx.queue.append(msg)
        self.next_execution(ctx)

    def next_execution(self, ctx):
        if ctx.current is not None or not ctx.queue:
            return
        if ctx.sock is None and ctx.pid is None:  # its process ended: a fresh one
            try:
                self.spawn_kernel(ctx)
            except OSError as exc:
                for op in ctx.queue:
                    self.reply(op["rid"], out={
                        "type": "error", "name": "ContextUnavailable",
                        "value": "the context's process could not be started: %s"
                                 % (exc.strerror or exc), "traceback": ""})
                    self.reply(op["rid"], done=True)
                ctx.queue = []
                return
        if ctx.sock is None:
            return  # the old process is still ending
        msg = ctx.queue.pop(0)
        ctx.current = msg["rid"]
        ctx.interrupted_at = None
        envs = msg.get("envs") if isinstance(msg.get("envs"), dict) else {}
        frame = proto.frame({"op": "execute", "eid": ctx.current, "code": msg["code"],
                             "envs": envs})
        try:
            ctx.sock.setblocking(True)
            ctx.sock.sendall(frame)
        except OSError:
            pass  # its end is noticed on the socket
        finally:
            if ctx.sock is not None:
                ctx.sock.setblocking(False)

    def execution_done(self, ctx, restart=True):
        rid, ctx.current = ctx.current, None
        self.reply(rid, done=True)
        if restart:
            self.next_execution(ctx)

    def ci_interrupt(self, rid):
        """The client went away, or its time ran out: stop that execution (SIGINT, as Jupyter's
        interrupt), and restart the context when the code does not stop."""
        for ctx in self.contexts.values():
            for op in ctx.queue:
                if op["rid"] == rid:
                    ctx.queue.remove(op)
                    self.reply(rid, done=True)
                    return
            if ctx.current == rid and ctx.pid is not None:
                os.kill(ctx.pid, signal.SIGINT)
                ctx.interrupted_at = time.monotonic()
                self.at(ctx.interrupted_at + INTERRUPT_GRACE,
                        lambda c=ctx, r=rid: self.interrupt_overdue(c, r))
                return

    def interrupt_overdue(self, ctx, rid):
        if ctx.current == rid and self.contexts.get(ctx.id) is ctx:
            self.kill_kernel(ctx)

    # ---- the loop ----

    def run(self):
        while True:
            for key, mask in self.sel.select(self.next_delay()):
                # A callback may have unregistered (or replaced) another one of this turn.
                cur = self.sel.get_map().get(key.fd)
                if cur is not None and cur.events & mask:
                    self.guarded(cur.data, cur.events & mask)
            self.guarded(self.run_timers)

    def guarded(self, fn, *args):
        """A failure of one event (the sandbox out of processes or memory, say) must not end
        the agent, and with it the sandbox: it is reported on stderr, the host's log."""
        try:
            fn(*args)
        except Exception as exc:
            sys.stderr.write("sandboxd e2b agent: %s: %s\n" % (type(exc).__name__, exc))


def fork_kernel():
    """Fork a context's process (e2b_kernel.main): (its pid, the agent's end of its socket)."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # the context's process: it must not hold the host's channel (fd 3)
        try:
            keep = child.fileno()
            for fd in os.listdir("/proc/self/fd"):
                fd = int(fd)
                if fd > 2 and fd != keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            e2b_kernel.main(keep)
        finally:
            os._exit(70)
    child.close()
    return pid, parent


PREFORKED = None  # (pid, socket) of a context's process made while waiting in the pool


def prefork():
    """In a warm interpreter of the code-interpreter profile, before it is handed out: the first
    context's process, forked and warmed up now, off any request's path (worker.serve_one)."""
    global PREFORKED
    try:
        PREFORKED = fork_kernel()
    except OSError:
        PREFORKED = None  # the agent forks one when it starts


def _adopt_preforked():
    """The pre-forked context's process, when it is still there."""
    global PREFORKED
    found, PREFORKED = PREFORKED, None
    if found is None:
        return None
    try:
        pid, _ = os.waitpid(found[0], os.WNOHANG)
    except ChildProcessError:
        pid = found[0]
    if pid != 0:  # it died meanwhile
        found[1].close()
        return None
    return found


def normalize_language(language):
    """E2B's server (template/server/contexts.py): none is python, "js" javascript, ..."""
    if not language:
        return "python"
    language = str(language).lower().strip()
    return {"js": "javascript", "ts": "typescript"}.get(language, language)


def unsupported_language(language):
    return ("sandboxd's code interpreter runs Python only; language %r is not served "
            "(docs/E2B.md)" % language)


def serve(init):
    """Become the E2B agent of this sandbox. Never returns."""
    network.apply(init.get("network"))
    os.environ.update({"HOME": HOME, "USER": USER, "LOGNAME": USER})
    try:
        os.chdir(HOME)
    except OSError:
        pass
    agent = Agent(init)
    agent.send({"type": "session_ready", "pid": os.getpid()})
    # Started now, while the answer to the create travels, so that it is ready (or nearly)
    # when the first /execute comes.
    agent.default_context("python", _adopt_preforked())
    agent.run()
