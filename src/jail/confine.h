// SPDX-License-Identifier: MIT
/*
 * confine — the one confinement sequence of a cell, as data (like the mount
 * plan): every step between "a new process" and "may run untrusted code",
 * named once, in order, with what each of the two paths does there or why it
 * legitimately does not:
 *   cold: jail_child() (jail/spawn.c), cloned by sandboxd, ends in execve;
 *   warm: sbx_cell_enter() (zygote/libsbxcell.c), forked by the pool's
 *         zygote (itself started on the cold path), stays in its interpreter.
 * Each path walks confine_steps[] and runs the rows its column marks
 * CONFINE_RUN, through a switch over enum confine_step without a default
 * (-Wswitch under -Werror: a step a path does not handle does not build);
 * tests/unit/test_confine.c checks that every row states an action or a
 * reason for both paths. A failure travels as the step's number and is named
 * from here, by sandboxd (cold) and by the runtime (warm, through
 * libsbxcell's sbx_step_name()).
 *
 * Also here, once for both paths: the namespaces, the read-only corners of
 * /proc, the cell's writable mounts, its rlimits, uid and hostname.
 * Constant data and async-signal-safe code only: both children read it.
 */
#ifndef SANDBOXD_JAIL_CONFINE_H
#define SANDBOXD_JAIL_CONFINE_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>

#include "jail/steps.h"

/* One row per step, in the order both paths run them: X(ID, "name", cold, warm), where cold
 * and warm are each CONFINE_RUN("what this path does") or CONFINE_SKIP("why it does not").
 * Adding a jail layer: add its row here, then its case to jail_child_step() (spawn.c) and
 * cell_step() (libsbxcell.c); see docs/internals/jail.md. */
