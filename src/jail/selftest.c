// SPDX-License-Identifier: MIT
/*
 * selftest — see selftest.h.
 */
#include "jail/selftest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/proc.h"

static int selftest_expect(bool ok, const char *layer, const char *what)
{
    if (ok)
        return 0;
    return log_errno(LOG_ERROR, EPERM, "isolation self-test: %s is not in effect (%s)", layer,
                     what);
}

int jail_selftest(const struct jail_config *cfg, json_t **ret_facts)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        return -errno;
    char **argv = jail_python_argv(cfg, "selftest", NULL);
    if (!argv) {
        close(out[0]);
        close(out[1]);
        return -ENOMEM;
    }
    struct jail_spawn req = {
        .role = JAIL_ROLE_SANDBOX,
        .argv = argv,
        .stdin_fd = -1,
        .stdout_fd = out[1],
        .stderr_fd = -1,
        .proto_fd = -1,
        .limits = jail_limits_default(cfg),
    };
    struct jail_proc proc;
    int r = jail_spawn(cfg, &req, &proc);
    close(out[1]);
    jail_argv_free(argv);
    if (r < 0) {
        close(out[0]);
        return r;
    }
    struct buf b;
    buf_init(&b, 65536);
    int64_t deadline = clock_mono_us() + 30 * 1000000;
    for (;;) {
        int64_t left = deadline - clock_mono_us();
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)(left / 1000) + 1) <= 0)
            break;
        char chunk[4096];
        ssize_t n = read(out[0], chunk, sizeof(chunk));
        if (n <= 0 || buf_append(&b, chunk, (size_t)n) < 0)
            break;
    }
    close(out[0]);
    proc_kill_wait(proc.pid);
    close(proc.pidfd);
    json_error_t jerr;
    json_t *f = json_loadb(b.data ? b.data : "", b.len, 0, &jerr);
    buf_free(&b);
    if (!f)
        return log_errno(LOG_ERROR, EPROTO,
                         "isolation self-test: the jailed interpreter printed no report; is "
                         "the runtime directory readable by uid %u?",
                         (unsigned)cfg->host_uid);
    bool seccomp = cfg->filter.len > 0;
    json_t *ifaces = json_object_get(f, "netInterfaces");
    const char *inet = json_string_value(json_object_get(f, "inetSocket"));
    const char *wroot = json_string_value(json_object_get(f, "writeRoot"));
    const char *wtmp = json_string_value(json_object_get(f, "writeTmp"));
    const char *cap = json_string_value(json_object_get(f, "capEff"));
    if ((r = selftest_expect(json_integer_value(json_object_get(f, "pid")) == 1, "pid namespace",
                             "the program is not pid 1")) < 0 ||
        (r = selftest_expect(json_integer_value(json_object_get(f, "uid")) == CONFINE_SANDBOX_UID,
                             "user namespace", "uid is not 65534")) < 0 ||
        (r = selftest_expect(cap && strcmp(cap, "0000000000000000") == 0, "capability drop",
                             "CapEff is not empty")) < 0 ||
        (r = selftest_expect(json_integer_value(json_object_get(f, "noNewPrivs")) == 1,
                             "no_new_privs", "NoNewPrivs is 0")) < 0 ||
        (r = selftest_expect(!seccomp || json_integer_value(json_object_get(f, "seccomp")) == 2,
                             "seccomp", "Seccomp mode is not 2 (filter)")) < 0 ||
        (r = selftest_expect(!seccomp || (inet && strncmp(inet, "denied", 6) == 0), "seccomp",
                             "an AF_INET socket could be created")) < 0 ||
        (r = selftest_expect(json_array_size(ifaces) == 1 &&
                                 strcmp(json_string_value(json_array_get(ifaces, 0)) ?: "", "lo") ==
                                     0,
                             "network namespace", "interfaces other than lo are visible")) < 0 ||
        (r = selftest_expect(wroot && strncmp(wroot, "denied", 6) == 0, "read-only root",
                             "the root filesystem is writable")) < 0 ||
        (r = selftest_expect(wtmp && strcmp(wtmp, "allowed") == 0, "writable /tmp",
                             "/tmp is not writable")) < 0) {
        json_decref(f);
        return r;
    }
    *ret_facts = f;
    return 0;
}
