# SPDX-License-Identifier: MIT
"""One job per process: announce readiness on fd 3, receive a job, run it,
answer, exit.

Used both by a cold jailed interpreter and by a cell forked from the
zygote. The process exits with os._exit() right after answering, so no
atexit hook, finaliser or non-daemon thread of user code can delay or alter
the answer. A JIT job marked "reuse" (warm reuse, --warm-reuse) is the
exception: after a clean result the process waits for the next job of the
same app and script, whose module stays imported (jit.py); after anything
else it exits as always.
"""
import gc
import os
import resource
import sys

from sandboxd_runtime import artifacts, errors, network, proto


# The address space the interpreter had mapped before its first job: a reused interpreter's
# limit stays "what it started with + the job's memory", not "what it grew to + the memory".
_mapped_base = None


def mapped_now():
    """The bytes of address space mapped now. os-level I/O: open() would build three file
    objects and an encoder, copying pages in every cell for one number."""
    fd = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return int(os.read(fd, 256).split()[0]) * resource.getpagesize()
    finally:
        os.close(fd)


def apply_limits(limits, reuse=False):
    """Per-job limits the process sets on itself before any user code runs."""
    global _mapped_base
    memory = limits.get("memoryBytes")
    if memory:
        # The address-space limit counts what is already mapped (the
        # interpreter and its libraries) plus what the job may add.
        if _mapped_base is None:
            _mapped_base = mapped_now()
        cap = _mapped_base + int(memory)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    output = limits.get("outputBytes")
    if output:
        errors.LIMIT = int(output)
    cpu = limits.get("cpuSeconds")
    if cpu:
        cpu = int(cpu)
        if reuse:
            # RLIMIT_CPU counts the process's whole life and a hard limit cannot be raised
            # again: a reused interpreter gets the job's seconds on top of what it used, as a
            # soft limit (SIGXCPU, which ends it); its wall-clock deadline still kills it.
            me = resource.getrusage(resource.RUSAGE_SELF)
            soft = int(me.ru_utime + me.ru_stime) + cpu + 1
            hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
            if hard != resource.RLIM_INFINITY and soft > hard:
                soft = hard
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        else:
            # soft: SIGXCPU; hard one second later: SIGKILL if SIGXCPU was caught
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def flush_stdio():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # user code may have replaced or closed them
            pass