#define CONFINE_STEPS(X)                                                                           \
    X(WAIT_PARENT, "wait-for-parent",                                                              \
      CONFINE_RUN("wait until the parent has written the uid/gid maps and attached the cgroup"),   \
      CONFINE_SKIP("no parent to wait for: the cell maps its own ids (step 'uid_map'), and the "   \
                   "host attaches its cgroup before it marks the cell ready"))                     \
    X(SETGROUPS, "setgroups",                                                                      \
      CONFINE_RUN("as root, setgroups(0): the supplementary groups still carry host gid 0 "        \
                  "(rootless, the parent denied setgroups before writing gid_map)"),               \
      CONFINE_SKIP("the zygote dropped its groups on its own cold path, and the cell's user "      \
                   "namespace denies setgroups (step 'deny setgroups')"))                          \
    X(SETRESUID, "setresuid/setresgid",                                                            \
      CONFINE_RUN("become the mapped id (raw syscalls: glibc's setxid broadcast would wait for "   \
                  "threads this child does not have), SECBIT_NO_SETUID_FIXUP first"),              \
      CONFINE_SKIP("the cell keeps the zygote's id 0, which its own user namespace maps to "       \
                   "CONFINE_SANDBOX_UID (step 'uid_map')"))                                        \
    X(NAMESPACES, "namespaces",                                                                    \
      CONFINE_RUN("unshare the CONFINE_NS_COLD_LATE namespaces (the cgroup one, now rooted at "    \
                  "the cell's cgroup); clone() made the others"),                                  \
      CONFINE_RUN("setns into the network namespace the zygote handed over (a reused one, or "     \
                  "for a network pool's cell its own, lo up, sbx_netns_egress), or a new one; "    \
                  "unshare the rest but CONFINE_NS_WARM_PREFORK (sbx_cell_prefork) and "           \
                  "CONFINE_NS_WARM_LATE"))                                                         \
    X(MOUNT_PRIVATE, "mount(/, MS_REC|MS_PRIVATE)",                                                \
      CONFINE_RUN("make every mount private: nothing propagates between host and jail"),           \
      CONFINE_SKIP("inherited: the zygote's mounts are private (its cold path), and so is the "    \
                   "cell's copy of them"))                                                         \
    X(OPEN_SOURCES, "open bind sources",                                                           \
      CONFINE_RUN("rootless: open every bind source O_PATH, as sandboxd's user, before the "       \
                  "staging tmpfs hides them"),                                                     \
      CONFINE_SKIP("inherited from the zygote's jail: its root is built"))                         \
    X(ROOT_TMPFS, "mount(tmpfs, new root)",                                                        \
      CONFINE_RUN("a tmpfs over /tmp, seen by this mount namespace only, as the staging root"),    \
      CONFINE_SKIP("inherited from the zygote's jail: its root is built"))                         \
    X(CHDIR_NEWROOT, "chdir(new root)", CONFINE_RUN("targets of the plan are relative to it"),     \
      CONFINE_SKIP("inherited from the zygote's jail: its root is built"))                         \
    X(MOUNT_OPS, "filesystem",                                                                     \
      CONFINE_RUN("apply the mount plan (jail/mount.h), /tmp, /dev/shm and /proc included"),       \
      CONFINE_SKIP("inherited from the zygote's jail (the cell copies its mount namespace); the "  \
                   "writable mounts are replaced by the next three steps"))                        \
    X(MOUNT_TMP, "mount /tmp", CONFINE_SKIP("in the mount plan (step 'filesystem')"),              \
      CONFINE_RUN("a fresh tmpfs (CONFINE_TMP_FLAGS): what one cell writes, the next never sees")) \
    X(MOUNT_SHM, "mount /dev/shm", CONFINE_SKIP("in the mount plan (step 'filesystem')"),          \
      CONFINE_RUN("a fresh tmpfs (CONFINE_SHM_FLAGS)"))                                            \
    X(MOUNT_PROC, "mount /proc", CONFINE_SKIP("in the mount plan (step 'filesystem')"),            \
      CONFINE_RUN("a proc of the cell's own pid namespace (CONFINE_PROC_FLAGS)"))                  \
    X(PROC_READONLY, "read-only /proc",                                                            \
      CONFINE_RUN("sandbox role: confine_proc_readonly[] (the plan_sandbox plan); not the "        \
                  "zygote, whose /proc must stay fully visible for its cells to mount theirs"),    \
      CONFINE_RUN("confine_proc_readonly[] over the cell's /proc"))                                \
    X(PIVOT_ROOT, "pivot_root", CONFINE_RUN("pivot_root(\".\", \".\") into the staging root"),     \
      CONFINE_SKIP("inherited from the zygote's jail: its root is built"))                         \
    X(DETACH_OLD_ROOT, "umount2(old root, MNT_DETACH)",                                            \
      CONFINE_RUN("nothing of the host tree stays reachable"),                                     \
      CONFINE_SKIP("inherited from the zygote's jail: its root is built"))                         \
    X(CHDIR_ROOT, "chdir(/)", CONFINE_RUN("leave the detached old root"),                          \
      CONFINE_SKIP("inherited from the zygote's jail: its root is built"))                         \
    X(REMOUNT_ROOT_RO, "mount(/, MS_REMOUNT|MS_RDONLY)",                                           \
      CONFINE_RUN("the root read-only, nosuid, nodev"),                                            \
      CONFINE_SKIP("inherited: the zygote's root is read-only"))                                   \
    X(HOSTNAME, "sethostname", CONFINE_RUN("CONFINE_HOSTNAME in the new uts namespace"),           \
      CONFINE_RUN("CONFINE_HOSTNAME in the new uts namespace"))                                    \
    X(USERNS, "unshare(user)",                                                                     \
      CONFINE_SKIP("clone() made the user namespace and the parent mapped it before step "         \
                   "'wait-for-parent' ended"),                                                     \
      CONFINE_RUN("a user namespace of the cell's own, after the mounts (they need the zygote's "  \
                  "capabilities): it owns none of the cell's other namespaces"))                   \
    X(DENY_SETGROUPS, "deny setgroups",                                                            \
      CONFINE_SKIP("the parent writes it (rootless); as root, step 'setgroups' drops the groups"), \
      CONFINE_RUN("\"deny\" to /proc/self/setgroups, before gid_map"))                             \
    X(UID_MAP, "uid_map",                                                                          \
      CONFINE_SKIP("written by the parent (jail_write_maps) before step 'wait-for-parent' ends"),  \
      CONFINE_RUN("CONFINE_SANDBOX_UID inside is the zygote's uid 0"))                             \
    X(GID_MAP, "gid_map",                                                                          \
      CONFINE_SKIP("written by the parent (jail_write_maps) before step 'wait-for-parent' ends"),  \
      CONFINE_RUN("CONFINE_SANDBOX_UID inside is the zygote's gid 0"))                             \
    X(CHDIR_TMP, "chdir(/tmp)", CONFINE_RUN("the working directory"),                              \
      CONFINE_RUN("the working directory"))                                                        \
    X(EGRESS, "loopback up and egress listener",                                                   \
      CONFINE_RUN("sandbox with a network policy: bring lo up, listen on 127.0.0.1 and hand the "  \
                  "listener to the parent (still holding CAP_NET_ADMIN)"),                         \
      CONFINE_SKIP("made by the zygote before the fork, which holds CAP_NET_ADMIN in the user "    \
                   "namespace owning the cell's network namespace (sbx_netns_egress: lo up, the "  \
                   "listener sent to sandboxd with 'forked'); the cell joins that namespace in "   \
                   "step 'namespaces' and drops its copy of the listener in step 'file "           \
                   "descriptors'. A cell of any other pool has no network"))                       \
    X(REMAP_FDS, "file descriptors",                                                               \
      CONFINE_RUN("stdin, stdout, stderr, proto at 0-3, the error pipe next (close-on-exec), "     \
                  "close the rest"),                                                               \
      CONFINE_RUN("/dev/null, stdout, stderr, proto (close-on-exec) at 0-3, close the rest"))      \
    X(RLIMITS, "setrlimit", CONFINE_RUN("confine_rlimits(), RLIMIT_NPROC for the sandbox role"),   \
      CONFINE_RUN("confine_rlimits()"))                                                            \
    X(DROP_CAPS, "drop capabilities",                                                              \
      CONFINE_RUN("sandbox role: every set, bounding and ambient, securebits locked (the zygote "  \
                  "keeps its capabilities, in its own user namespace, to confine its cells)"),     \
      CONFINE_RUN("every set, bounding and ambient, securebits locked"))                           \
    X(NO_NEW_PRIVS, "prctl(PR_SET_NO_NEW_PRIVS)", CONFINE_RUN("no_new_privs"),                     \
      CONFINE_RUN("no_new_privs"))                                                                 \
    X(SIGNALS, "reset signal mask and handlers",                                                   \
      CONFINE_RUN("default dispositions, empty mask: sandboxd's would survive execve"),            \
      CONFINE_SKIP("no execve: the cell keeps the zygote's interpreter, reset by this step of "    \
                   "its cold path; zygote.py resets SIGCHLD and the wakeup fd before the call"))   \
    X(SECCOMP, "seccomp",                                                                          \
      CONFINE_RUN("sandbox role: the filter (its TCP variant with egress), last before execve"),   \
      CONFINE_RUN("the filter handed to the zygote at start-up (its TCP variant for a network "    \
                  "pool's zygote, the default one for every other); last"))                        \
    X(EXECVE, "execve", CONFINE_RUN("the interpreter, with the jail's environment"),               \
      CONFINE_SKIP("the cell goes on in the zygote's interpreter, runtime already imported"))

