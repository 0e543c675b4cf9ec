// SPDX-License-Identifier: MIT
/*
 * seccomp — see seccomp.h.
 *
 * Design notes:
 * - Default action EPERM, not KILL: CPython probes optional syscalls and
 *   falls back cleanly on an error, and a user gets a PermissionError that
 *   names the operation instead of a dead process.
 * - clone3 answers ENOSYS: its flags live in memory where BPF cannot look,
 *   and glibc falls back to clone(2), whose flags argument we can filter.
 * - Only the native architecture is in the filter; a syscall made through
 *   another ABI (int 0x80, x32) hits the bad-arch action and kills.
 * - Loading a kernel module or a new kernel is never a mistake a program
 *   makes by accident, so those calls kill instead of failing.
 */
#include "jail/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/macros.h"

/* Allowed without conditions. */
static const char *const seccomp_allow[] = {
    /* file I/O */
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "open",
    "openat",
    "openat2",
    "creat",
    "close",
    "close_range",
    "lseek",
    "stat",
    "fstat",
    "lstat",
    "newfstatat",
    "statx",
    "statfs",
    "fstatfs",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "getdents",
    "getdents64",
    "fcntl",
    "flock",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "truncate",
    "ftruncate",
    "fallocate",
    "fadvise64",
    "ioctl",
    "dup",
    "dup2",
    "dup3",
    "pipe",
    "pipe2",
    "sendfile",
    "splice",
    "tee",
    "vmsplice",
    "copy_file_range",
    "chdir",
    "fchdir",
    "getcwd",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "unlink",
    "unlinkat",
    "symlink",
    "symlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "umask",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "memfd_create",
    /* memory */
    "brk",
    "mmap",
    "munmap",
    "mprotect",
    "mremap",
    "madvise",
    "msync",
    "mincore",
    "get_mempolicy",
    /* polling and events */
    "select",
    "pselect6",
    "poll",
    "ppoll",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "eventfd",
    "eventfd2",
    "signalfd",
    "signalfd4",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    /* time */
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "getitimer",
    "setitimer",
    "alarm",
    "pause",
    "times",
    /* signals */
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigpending",
    "rt_sigtimedwait",
    "rt_sigsuspend",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "sigaltstack",
    "kill",
    "tgkill",
    "tkill",
    "restart_syscall",
    /* processes and threads (clone is filtered below) */
    "fork",
    "vfork",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "wait4",
    "waitid",
    "futex",
    "futex_waitv",
    "set_robust_list",
    "get_robust_list",
    "set_tid_address",
    "rseq",
    "membarrier",
    "arch_prctl",
    "pidfd_open",
    "pidfd_send_signal",
    /* identity: without capabilities these can only reshuffle the ids already held */
    "getpid",
    "getppid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getresuid",
    "getresgid",
    "getgroups",
    "getpgrp",
    "getpgid",
    "getsid",
    "setpgid",
    "setsid",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "capget",
    /* system information and scheduling of oneself */
    "uname",
    "sysinfo",
    "getrlimit",
    "setrlimit",
    "prlimit64",
    "getrusage",
    "getpriority",
    "setpriority",
    "sched_yield",
    "sched_getaffinity",
    "sched_setaffinity",
    "sched_getparam",
    "sched_getscheduler",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_rr_get_interval",
    "sched_getattr",
    "getcpu",
    "getrandom",
    "ioprio_get",
    /* sockets: the family is checked on socket/socketpair below */
    "connect",
    "accept",
    "accept4",
    "bind",
    "listen",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "shutdown",
    "getsockname",
    "getpeername",
    "setsockopt",
    "getsockopt",
    /* System V IPC, confined to the sandbox's own IPC namespace */
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
};

struct seccomp_rule_spec {
    const char *name;
    uint32_t action;
};

/* Explicit decisions for the calls an escape would need (the default would deny most of them
 * anyway; listing them documents the choice and lets some kill instead of fail). */
