# SPDX-License-Identifier: MIT
"""The pool's zygote: a jailed interpreter with the runtime already imported
that forks one fresh cell per execution.

Protocol on fd 3 (a SOCK_SEQPACKET socket, one JSON message per packet,
fds passed with SCM_RIGHTS):
  host -> zygote  {"op": "config", ...} + [seccomp filter memfd]   (first)
                  {"op": "fork", "token": N} + [proto, stdout, stderr]
  config: tmpBytes, nofile, nproc, fsize, preimport (modules), warmup (code, optional),
          prepare ("session": cells prepare a session while they wait; optional),
          egressPort (a network pool: each cell in a network namespace of its own, lo up, a
          socket listening on 127.0.0.1:egressPort there, sent with "forked"; optional)
  zygote -> host  {"op": "ready"}
                  {"op": "forked", "token": N, "pid": P} + [pidfd]
                                                           (+ [listener]: network pool)
                  {"op": "fork_failed", "token": N, "error": "..."}
                  {"op": "exit", "token": N, "status": S, "cpuUs": C, "maxRssKb": M,
                   "minFlt": F}

The zygote never runs untrusted code. Each cell leaves sbx_cell_enter() in
namespaces of its own with every privilege gone, then serves exactly one
job (worker.serve_one) and exits. The zygote reaps it and reports the exit.
When the host closes the socket the zygote exits, and with it (it is init
of the pid namespace) every cell it forked.
"""
import array
import ctypes
import gc
import json
import os
import random
import selectors
import signal
import _signal
import socket
import sys

from sandboxd_runtime import errors, proto, worker

CELL_LIB = "/sandboxd/lib/libsbxcell.so"
# The runtime's own modules are always imported; these come from `serve --preimport`.
# Every module preimported makes each cell's fork and exit a little dearer (page tables:
# ~10 us per MB of zygote) and saves its import (1-5 ms, numpy ~100 ms) in every script
# that uses it.


MT_WORDS = 624  # numpy's MT19937 state: uint32 key[624], then int pos


def _mt_refill(bg):
    """What gives numpy's MT19937 bit generator bg a fresh state in place: 624 words from the
    kernel, and the position at their end so that the next draw mixes them first. Nothing
    else is touched (~20 copied pages per cell): numpy's own seed() builds arrays and copies
    ~110 of the zygote's pages in every cell."""
    addr, size = bg.ctypes.state_address, 4 * MT_WORDS
    pos = ctypes.c_int.from_address(addr + size)
    memmove, urandom = ctypes.memmove, os.urandom

    def refill():
        memmove(addr, urandom(size), size)
        pos.value = MT_WORDS
    return refill


def _reseeder(g):
    """A function of no arguments that gives generator g a fresh state from the kernel's
    entropy. Prepared in the zygote, where anything it needs is looked up once."""
    if isinstance(g, random.Random):
        return lambda: g.seed(os.urandom(32))
    legacy = not hasattr(g, "bit_generator")  # numpy's RandomState, else its Generator
    bg = g._bit_generator if legacy else g.bit_generator
    if legacy:
        # A normal deviate drawn in the zygote would be the first one of every cell.
        st = g.get_state(legacy=False)
        st["has_gauss"], st["gauss"] = 0, 0.0
        g.set_state(st)
    if isinstance(bg, sys.modules["numpy.random"].MT19937):
        return _mt_refill(bg)
    return lambda: setattr(bg, "state", type(bg)(int.from_bytes(os.urandom(32), "little")).state)


def find_generators():
    """What reseeds the pseudo-random generators that every cell would otherwise inherit in
    one state, found once in the zygote: module-level instances of random.Random (a
    profile's; random's own is reseeded by CPython at fork), and of numpy's RandomState (its
    legacy global one, np.random.rand's) and Generator. A generator that no module holds at
    its top level is not found (docs/SECURITY.md). Each is reseeded here once, so that one
    that cannot be is known now, not in every cell."""
    kinds = [random.Random]
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        kinds += [np_random.RandomState, np_random.Generator]
    kinds = tuple(kinds)
    found, seen = [], set()
    for name, mod in list(sys.modules.items()):
        try:
            values = list(vars(mod).values())
        except TypeError:
            continue
        for v in values:
            if not isinstance(v, kinds) or isinstance(v, random.SystemRandom) or id(v) in seen \
                    or v is random._inst:
                continue
            seen.add(id(v))
            try:
                fn = _reseeder(v)
                fn()
            except Exception as exc:
                sys.stderr.write("zygote: cannot reseed a %s of %s (%s): its draws repeat in "
                                 "every cell\n" % (type(v).__name__, name, exc))
                continue
            found.append(fn)
    return found