#define CONFINE_RUN(what)                                                                          \
    {                                                                                              \
        true, what                                                                                 \
    }
#define CONFINE_SKIP(why)                                                                          \
    {                                                                                              \
        false, why                                                                                 \
    }
#define CONFINE_ENUM_(id, name, cold, warm) CONFINE_STEP_##id,

enum confine_step { CONFINE_STEPS(CONFINE_ENUM_) CONFINE_STEP_COUNT };

enum confine_path { CONFINE_COLD, CONFINE_WARM, CONFINE_PATHS };

struct confine_how {
    bool runs;        /* this path runs the step */
    const char *text; /* what it does there, or why it does not run it */
};

struct confine_step_info {
    const char *name; /* in failure reports and logs: "jail: step 'NAME' failed" */
    struct confine_how on[CONFINE_PATHS];
};

extern const struct confine_step_info confine_steps[CONFINE_STEP_COUNT];

/* Does path run step? (false for numbers out of range) */
bool confine_runs(enum confine_path path, int step);
/* The step's name, or "?" for a number out of range (a child that reported garbage). */
const char *confine_step_name(int step);

/* ---- the security lists of both paths ------------------------------------------------------ */

#define CONFINE_SANDBOX_UID 65534 /* a cell's uid and gid inside its user namespace: "nobody" */
#define CONFINE_HOSTNAME    "sandbox"