static const struct seccomp_rule_spec seccomp_deny[] = {
    {"ptrace", SCMP_ACT_ERRNO(EPERM)},
    {"process_vm_readv", SCMP_ACT_ERRNO(EPERM)},
    {"process_vm_writev", SCMP_ACT_ERRNO(EPERM)},
    {"mount", SCMP_ACT_ERRNO(EPERM)},
    {"umount2", SCMP_ACT_ERRNO(EPERM)},
    {"pivot_root", SCMP_ACT_ERRNO(EPERM)},
    {"chroot", SCMP_ACT_ERRNO(EPERM)},
    {"open_tree", SCMP_ACT_ERRNO(EPERM)},
    {"move_mount", SCMP_ACT_ERRNO(EPERM)},
    {"fsopen", SCMP_ACT_ERRNO(EPERM)},
    {"fsconfig", SCMP_ACT_ERRNO(EPERM)},
    {"fsmount", SCMP_ACT_ERRNO(EPERM)},
    {"fspick", SCMP_ACT_ERRNO(EPERM)},
    {"mount_setattr", SCMP_ACT_ERRNO(EPERM)},
    {"unshare", SCMP_ACT_ERRNO(EPERM)},
    {"setns", SCMP_ACT_ERRNO(EPERM)},
    {"bpf", SCMP_ACT_ERRNO(EPERM)},
    {"perf_event_open", SCMP_ACT_ERRNO(EPERM)},
    {"keyctl", SCMP_ACT_ERRNO(EPERM)},
    {"add_key", SCMP_ACT_ERRNO(EPERM)},
    {"request_key", SCMP_ACT_ERRNO(EPERM)},
    {"userfaultfd", SCMP_ACT_ERRNO(EPERM)},
    {"io_uring_setup", SCMP_ACT_ERRNO(EPERM)},
    {"io_uring_enter", SCMP_ACT_ERRNO(EPERM)},
    {"io_uring_register", SCMP_ACT_ERRNO(EPERM)},
    {"name_to_handle_at", SCMP_ACT_ERRNO(EPERM)},
    {"open_by_handle_at", SCMP_ACT_ERRNO(EPERM)},
    {"pidfd_getfd", SCMP_ACT_ERRNO(EPERM)},
    {"kcmp", SCMP_ACT_ERRNO(EPERM)},
    {"mknod", SCMP_ACT_ERRNO(EPERM)},
    {"mknodat", SCMP_ACT_ERRNO(EPERM)},
    {"personality", SCMP_ACT_ERRNO(EPERM)},
    {"syslog", SCMP_ACT_ERRNO(EPERM)},
    {"acct", SCMP_ACT_ERRNO(EPERM)},
    {"quotactl", SCMP_ACT_ERRNO(EPERM)},
    {"swapon", SCMP_ACT_ERRNO(EPERM)},
    {"swapoff", SCMP_ACT_ERRNO(EPERM)},
    {"settimeofday", SCMP_ACT_ERRNO(EPERM)},
    {"clock_settime", SCMP_ACT_ERRNO(EPERM)},
    {"clock_adjtime", SCMP_ACT_ERRNO(EPERM)},
    {"adjtimex", SCMP_ACT_ERRNO(EPERM)},
    {"sethostname", SCMP_ACT_ERRNO(EPERM)},
    {"setdomainname", SCMP_ACT_ERRNO(EPERM)},
    {"memfd_secret", SCMP_ACT_ERRNO(EPERM)},
    {"fanotify_init", SCMP_ACT_ERRNO(EPERM)},
    /* inotify would let a sandbox watch what other sandboxes and the host open and change in
     * the read-only binds they share (the interpreter, its libraries). */
    {"inotify_init", SCMP_ACT_ERRNO(EPERM)},
    {"inotify_init1", SCMP_ACT_ERRNO(EPERM)},
    {"inotify_add_watch", SCMP_ACT_ERRNO(EPERM)},
    {"inotify_rm_watch", SCMP_ACT_ERRNO(EPERM)},
    {"move_pages", SCMP_ACT_ERRNO(EPERM)},
    {"migrate_pages", SCMP_ACT_ERRNO(EPERM)},
    {"mbind", SCMP_ACT_ERRNO(EPERM)},
    {"set_mempolicy", SCMP_ACT_ERRNO(EPERM)},
    {"mlock", SCMP_ACT_ERRNO(EPERM)},
    {"mlock2", SCMP_ACT_ERRNO(EPERM)},
    {"mlockall", SCMP_ACT_ERRNO(EPERM)},
    {"seccomp", SCMP_ACT_ERRNO(EPERM)},
    {"iopl", SCMP_ACT_KILL_PROCESS},
    {"ioperm", SCMP_ACT_KILL_PROCESS},
    {"reboot", SCMP_ACT_KILL_PROCESS},
    {"kexec_load", SCMP_ACT_KILL_PROCESS},
    {"kexec_file_load", SCMP_ACT_KILL_PROCESS},
    {"init_module", SCMP_ACT_KILL_PROCESS},
    {"finit_module", SCMP_ACT_KILL_PROCESS},
    {"delete_module", SCMP_ACT_KILL_PROCESS},
};

/* prctl options a CPython program may legitimately use on itself. */
static const int seccomp_prctl_allowed[] = {
    PR_SET_NAME,       PR_GET_NAME,       PR_GET_DUMPABLE,     PR_SET_DUMPABLE, PR_SET_PDEATHSIG,
    PR_GET_PDEATHSIG,  PR_GET_SECCOMP,    PR_GET_NO_NEW_PRIVS, PR_CAPBSET_READ, PR_GET_SECUREBITS,
    PR_GET_TIMERSLACK, PR_SET_TIMERSLACK, PR_SET_VMA,          PR_GET_KEEPCAPS, PR_SET_NO_NEW_PRIVS,
};

#define SECCOMP_NS_FLAGS                                                                           \
    (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |  \
     CLONE_NEWNET | CLONE_NEWTIME)

#define SECCOMP_DEFAULT SCMP_ACT_ERRNO(EPERM)

