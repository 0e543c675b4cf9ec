// SPDX-License-Identifier: MIT
/*
 * jailbench — the cost of isolation itself: spawn-to-exit of the interpreter running
 * `-I -S -c pass`, plainly (posix_spawn) and through jail_spawn() with every layer. Prints
 * one JSON object with median, p99 and mean in milliseconds for each.
 *   jailbench RUNTIME_DIR N
 * With JAILBENCH_TOOLBOX=none the jail is built without the shell toolbox (jail/toolbox.h).
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail/jail.h"
#include "util/clock.h"
#include "util/log.h"

extern char **environ;

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, int64_t *t, int n, int last)
{
    qsort(t, (size_t)n, sizeof(*t), cmp);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (double)t[i];
    printf("  \"%s\": {\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"mean_ms\": %.3f}%s\n", name,
           (double)t[n / 2] / 1000.0, (double)t[(n * 99) / 100] / 1000.0, sum / n / 1000.0,
           last ? "" : ",");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: jailbench RUNTIME_DIR N\n");
        return 2;
    }
    int n = atoi(argv[2]);
    if (n < 1)
        return 2;
    log_set_level(LOG_WARN);
    struct jail_options o = {
        .runtime_dir = argv[1],
        .tmp_bytes = 64u << 20,
        .cgroup = {.want = true},
        .no_toolbox = getenv("JAILBENCH_TOOLBOX") && strcmp(getenv("JAILBENCH_TOOLBOX"), "none") == 0};
    struct jail_config cfg;
    if (jail_config_init(&cfg, &o) < 0)
        return 1;
    int64_t *plain = calloc((size_t)n, sizeof(int64_t));
    int64_t *jailed = calloc((size_t)n, sizeof(int64_t));
    char *argv_py[] = {cfg.python, "-I", "-S", "-c", "pass", NULL};
    for (int i = 0; i < n; i++) {
        int64_t t = clock_mono_us();
        pid_t pid;
        if (posix_spawn(&pid, cfg.python, NULL, NULL, argv_py, environ) != 0)
            return 1;
        waitpid(pid, NULL, 0);
        plain[i] = clock_mono_us() - t;
    }
    struct jail_limits lim = jail_limits_default(&cfg);
    for (int i = 0; i < n; i++) {
        int64_t t = clock_mono_us();
        struct jail_spawn req = {.role = JAIL_ROLE_SANDBOX, .argv = argv_py, .stdin_fd = -1,
                                 .stdout_fd = -1, .stderr_fd = -1, .proto_fd = -1,
                                 .limits = lim};
        struct jail_proc proc;
        if (jail_spawn(&cfg, &req, &proc) < 0)
            return 1;
        int status;
        waitpid(proc.pid, &status, 0);
        close(proc.pidfd);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "jailbench: jailed python failed (status %d)\n", status);
            return 1;
        }
        jailed[i] = clock_mono_us() - t;
    }
    printf("{\n");
    report("plain", plain, n, 0);
    report("jailed", jailed, n, 1);
    printf("}\n");
    free(plain);
    free(jailed);
    jail_config_done(&cfg);
    return 0;
}