def reseed(reseeders):
    """In a cell, after fork: no cell can predict another's draws (another tenant's cell
    included)."""
    for fn in reseeders:
        fn()


# signal.signal() would turn the old handler (a function) into a Handlers enum, fail, and
# build the exception it then catches: ~60 copied pages in every cell. _signal's does not.
_SIGCHLD, _SIG_DFL = int(signal.SIGCHLD), int(signal.SIG_DFL)


def load_cell_lib(path=CELL_LIB):
    """libsbxcell with its signatures declared. PyDLL: the calls keep the GIL, which matters
    around fork."""
    lib = ctypes.PyDLL(path)
    lib.sbx_cell_enter.argtypes = [
        ctypes.c_uint64, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64,
        ctypes.POINTER(ctypes.c_int),
    ]
    lib.sbx_cell_postfork.argtypes = [ctypes.c_int]
    lib.sbx_netns_create.argtypes = [ctypes.c_int]
    lib.sbx_netns_egress.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.sbx_step_name.argtypes = [ctypes.c_int]
    lib.sbx_step_name.restype = ctypes.c_char_p
    return lib


def step_name(lib, step):
    """A confinement step's name, from the library's step table (src/jail/confine.h): the
    runtime keeps no list of its own, so the names cannot drift from the steps."""
    name = lib.sbx_step_name(step) if 0 <= step < lib.sbx_step_count() else None
    return name.decode() if name else "?"


def setup_failure(lib, step, err, proto_fd):
    """The error a cell whose sbx_cell_enter() failed at step (with errno err) reports, and the
    fd it goes to: fd 3 once the step that places the file descriptors has run, before that
    the proto fd the cell was handed."""
    name = step_name(lib, step)
    fd = proto.FD if step > lib.sbx_step_fds() else proto_fd
    msg = errors.error("INTERNAL", "cell setup failed at %s: %s" % (name, os.strerror(err)),
                       {"step": name})
    return msg, fd


