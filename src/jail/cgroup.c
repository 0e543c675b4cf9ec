// SPDX-License-Identifier: MIT
/*
 * cgroup — the per-cell half of cgroup.h: create a sandbox's cgroup under the parent that
 * cgroup_setup.c prepared, attach its process, set its limits, read its accounting, kill
 * it whole and remove it without ever waiting. Also the knob helpers both halves use.
 *
 * Each v2 cell gets, at creation (off the request path): memory.oom.group = 1 (an OOM kill
 * takes the whole sandbox, so the verdict is clear and no half-killed tree goes on) and
 * memory.swap.max = 0. At cgroup_cell_set_limits(), which only cells that run untrusted code
 * get: memory.max (v1 memory.limit_in_bytes), pids.max, and with --cpus the quota (v2
 * cpu.max, v1 cpu.cfs_period_us + cpu.cfs_quota_us).
 */
#include "jail/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail/cgroup_int.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

/* Tries at a fresh cell name when one is taken (a stale cell of an earlier instance). */
#define CGROUP_NAME_TRIES 8

struct cgroup_cell {
    struct cgroup_env *env;
    struct cgroup_cell *next; /* graveyard */
    char *v2;                 /* v2 cell dir */
    char *memory;             /* v1 cell dirs (cpu NULL when co-mounted with cpuacct) */
    char *pids;
    char *cpuacct;
    char *cpu;
    int peak_fd;       /* v2 memory.peak, kept open: a reset applies to this open file */
    uint64_t cpu_base; /* counters at the last reset, for per-period accounting */
    uint64_t oom_base;
};

/* ---- the real file system and the knob helpers ------------------------------------------ */

static int real_write(void *ctx, const char *path, const char *value)
{
    return fd_write_file(path, value);
}

static int real_read(void *ctx, const char *path, char **ret)
{
    return fd_read_file(AT_FDCWD, path, CGROUP_READ_MAX, ret, NULL);
}

static int real_mkdir(void *ctx, const char *path)
{
    return mkdir(path, 0755) < 0 ? -errno : 0;
}

static int real_rmdir(void *ctx, const char *path)
{
    return rmdir(path) < 0 ? -errno : 0;
}

static int real_open(void *ctx, const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
    return fd < 0 ? -errno : fd;
}

const struct cgroup_fs cgroup_fs_real = {
    .write = real_write,
    .read = real_read,
    .mkdir = real_mkdir,
    .rmdir = real_rmdir,
    .open = real_open,
};

