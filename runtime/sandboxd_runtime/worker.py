# SPDX-License-Identifier: MIT
"""One job per process: announce readiness on fd 3, receive a job, run it,
answer, exit.

Used both by a cold jailed interpreter and by a cell forked from the
zygote. The process exits with os._exit() right after answering, so no
atexit hook, finaliser or non-daemon thread of user code can delay or alter
the answer.
"""
import gc
import os
import resource
import sys

from sandboxd_runtime import artifacts, errors, network, proto


def apply_limits(limits):
    """Per-job limits the process sets on itself before any user code runs."""
    memory = limits.get("memoryBytes")
    if memory:
        # The address-space limit counts what is already mapped (the
        # interpreter and its libraries) plus what the job may add.
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        cap = mapped + int(memory)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    output = limits.get("outputBytes")
    if output:
        errors.LIMIT = int(output)
    cpu = limits.get("cpuSeconds")
    if cpu:
        cpu = int(cpu)
        # soft: SIGXCPU; hard one second later: SIGKILL if SIGXCPU was caught
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def flush_stdio():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # user code may have replaced or closed them
            pass


def usage():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return {"cpuUs": int(cpu * 1e6), "maxRssKb": max(me.ru_maxrss, kids.ru_maxrss)}


def handle(job):
    kind = job.get("type")
    try:
        apply_limits(job.get("limits") or {})
    except (OSError, ValueError) as exc:
        return errors.error("INTERNAL", "cannot apply limits: %s" % exc)
    network.apply(job.get("network"))
    if kind in ("jit", "executor"):
        return run_code_job(job)
    if kind == "template":
        from sandboxd_runtime import template

        return template.run(job)
    if kind == "session":
        from sandboxd_runtime import session

        session.serve(job)  # never returns: the process is a session from now on
    return errors.error("INTERNAL", "unknown job type %r" % (kind,))


def run_code_job(job):
    """JIT and EXECUTOR: the request's files first, then the code, then its artifacts (figures
    left open, files matching "collect"), which are sent as they are found."""
    from sandboxd_runtime import executor, jit

    artifacts.begin(job.get("limits"))
    try:
        artifacts.place_files(job.get("files"))
    except (OSError, ValueError) as exc:
        return errors.from_exception(exc)
    reply = jit.run(job) if job.get("type") == "jit" else executor.run(job)
    reply.update(artifacts.finish(job.get("collect")))
    return reply


def answer(reply):
    """Send the final frame; a value JSON cannot carry becomes INVALID_RESULT."""
    flush_stdio()
    reply["usage"] = usage()
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


def serve_one(warm=True, profile=None):
    os.set_inheritable(proto.FD, False)  # user subprocesses must not hold the channel
    if warm:
        warm_up(profile)
    proto.write({"type": "ready", "pid": os.getpid()})
    job = proto.read()
    try:
        reply = handle(job)
    except MemoryError as exc:
        reply = errors.from_exception(exc)
    except BaseException as exc:  # the runtime itself failed: still answer
        reply = errors.error("INTERNAL", "runtime failure: %r" % (exc,))
    try:
        answer(reply)
    finally:
        os._exit(0)