/* Every namespace of a cell. The cold path gets all but CONFINE_NS_COLD_LATE from clone()
 * and unshares those in step 'namespaces'. The warm path gets CONFINE_NS_WARM_PREFORK from
 * sbx_cell_prefork() (a new pid namespace applies to children only), CONFINE_NS_WARM_LATE in
 * step 'unshare(user)' and the rest in step 'namespaces'. */
#define CONFINE_NAMESPACE_LIST(X)                                                                  \
    X(CLONE_NEWUSER, "user")                                                                       \
    X(CLONE_NEWPID, "pid")                                                                         \
    X(CLONE_NEWNS, "mount")                                                                        \
    X(CLONE_NEWNET, "net")                                                                         \
    X(CLONE_NEWIPC, "ipc")                                                                         \
    X(CLONE_NEWUTS, "uts")                                                                         \
    X(CLONE_NEWCGROUP, "cgroup")
#define CONFINE_NS_FLAG_(flag, name) | (flag)
#define CONFINE_NAMESPACES           (0 CONFINE_NAMESPACE_LIST(CONFINE_NS_FLAG_))
#define CONFINE_NS_COLD_LATE         CLONE_NEWCGROUP
#define CONFINE_NS_WARM_PREFORK      CLONE_NEWPID
#define CONFINE_NS_WARM_LATE         CLONE_NEWUSER

/* The parts of /proc a cell sees read-only (those the host has): on the cold path a plan of
 * remounts for the sandbox role (jail.c), on the warm path over each cell's own /proc. */
extern const char *const confine_proc_readonly[];
extern const size_t confine_proc_readonly_n;
#define CONFINE_PROC_RO_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* The cell's writable mounts: in the mount plan (cold), fresh for every cell (warm). The
 * tmpfs options are a printf format of the size in bytes (unsigned long long). */
#define CONFINE_TMPFS_OPTIONS "mode=1777,size=%llu"
#define CONFINE_TMP_FLAGS     (MS_NOSUID | MS_NODEV)
#define CONFINE_SHM_FLAGS     (MS_NOSUID | MS_NODEV | MS_NOEXEC)
#define CONFINE_PROC_FLAGS    (MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* A cell's rlimits; 0 leaves a limit as inherited. */
struct confine_limits {
    uint64_t nofile; /* open files */
    uint64_t nproc;  /* processes and threads of the cell's uid */
    uint64_t fsize;  /* largest file written */
    uint64_t cpu_s;  /* RLIMIT_CPU */
};
#define CONFINE_RLIMITS_MAX 5
/* RLIMIT_CORE 0 (always: no core dump of a sandbox lands on the host), then each limit of l
 * that is not 0, into rl; returns how many. Async-signal-safe. */
size_t confine_rlimits(const struct confine_limits *l, struct steps_rlimit rl[CONFINE_RLIMITS_MAX]);

#endif
