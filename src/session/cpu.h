// SPDX-License-Identifier: MIT
/*
 * cpu — the rule for what a session's execution leaves running. Between
 * executions a session may only finish up: when an execution returns,
 *   - its subprocesses are stopped (SIGSTOP) until the next execution,
 *   - the interpreter may start no thread or process (its soft RLIMIT_NPROC
 *     is lowered to 0, which every task count exceeds),
 *   - the interpreter's threads may use `budget` of CPU time: the kernel
 *     measures it on the process's CPU clock and a POSIX CPU-time timer
 *     signals sandboxd (the watchdog thread) the moment it is spent; the
 *     interpreter is then stopped (SIGSTOP) too, until the next execution.
 * The next execution undoes all three. A stopped process is not scheduled,
 * so an idle session past its budget uses no CPU. Everything is done from the
 * host on the session's processes (pidfds, prlimit, timer_create on another
 * process's clock), which needs no privilege and no cgroup: it works as root,
 * rootless, on cgroup v1 and v2.
 *
 * Never trusts the sandbox: processes are found through /proc and checked to
 * be in the session's pid namespace before they are signalled.
 */
#ifndef SANDBOXD_SESSION_CPU_H
#define SANDBOXD_SESSION_CPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* The thread that receives the budget timers' signals and calls fn(ctx, serial) for each. */
struct cpuwatch;
typedef void (*cpuwatch_fn)(void *ctx, uint64_t serial);
int cpuwatch_new(cpuwatch_fn fn, void *ctx, struct cpuwatch **ret);
/* Joins the thread; every session_cpu of it must be done first. NULL-safe. */
void cpuwatch_free(struct cpuwatch *w);

struct session_cpu {
    pid_t pid;       /* the interpreter, init of the session's pid namespace */
    int pidfd;       /* its pidfd (borrowed from the cell) */
    clockid_t clock; /* its process CPU clock */
    timer_t timer;
    bool have_timer;
    dev_t ns_dev; /* the session's pid namespace */
    ino_t ns_ino;
    uint64_t nproc;          /* its soft RLIMIT_NPROC while executing */
    uint64_t nproc_hard;     /* its hard RLIMIT_NPROC, never changed */
    size_t stopped_procs;    /* subprocesses stopped at the last quiescence */
    int stat_fd;             /* /proc/PID/stat of the interpreter */
    int children_fd;         /* /proc/PID/task/PID/children */
    uint64_t descendants_ns; /* CPU time of the live subprocesses at the last walk */
    uint64_t armed_at;       /* the interpreter's CPU time when the budget was armed, ns */
    uint64_t budget_ns;      /* the budget armed */
};

/* Prepare the rule for the session whose interpreter is pid, with pidfd (borrowed; serial names
 * it to the watchdog). -errno when the kernel refuses (logged by the caller). */
int session_cpu_init(struct session_cpu *c, struct cpuwatch *w, pid_t pid, int pidfd,
                     uint64_t serial, uint64_t nproc);
void session_cpu_done(struct session_cpu *c);
/* An execution starts: disarm the budget, allow new threads and processes, continue the
 * subprocesses, and the interpreter when it was stopped. */
void session_cpu_resume(struct session_cpu *c, bool stopped);
/* An execution returned (the interpreter lives): stop the subprocesses, allow no new thread or
 * process. */
void session_cpu_quiesce(struct session_cpu *c);
/* Then give the interpreter's threads budget_ns of CPU (0: stop the interpreter at once).
 * Serialise with session_cpu_expired() (the session table's lock). */
void session_cpu_arm(struct session_cpu *c, uint64_t budget_ns);
/* The watchdog's signal for this session: stop the interpreter if it really spent the budget
 * armed last. True when it was stopped. */
bool session_cpu_expired(struct session_cpu *c);
/* CPU time used by all the session's processes so far, ns: the interpreter's process clock,
 * the children it reaped, and its live subprocesses — counted again with walk (call it right
 * after session_cpu_quiesce()), else as of then (right for an idle session: they are
 * stopped). */
uint64_t session_cpu_used(struct session_cpu *c, bool walk);

#endif