char *cgroup_join(const char *a, const char *b)
{
    char *s = NULL;
    return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

int cgroup_write(const struct cgroup_env *env, const char *dir, const char *knob, const char *value)
{
    _cleanup_free_ char *p = cgroup_join(dir, knob);
    if (!p)
        return -ENOMEM;
    return env->fs.write(env->fs.ctx, p, value);
}

int cgroup_writef(const struct cgroup_env *env, const char *dir, const char *knob, const char *fmt,
                  ...)
{
    va_list ap;
    va_start(ap, fmt);
    _cleanup_free_ char *v = fmt_va(fmt, ap);
    va_end(ap);
    if (!v)
        return -ENOMEM;
    return cgroup_write(env, dir, knob, v);
}

int cgroup_read(const struct cgroup_env *env, const char *dir, const char *knob, char **ret)
{
    _cleanup_free_ char *p = cgroup_join(dir, knob);
    if (!p)
        return -ENOMEM;
    return env->fs.read(env->fs.ctx, p, ret);
}

static int cgroup_parse_u64(const char *s, uint64_t *ret)
{
    if (strncmp(s, "max", 3) == 0 && (s[3] == '\0' || s[3] == '\n')) {
        *ret = UINT64_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || (*end && *end != '\n' && *end != ' '))
        return -EINVAL;
    *ret = (uint64_t)v;
    return 0;
}

int cgroup_read_u64(const struct cgroup_env *env, const char *dir, const char *knob, uint64_t *ret)
{
    _cleanup_free_ char *s = NULL;
    int r = cgroup_read(env, dir, knob, &s);
    return r < 0 ? r : cgroup_parse_u64(s, ret);
}

static int cgroup_keyed(const char *s, const char *key, uint64_t *ret)
{
    size_t kl = strlen(key);
    for (const char *line = s; line && *line;) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
            return cgroup_parse_u64(line + kl + 1, ret);
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return -ENOENT;
}

int cgroup_read_keyed(const struct cgroup_env *env, const char *dir, const char *knob,
                      const char *key, uint64_t *ret)
{
    _cleanup_free_ char *s = NULL;
    int r = cgroup_read(env, dir, knob, &s);
    return r < 0 ? r : cgroup_keyed(s, key, ret);
}

uint64_t cgroup_cpu_quota_us(uint32_t cpus_milli)
{
    return (uint64_t)cpus_milli * CGROUP_CPU_PERIOD_US / 1000u;
}

/* ---- cells ------------------------------------------------------------------------------ */

/* The directories of a cell, in one order for every loop over them. */
#define CELL_DIRS(c)                                                                               \
    {                                                                                              \
        &(c)->v2, &(c)->memory, &(c)->pids, &(c)->cpuacct, &(c)->cpu                               \
    }

/* One attempt at removing every directory of the cell; true when all are gone. */
static bool cgroup_cell_remove(struct cgroup_cell *c)
{
    char **dirs[] = CELL_DIRS(c);
    bool all = true;
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (!*dirs[i])
            continue;
        int r = c->env->fs.rmdir(c->env->fs.ctx, *dirs[i]);
        if (r == -EBUSY) {
            all = false;
            continue;
        }
        if (r < 0 && r != -ENOENT)
            log_errno(LOG_WARN, r, "cgroup: cannot remove %s", *dirs[i]);
        free(*dirs[i]);
        *dirs[i] = NULL;
    }
    return all;
}

static void cgroup_cell_release(struct cgroup_cell *c)
{
    char **dirs[] = CELL_DIRS(c);
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
        free(*dirs[i]);
    fd_closep(&c->peak_fd);
    free(c);
}

/* Make the cell's directories under `name`; -EEXIST when the name is taken (nothing is left
 * behind then). */
static int cgroup_cell_mkdirs(struct cgroup_cell *c, const char *name)
{
    struct cgroup_env *env = c->env;
    const char *parents[] = {env->cells, env->v1_memory, env->v1_pids, env->v1_cpuacct,
                             env->cpu_quota ? env->v1_cpu : NULL};
    char **dirs[] = CELL_DIRS(c);
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (!parents[i])
            continue;
        if (!(*dirs[i] = cgroup_join(parents[i], name)))
            return -ENOMEM;
        int r = env->fs.mkdir(env->fs.ctx, *dirs[i]);
        if (r < 0) {
            free(*dirs[i]);
            *dirs[i] = NULL;
            (void)cgroup_cell_remove(c); /* what this attempt made is empty: removal succeeds */
            return r;
        }
    }
    return 0;
}

static int cgroup_cell_configure(struct cgroup_cell *c)
{
    struct cgroup_env *env = c->env;
    int r;
    if (c->v2) {
        if (env->have_oom_group && (r = cgroup_write(env, c->v2, "memory.oom.group", "1")) < 0)
            return log_errno(LOG_ERROR, r, "cgroup: cannot set %s/memory.oom.group", c->v2);
        r = cgroup_write(env, c->v2, "memory.swap.max", "0");
        if (r < 0 && r != -ENOENT) /* absent when the kernel does no swap accounting */
            return log_errno(LOG_ERROR, r, "cgroup: cannot set %s/memory.swap.max", c->v2);
    }
    return 0;
}

/* --cpus: only for cells that run untrusted code (not a pool's zygote, whose work is ours). */
static int cgroup_cell_set_cpu(struct cgroup_cell *c)
{
    struct cgroup_env *env = c->env;
    uint64_t quota = cgroup_cpu_quota_us(env->cpus_milli);
    int r;
    if (c->v2) {
        r = cgroup_writef(env, c->v2, "cpu.max", "%" PRIu64 " %u", quota, CGROUP_CPU_PERIOD_US);
        return r < 0 ? log_errno(LOG_ERROR, r, "cgroup: cannot set %s/cpu.max", c->v2) : 0;
    }
    const char *cpu = c->cpu ? c->cpu : c->cpuacct;
    if ((r = cgroup_writef(env, cpu, "cpu.cfs_period_us", "%u", CGROUP_CPU_PERIOD_US)) < 0 ||
        (r = cgroup_writef(env, cpu, "cpu.cfs_quota_us", "%" PRIu64, quota)) < 0)
        return log_errno(LOG_ERROR, r, "cgroup: cannot set the cpu quota of %s", cpu);
    return 0;
}