def faults():
    """Minor page faults of this process so far (its children's are not counted)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def usage(faults_before=None):
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    out = {"cpuUs": int(cpu * 1e6), "maxRssKb": max(me.ru_maxrss, kids.ru_maxrss)}
    if faults_before is not None:
        out["minFlt"] = me.ru_minflt - faults_before
    return out


def preload():
    """Import what the jobs import where they first need it (traceback and linecache for an
    error, base64, glob, json and mimetypes for artifacts and files, re for rare results): a
    zygote calls this once, so that its cells inherit them instead of importing them per
    execution. A one-shot interpreter, which runs one job that usually needs none of them, does
    not."""
    for name in ("base64", "glob", "json", "linecache", "mimetypes", "traceback"):
        __import__(name)
    proto.encode(1e300)  # compiles the rare results' expressions


def handle(job):
    kind = job.get("type")
    try:
        apply_limits(job.get("limits") or {}, reuse=kind == "jit" and job.get("reuse") is True)
    except (OSError, ValueError) as exc:
        return errors.error("INTERNAL", "cannot apply limits: %s" % exc)
    network.apply(job.get("network"))
    if kind in ("jit", "executor"):
        return run_code_job(job)
    if kind == "template":
        from sandboxd_runtime import template

        return template.run(job)
    if kind == "tool_docs":
        from sandboxd_runtime import stubs

        return stubs.render_job(job)
    if kind == "session":
        from sandboxd_runtime import session

        session.serve(job)  # never returns: the process is a session from now on
    if kind == "e2b":
        from sandboxd_runtime import e2b

        e2b.serve(job)  # never returns: an agent session's interpreter (session.h)
    return errors.error("INTERNAL", "unknown job type %r" % (kind,))


def run_code_job(job):
    """JIT and EXECUTOR: the request's files first, then the code, then its artifacts (figures
    left open, files matching "collect"), which are sent as they are found."""
    artifacts.begin(job.get("limits"))
    try:
        artifacts.place_files(job.get("files"))
    except (OSError, ValueError) as exc:
        return errors.from_exception(exc)
    # Only the job's own module: the executor's imports ast, which a JIT job never needs.
    if job.get("type") == "jit":
        from sandboxd_runtime import jit

        reply = jit.run(job)
    else:
        from sandboxd_runtime import executor

        reply = executor.run(job)
    reply.update(artifacts.finish(job.get("collect")))
    return reply


def answer(reply, faults_before=None):
    """Send the final frame; a value JSON cannot carry becomes INVALID_RESULT."""
    flush_stdio()
    reply["usage"] = usage(faults_before)
    try:
        body = proto.encode(reply)
    except (TypeError, ValueError, RecursionError, UnicodeError) as exc:
        value = reply.get("data")
        if reply.get("resultType") == "executor":
            value = (value or {}).get("result")
        reason = str(exc)
        try:
            proto.check_integers(value)  # names the integer by its place in the value
        except ValueError as big:
            reason = str(big)
        fallback = errors.invalid_result(value, reason)
        fallback["usage"] = reply["usage"]
        body = proto.encode(fallback)
    proto.write_bytes(body)


_WARMUP_SOURCE = "ZGVmIHdhcm11cChyZXF1ZXN0LCBjb250ZXh0KToKICAgIHJldHVybiB7Im9rIjogW3JlcXVlc3QsIGNvbnRleHRdfQo="


def warm_up(profile=None):
    """Run a trivial job of our own before announcing readiness, and the profile's warm-up
    (a code object) when there is one.

    A cell is forked from the zygote: the first touch of each shared page
    copies it (about 200 faults for a trivial call, thousands for a chart).
    Doing that now, while the cell waits in the pool, keeps it off the
    request's path. Only trusted code runs here, and everything it leaves
    behind is removed.
    """
    from sandboxd_runtime import jit

    before = set(sys.modules)
    reply = jit.run({"source": _WARMUP_SOURCE, "path": "<warm-up>", "function": "warmup",
                     "requestData": {"a": [1, 2.5, "x", None, True]}, "context": {}})
    proto.encode(reply)
    usage()
    if profile is not None:
        try:
            exec(profile, {"__name__": "__warmup__"})
        except Exception as exc:  # the zygote ran it fine; a cell may not (memory)
            sys.stderr.write("sandboxd: profile warm-up: %s: %s\n" % (type(exc).__name__, exc))
        # What it left (caches of pandas and matplotlib) out of the collector's way, as the
        # zygote's own objects are: a request's collections must not walk them again.
        gc.collect()
        gc.freeze()
    for name in set(sys.modules) - before:
        del sys.modules[name]
    import linecache

    linecache.cache.pop("<warm-up>", None)


def serve_one(warm=True, profile=None, prepare=None):
    """prepare: what a warm cell of a pool for one kind of job does before it says "ready"
    (session.prepare for the sessions' pool)."""
    global _mapped_base
    os.set_inheritable(proto.FD, False)  # user subprocesses must not hold the channel
    if warm:
        warm_up(profile)
        e2b = sys.modules.get("sandboxd_runtime.e2b")
        if e2b is not None:
            # The code-interpreter profile (docs/E2B.md): the first context of the sandbox this
            # interpreter may become, forked and warmed up now rather than on its first request.
            e2b.prefork()
    if prepare is not None:
        prepare()
    if warm or prepare is not None:
        # The address space before the first job, read now rather than on the job's path.
        _mapped_base = mapped_now()
    # The faults so far (fork, confinement, warm-up) go to the pool's statistics.
    proto.write({"type": "ready", "pid": os.getpid(), "minFlt": faults()})
    while True:
        job = proto.read()
        before = faults()
        try:
            reply = handle(job)
        except MemoryError as exc:
            reply = errors.from_exception(exc)
        except BaseException as exc:  # the runtime itself failed: still answer
            reply = errors.error("INTERNAL", "runtime failure: %r" % (exc,))
        # Only a clean result of a reuse job keeps the process (the host retires it otherwise
        # as well): an error may have left it in any state.
        keep = (
            job.get("type") == "jit"
            and job.get("reuse") is True
            and reply.get("type") == "result"
        )
        try:
            answer(reply, before)
        except BaseException:
            os._exit(0)
        if not keep:
            os._exit(0)