static int seccomp_add(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
                       const struct scmp_arg_cmp *cmp)
{
    /* libseccomp refuses a rule that repeats the default action; the table keeps such
     * entries to document the decision, and the default enforces it. */
    if (action == SECCOMP_DEFAULT && n == 0)
        return 0;
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
        /* A name this libseccomp does not know: nothing to allow or deny. */
        log_debug("seccomp: syscall '%s' unknown to libseccomp, skipped", name);
        return 0;
    }
    int r = seccomp_rule_add_array(ctx, action, nr, n, cmp);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "seccomp: cannot add rule for '%s'", name);
    return 0;
}

/* socket(AF_INET or AF_INET6, SOCK_STREAM [| SOCK_NONBLOCK | SOCK_CLOEXEC], 0 or IPPROTO_TCP):
 * the protocol is pinned too, so that no other stream protocol (SCTP, MPTCP) can be asked
 * for, nor its kernel module loaded on demand. */
static int seccomp_add_tcp(scmp_filter_ctx ctx)
{
    static const int families[] = {AF_INET, AF_INET6};
    static const int protocols[] = {0, IPPROTO_TCP};
    for (size_t f = 0; f < ARRAY_SIZE(families); f++)
        for (size_t k = 0; k < ARRAY_SIZE(protocols); k++) {
            struct scmp_arg_cmp cmp[] = {
                SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[f]),
                SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_STREAM), /* the type without its flags */
                SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)protocols[k]),
            };
            int r = seccomp_add(ctx, SCMP_ACT_ALLOW, "socket", ARRAY_SIZE(cmp), cmp);
            if (r < 0)
                return r;
        }
    return 0;
}

int jail_seccomp_build(struct sock_fprog *ret, bool tcp)
{
    int r;
    _cleanup_close_ int fd = -1;
    scmp_filter_ctx ctx = seccomp_init(SECCOMP_DEFAULT);
    if (!ctx)
        return log_errno(LOG_ERROR, ENOMEM, "seccomp: seccomp_init failed");
    r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (r < 0) {
        log_errno(LOG_ERROR, r, "seccomp: cannot set the bad-arch action");
        goto out;
    }
    /* A binary tree instead of a linear list: the kernel evaluates the filter once per
     * syscall number when it is loaded (to build its allow cache), so the load of a long
     * linear filter costs ~0.3 ms per sandbox; the tree makes that, and every check, short. */
    r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (r < 0)
        log_errno(LOG_WARN, r, "seccomp: binary-tree optimisation unavailable");
    for (size_t i = 0; i < ARRAY_SIZE(seccomp_allow); i++)
        if ((r = seccomp_add(ctx, SCMP_ACT_ALLOW, seccomp_allow[i], 0, NULL)) < 0)
            goto out;
    for (size_t i = 0; i < ARRAY_SIZE(seccomp_deny); i++)
        if ((r = seccomp_add(ctx, seccomp_deny[i].action, seccomp_deny[i].name, 0, NULL)) < 0)
            goto out;

    struct scmp_arg_cmp unix_only = SCMP_A0(SCMP_CMP_EQ, AF_UNIX);
    if ((r = seccomp_add(ctx, SCMP_ACT_ALLOW, "socket", 1, &unix_only)) < 0 ||
        (r = seccomp_add(ctx, SCMP_ACT_ALLOW, "socketpair", 1, &unix_only)) < 0 ||
        (tcp && (r = seccomp_add_tcp(ctx)) < 0))
        goto out;
    struct scmp_arg_cmp no_ns = SCMP_A0(SCMP_CMP_MASKED_EQ, SECCOMP_NS_FLAGS, 0);
    if ((r = seccomp_add(ctx, SCMP_ACT_ALLOW, "clone", 1, &no_ns)) < 0)
        goto out;
    if ((r = seccomp_add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL)) < 0)
        goto out;
    for (size_t i = 0; i < ARRAY_SIZE(seccomp_prctl_allowed); i++) {
        struct scmp_arg_cmp opt = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)seccomp_prctl_allowed[i]);
        if ((r = seccomp_add(ctx, SCMP_ACT_ALLOW, "prctl", 1, &opt)) < 0)
            goto out;
    }

    /* libseccomp 2.5 exports only to an fd; a memfd keeps it in memory. */
    fd = memfd_create("sandboxd-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        r = log_errno(LOG_ERROR, errno, "seccomp: memfd_create failed");
        goto out;
    }
    r = seccomp_export_bpf(ctx, fd);
    if (r < 0) {
        log_errno(LOG_ERROR, r, "seccomp: cannot export the filter");
        goto out;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0) {
        r = log_errno(LOG_ERROR, EINVAL, "seccomp: exported filter has odd size %lld",
                      (long long)size);
        goto out;
    }
    struct sock_filter *prog = malloc((size_t)size);
    if (!prog) {
        r = -ENOMEM;
        goto out;
    }
    if (pread(fd, prog, (size_t)size, 0) != size) {
        free(prog);
        r = log_errno(LOG_ERROR, errno ? errno : EIO, "seccomp: cannot read the filter back");
        goto out;
    }
    ret->filter = prog;
    ret->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    r = 0;
out:
    seccomp_release(ctx);
    return r;
}

void jail_seccomp_free(struct sock_fprog *prog)
{
    if (!prog)
        return;
    free(prog->filter);
    prog->filter = NULL;
    prog->len = 0;
}