int cgroup_cell_new(struct cgroup_env *env, struct cgroup_cell **ret)
{
    *ret = NULL;
    if (env->mode == CGROUP_NONE)
        return 0;
    if (env->graveyard)
        cgroup_env_sweep(env);
    struct cgroup_cell *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->env = env;
    c->peak_fd = -1;
    char name[32];
    int r = -EEXIST;
    for (int i = 0; i < CGROUP_NAME_TRIES && r == -EEXIST; i++) {
        snprintf(name, sizeof(name), "c%" PRIuFAST64, atomic_fetch_add(&env->next_id, 1));
        r = cgroup_cell_mkdirs(c, name);
    }
    if (r < 0) {
        log_errno(LOG_ERROR, r, "cgroup: cannot create the cell cgroup %s", name);
        goto fail;
    }
    if ((r = cgroup_cell_configure(c)) < 0)
        goto fail;
    *ret = c;
    return 0;
fail:
    cgroup_cell_free(c);
    return r;
}

void cgroup_cell_free(struct cgroup_cell *c)
{
    if (!c)
        return;
    fd_closep(&c->peak_fd);
    if (cgroup_cell_remove(c)) {
        cgroup_cell_release(c);
        return;
    }
    struct cgroup_env *env = c->env;
    pthread_mutex_lock(&env->graveyard_lock);
    c->next = env->graveyard;
    env->graveyard = c;
    pthread_mutex_unlock(&env->graveyard_lock);
}

void cgroup_env_sweep(struct cgroup_env *env)
{
    pthread_mutex_lock(&env->graveyard_lock);
    struct cgroup_cell *pending = env->graveyard;
    env->graveyard = NULL;
    pthread_mutex_unlock(&env->graveyard_lock);
    struct cgroup_cell *keep = NULL;
    for (struct cgroup_cell *c = pending, *next; c; c = next) {
        next = c->next;
        if (cgroup_cell_remove(c)) {
            cgroup_cell_release(c);
        } else {
            c->next = keep;
            keep = c;
        }
    }
    if (!keep)
        return;
    pthread_mutex_lock(&env->graveyard_lock);
    struct cgroup_cell *tail = keep;
    while (tail->next)
        tail = tail->next;
    tail->next = env->graveyard;
    env->graveyard = keep;
    pthread_mutex_unlock(&env->graveyard_lock);
}

void cgroup_env_bury(struct cgroup_env *env)
{
    for (struct cgroup_cell *c = env->graveyard, *next; c; c = next) {
        next = c->next;
        log_warn("cgroup: could not remove a cell cgroup at shutdown");
        cgroup_cell_release(c);
    }
    env->graveyard = NULL;
}

int cgroup_cell_attach(struct cgroup_cell *c, pid_t pid)
{
    if (!c)
        return 0;
    char **dirs[] = CELL_DIRS(c);
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (!*dirs[i])
            continue;
        int r = cgroup_writef(c->env, *dirs[i], "cgroup.procs", "%d", (int)pid);
        if (r < 0)
            return log_errno(LOG_ERROR, r, "cgroup: cannot move pid %d into %s", (int)pid,
                             *dirs[i]);
    }
    return 0;
}

int cgroup_cell_set_limits(struct cgroup_cell *c, uint64_t memory_bytes, uint64_t max_pids)
{
    if (!c)
        return 0;
    int r;
    if (memory_bytes) {
        r = c->v2 ? cgroup_writef(c->env, c->v2, "memory.max", "%" PRIu64, memory_bytes)
                  : cgroup_writef(c->env, c->memory, "memory.limit_in_bytes", "%" PRIu64,
                                  memory_bytes);
        if (r < 0)
            return log_errno(LOG_ERROR, r, "cgroup: cannot set the memory limit");
    }
    if (max_pids) {
        r = cgroup_writef(c->env, c->v2 ? c->v2 : c->pids, "pids.max", "%" PRIu64, max_pids);
        if (r < 0)
            return log_errno(LOG_ERROR, r, "cgroup: cannot set the pids limit");
    }
    return c->env->cpu_quota ? cgroup_cell_set_cpu(c) : 0;
}