class Zygote:
    def __init__(self):
        self.ctl = socket.socket(fileno=proto.FD)
        self.tokens = {}
        config, fds = self.recv()
        if config.get("op") != "config":
            raise SystemExit("zygote: expected a config message first")
        self.tmp_bytes = int(config["tmpBytes"])
        self.nofile = int(config["nofile"])
        self.nproc = int(config["nproc"])
        self.fsize = int(config["fsize"])
        self.filter = b""
        for fd in fds:
            self.filter = os.pread(fd, 1 << 20, 0)
            os.close(fd)
        self.filter_buf = ctypes.create_string_buffer(self.filter, len(self.filter))
        self.lib = load_cell_lib()
        self.pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.netns_self = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        # Network namespaces reused one cell at a time (see sbx_netns_create): free ones,
        # and the one each live cell is using.
        self.netns_free = []
        self.netns_of = {}
        self.netns_max = int(config.get("netnsMax", 256))
        self.netns_count = 0
        self.egress_port = int(config.get("egressPort", 0))
        for name in config.get("preimport", ()):
            try:
                __import__(name)
            except ImportError as exc:
                sys.stderr.write("zygote: cannot preimport %s: %s\n" % (name, exc))
        for name in ("sandboxd_runtime.executor", "sandboxd_runtime.jit"):  # the job modules
            __import__(name)
        # A profile's own trusted code (e.g. draw one figure): whatever it loads or caches
        # (fonts, renderers, lazily imported submodules) every cell inherits ready, and each
        # cell runs it once more while it waits in the pool (worker.warm_up).
        self.warmup = None
        if config.get("warmup"):
            try:
                self.warmup = compile(config["warmup"], "<profile warm-up>", "exec",
                                      dont_inherit=True)
                exec(self.warmup, {"__name__": "__warmup__"})
            except Exception as exc:
                self.warmup = None
                sys.stderr.write("zygote: the profile's warm-up failed: %s: %s\n"
                                 % (type(exc).__name__, exc))
        self.generators = find_generators()
        # A pool for one kind of job: its cells do that kind's set-up while they wait.
        self.prepare = None
        if config.get("prepare") == "session":
            from sandboxd_runtime import session

            self.prepare = session.prepare

    def recv(self):
        msg, anc, _flags, _addr = self.ctl.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
        if not msg:
            raise EOFError
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(data[: len(data) - (len(data) % a.itemsize)])
                fds.extend(a)
        return json.loads(msg), fds

    def send(self, msg, fds=()):
        data = json.dumps(msg).encode()
        if fds:
            self.ctl.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            self.ctl.send(data)

    def fork(self, token, fds, warm):
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            self.send({"op": "fork_failed", "token": token, "error": "expected 3 fds"})
            return
        listener = -1
        if self.egress_port:
            netns, listener = self.egress_netns()
            r = netns if netns < 0 else 0
        else:
            netns = self.take_netns()
            r = 0
        if r == 0:
            r = self.lib.sbx_cell_prefork()
        if r < 0:
            for fd in fds:
                os.close(fd)
            self.drop_netns(netns, listener)
            self.send({"op": "fork_failed", "token": token, "error": os.strerror(-r)})
            return
        pid = os.fork()
        if pid == 0:
            self.cell(fds, netns, warm)  # never returns
        r = self.lib.sbx_cell_postfork(self.pidns)
        for fd in fds:
            os.close(fd)
        if r < 0:
            # Without its own pid namespace back the zygote cannot fork safely again.
            sys.stderr.write("zygote: setns back to own pid namespace failed: %s\n" % os.strerror(-r))
            os._exit(3)
        self.tokens[pid] = token
        if listener >= 0:
            os.close(netns)  # the cell's alone: it holds it from here on
        elif netns >= 0:
            self.netns_of[pid] = netns
        pidfd = os.pidfd_open(pid)
        try:
            self.send({"op": "forked", "token": token, "pid": pid},
                      [pidfd] if listener < 0 else [pidfd, listener])
        finally:
            os.close(pidfd)
            if listener >= 0:
                os.close(listener)  # sandboxd's now; the zygote keeps no socket to accept on

    def egress_netns(self):
        """(netns fd, listener fd) of a network pool's cell, or (-errno, -1): a namespace of its
        own, never reused (its loopback is up, and the proxy's listener is in it)."""
        listener = ctypes.c_int(-1)
        fd = self.lib.sbx_netns_egress(self.netns_self, self.egress_port, ctypes.byref(listener))
        return (fd, listener.value) if fd >= 0 else (fd, -1)

    def drop_netns(self, netns, listener):
        if listener >= 0:
            os.close(listener)
            os.close(netns)
        else:
            self.give_netns(netns)

    def take_netns(self):
        if self.netns_free:
            return self.netns_free.pop()
        if self.netns_count >= self.netns_max:
            return -1  # the cell makes a network namespace of its own
        fd = self.lib.sbx_netns_create(self.netns_self)
        if fd < 0:
            sys.stderr.write("zygote: cannot create a network namespace: %s\n" % os.strerror(-fd))
            return -1
        self.netns_count += 1
        return fd

    def give_netns(self, fd):
        if fd >= 0:
            self.netns_free.append(fd)

    def cell(self, fds, netns, warm):
        """In the forked child: confine, then serve one job. Never returns."""
        try:
            signal.set_wakeup_fd(-1)
            _signal.signal(_SIGCHLD, _SIG_DFL)
            step = ctypes.c_int(-1)
            proto_fd, out_fd, err_fd = fds
            r = self.lib.sbx_cell_enter(
                self.tmp_bytes, proto_fd, out_fd, err_fd, netns,
                ctypes.cast(self.filter_buf, ctypes.c_void_p), len(self.filter),
                self.nofile, self.nproc, self.fsize, ctypes.byref(step),
            )
            if r != 0:
                proto.write(*setup_failure(self.lib, step.value, -r, proto_fd))
                os._exit(127)
            reseed(self.generators)
            worker.serve_one(warm, self.warmup if warm else None, self.prepare)
        finally:
            os._exit(126)

    def reap(self):
        while True:
            try:
                pid, status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            token = self.tokens.pop(pid, None)
            # The cell was init of its pid namespace: by the time it is reaped every process
            # of it is gone, and so is every socket in its network namespace.
            self.give_netns(self.netns_of.pop(pid, -1))
            if token is None:
                continue
            cpu = int((ru.ru_utime + ru.ru_stime) * 1e6)
            self.send({"op": "exit", "token": token, "status": status, "cpuUs": cpu,
                       "maxRssKb": ru.ru_maxrss, "minFlt": ru.ru_minflt})

    def serve(self):
        rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wfd)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        sel = selectors.DefaultSelector()
        sel.register(self.ctl, selectors.EVENT_READ, "ctl")
        sel.register(rfd, selectors.EVENT_READ, "sig")
        gc.collect()
        gc.freeze()  # forked cells must not copy pages just because the GC touched them
        self.send({"op": "ready", "pid": os.getpid()})
        while True:
            for key, _ in sel.select():
                if key.data == "sig":
                    try:
                        os.read(rfd, 4096)
                    except BlockingIOError:
                        pass
                    self.reap()
                    continue
                try:
                    msg, fds = self.recv()
                except (EOFError, ConnectionResetError):
                    os._exit(0)
                if msg.get("op") == "fork":
                    self.fork(int(msg["token"]), fds, bool(msg.get("warm", True)))
                else:
                    for fd in fds:
                        os.close(fd)
            self.reap()


def serve(args):
    Zygote().serve()