static int cgroup_cpu_ns(struct cgroup_cell *c, uint64_t *ret)
{
    if (c->v2) {
        uint64_t us;
        int r = cgroup_read_keyed(c->env, c->v2, "cpu.stat", "usage_usec", &us);
        if (r < 0)
            return r;
        *ret = us * 1000;
        return 0;
    }
    if (!c->cpuacct)
        return -EOPNOTSUPP;
    return cgroup_read_u64(c->env, c->cpuacct, "cpuacct.usage", ret);
}

static int cgroup_oom_kills(struct cgroup_cell *c, uint64_t *ret)
{
    return c->v2 ? cgroup_read_keyed(c->env, c->v2, "memory.events", "oom_kill", ret)
                 : cgroup_read_keyed(c->env, c->memory, "memory.oom_control", "oom_kill", ret);
}

/* v2: memory.peak through the cell's own open file; since kernel 6.12 writing to it starts
 * a new peak for that file alone, which is how a session gets a peak per execution. */
static int cgroup_peak_reset(struct cgroup_cell *c)
{
    struct cgroup_env *env = c->env;
    if (c->peak_fd < 0) {
        _cleanup_free_ char *p = cgroup_join(c->v2, "memory.peak");
        if (!p)
            return -ENOMEM;
        int fd = env->fs.open(env->fs.ctx, p, env->peak_resettable ? O_RDWR : O_RDONLY);
        if (fd < 0)
            return fd;
        c->peak_fd = fd;
    }
    if (!env->peak_resettable)
        return 0;
    return fd_write_all(c->peak_fd, "reset\n", 6, 0);
}

static int cgroup_peak_read(struct cgroup_cell *c, uint64_t *ret)
{
    if (c->peak_fd < 0)
        return cgroup_read_u64(c->env, c->v2, "memory.peak", ret);
    char s[32];
    ssize_t n = pread(c->peak_fd, s, sizeof(s) - 1, 0);
    if (n < 0)
        return -errno;
    s[n] = '\0';
    return cgroup_parse_u64(s, ret);
}

int cgroup_cell_reset_peak(struct cgroup_cell *c)
{
    if (!c)
        return 0;
    uint64_t v = 0;
    if (cgroup_cpu_ns(c, &v) == 0)
        c->cpu_base = v;
    if (cgroup_oom_kills(c, &v) == 0)
        c->oom_base = v;
    if (c->v2)
        return c->env->have_peak ? cgroup_peak_reset(c) : 0;
    return cgroup_write(c->env, c->memory, "memory.max_usage_in_bytes", "0");
}

int cgroup_cell_usage(struct cgroup_cell *c, struct cgroup_usage *ret)
{
    *ret = (struct cgroup_usage){0};
    if (!c)
        return -EOPNOTSUPP;
    uint64_t v;
    if (cgroup_cpu_ns(c, &v) == 0) {
        ret->cpu_ns = v >= c->cpu_base ? v - c->cpu_base : 0;
        ret->have_cpu = true;
    }
    if (c->v2)
        ret->have_memory = c->env->have_peak && cgroup_peak_read(c, &ret->memory_peak) == 0;
    else
        ret->have_memory =
            cgroup_read_u64(c->env, c->memory, "memory.max_usage_in_bytes", &ret->memory_peak) == 0;
    if (cgroup_oom_kills(c, &v) == 0)
        ret->oom_kills = v >= c->oom_base ? v - c->oom_base : 0;
    return 0;
}

int cgroup_cell_kill(struct cgroup_cell *c)
{
    if (!c || !c->v2 || !c->env->have_kill)
        return -EOPNOTSUPP;
    return cgroup_write(c->env, c->v2, "cgroup.kill", "1");
}
