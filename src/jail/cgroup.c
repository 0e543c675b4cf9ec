// SPDX-License-Identifier: MIT
/*
 * cgroup — see cgroup.h.
 *
 * v2 layout, below our own cgroup X (which must be delegated to us):
 *   X/supervisor   sandboxd moves itself here, because a v2 cgroup with
 *                  processes cannot enable controllers for its children
 *   X/cells/cN     one per sandbox
 * v1 layout, per controller hierarchy (memory, pids, cpuacct):
 *   <ours>/sandboxd-<pid>/cN
 */
#include "jail/cgroup.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/fmt.h"

struct cgroup_cell {
    struct cgroup_env *env;
    struct cgroup_cell *next; /* graveyard */
    char *v2;                 /* v2 cell dir */
    char *memory;             /* v1 cell dirs */
    char *pids;
    char *cpuacct;
    uint64_t cpu_base; /* cpu counter at the last reset, for per-period accounting */
};

const char *cgroup_mode_name(enum cgroup_mode m)
{
    switch (m) {
    case CGROUP_V1:
        return "v1";
    case CGROUP_V2:
        return "v2";
    default:
        return "none";
    }
}

static void cgroup_set_reason(struct cgroup_env *env, const char *fmt, ...) _printf_(2, 3);
static void cgroup_set_reason(struct cgroup_env *env, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(env->reason);
    env->reason = fmt_va(fmt, ap);
    va_end(ap);
}

/* Our path in the hierarchy that carries `controller` ("" for v2), from /proc/self/cgroup. */
static char *cgroup_self_path(const char *controller)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1;
        bool match = false;
        if (!*controller)
            match = strncmp(line, "0", 1) == 0 && c1 == line + 1 && !*ctrls;
        else
            for (char *save = NULL, *tok = strtok_r((char *)ctrls, ",", &save); tok;
                 tok = strtok_r(NULL, ",", &save))
                if (strcmp(tok, controller) == 0)
                    match = true;
        if (match)
            found = strdup(c2 + 1);
    }
    free(line);
    fclose(f);
    return found;
}

/* Mount point and mount root of the hierarchy with `controller` ("" = cgroup2). */
static int cgroup_find_mount(const char *controller, char **ret_mnt, char **ret_root)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char *line = NULL;
    size_t cap = 0;
    int r = -ENOENT;
    while (r == -ENOENT && getline(&line, &cap, f) > 0) {
        /* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
        char root[4096], mnt[4096], fstype[64], super[4096];
        char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
            sscanf(dash + 3, "%63s %*s %4095s", fstype, super) != 2)
            continue;
        bool match = false;
        if (!*controller)
            match = strcmp(fstype, "cgroup2") == 0;
        else if (strcmp(fstype, "cgroup") == 0)
            for (char *save = NULL, *tok = strtok_r(super, ",", &save); tok;
                 tok = strtok_r(NULL, ",", &save))
                if (strcmp(tok, controller) == 0)
                    match = true;
        if (!match)
            continue;
        *ret_mnt = strdup(mnt);
        *ret_root = strdup(root);
        r = (*ret_mnt && *ret_root) ? 0 : -ENOMEM;
    }
    free(line);
    fclose(f);
    return r;
}

/* Directory of our own cgroup in the hierarchy of `controller`. */
static char *cgroup_self_dir(const char *controller)
{
    _cleanup_free_ char *path = cgroup_self_path(controller);
    _cleanup_free_ char *mnt = NULL, *root = NULL;
    if (!path || cgroup_find_mount(controller, &mnt, &root) < 0)
        return NULL;
    const char *rel = path;
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0) {
        if (strncmp(path, root, rl) != 0)
            return NULL; /* our cgroup is outside the mounted part */
        rel = path + rl;
    }
    char *dir = NULL;
    if (asprintf(&dir, "%s%s%s", mnt, (*rel && *rel != '/') ? "/" : "", rel) < 0)
        return NULL;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    return dir;
}

static char *cgroup_join(const char *a, const char *b)
{
    char *s = NULL;
    return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

static int cgroup_knob_write(const char *dir, const char *knob, const char *value)
{
    _cleanup_free_ char *p = cgroup_join(dir, knob);
    if (!p)
        return -ENOMEM;
    return fd_write_file(p, value);
}

static int cgroup_knob_u64(const char *dir, const char *knob, uint64_t *ret)
{
    _cleanup_free_ char *p = cgroup_join(dir, knob);
    if (!p)
        return -ENOMEM;
    return fd_read_u64(p, ret);
}

/* "key value" lines (memory.events, cpu.stat, memory.oom_control). */
static int cgroup_knob_keyed(const char *dir, const char *knob, const char *key, uint64_t *ret)
{
    _cleanup_free_ char *p = cgroup_join(dir, knob);
    _cleanup_free_ char *s = NULL;
    if (!p)
        return -ENOMEM;
    int r = fd_read_file(AT_FDCWD, p, 65536, &s, NULL);
    if (r < 0)
        return r;
    size_t kl = strlen(key);
    for (char *line = s; line && *line;) {
        char *nl = strchr(line, '\n');
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
            *ret = strtoull(line + kl + 1, NULL, 10);
            return 0;
        }
        line = nl ? nl + 1 : NULL;
    }
    return -ENOENT;
}

static int cgroup_mkdir(const char *dir)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static bool cgroup_v2_init(struct cgroup_env *env)
{
    _cleanup_free_ char *self = cgroup_self_dir("");
    if (!self)
        return false;
    _cleanup_free_ char *ctrl = NULL;
    _cleanup_free_ char *cpath = cgroup_join(self, "cgroup.controllers");
    if (!cpath || fd_read_file(AT_FDCWD, cpath, 4096, &ctrl, NULL) < 0)
        return false;
    if (!strstr(ctrl, "memory") || !strstr(ctrl, "pids")) {
        cgroup_set_reason(env, "cgroup v2 at %s lacks the memory/pids controllers", self);
        return false;
    }
    _cleanup_free_ char *sup = cgroup_join(self, "supervisor");
    _cleanup_free_ char *cells = cgroup_join(self, "cells");
    if (!sup || !cells)
        return false;
    int r = cgroup_mkdir(sup);
    if (r < 0) {
        cgroup_set_reason(env, "cgroup v2 at %s is not writable (%s); delegate it to sandboxd",
                          self, strerror(-r));
        return false;
    }
    char pid[32];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    if ((r = cgroup_knob_write(sup, "cgroup.procs", pid)) < 0 ||
        (r = cgroup_knob_write(self, "cgroup.subtree_control", "+memory +pids")) < 0 ||
        (r = cgroup_mkdir(cells)) < 0 ||
        (r = cgroup_knob_write(cells, "cgroup.subtree_control", "+memory +pids")) < 0) {
        cgroup_set_reason(env, "cannot prepare cgroup v2 delegation under %s: %s", self,
                          strerror(-r));
        return false;
    }
    /* cpu is optional: cpu.stat usage_usec exists without the controller. */
    (void)cgroup_knob_write(self, "cgroup.subtree_control", "+cpu");
    env->v2_cells = TAKE_PTR(cells);
    env->mode = CGROUP_V2;
    return true;
}

static char *cgroup_v1_base(const char *controller)
{
    _cleanup_free_ char *self = cgroup_self_dir(controller);
    if (!self)
        return NULL;
    char *base = NULL;
    if (asprintf(&base, "%s/sandboxd-%d", self, (int)getpid()) < 0)
        return NULL;
    if (cgroup_mkdir(base) < 0) {
        free(base);
        return NULL;
    }
    return base;
}

static bool cgroup_v1_init(struct cgroup_env *env)
{
    env->v1_memory = cgroup_v1_base("memory");
    env->v1_pids = cgroup_v1_base("pids");
    env->v1_cpuacct = cgroup_v1_base("cpuacct");
    if (!env->v1_memory || !env->v1_pids) {
        cgroup_set_reason(env, "cgroup v1 memory/pids hierarchies are missing or not writable");
        free(env->v1_memory);
        free(env->v1_pids);
        free(env->v1_cpuacct);
        env->v1_memory = env->v1_pids = env->v1_cpuacct = NULL;
        return false;
    }
    env->mode = CGROUP_V1;
    return true;
}

void cgroup_env_init(struct cgroup_env *env, bool want)
{
    *env = (struct cgroup_env){.mode = CGROUP_NONE};
    atomic_init(&env->next_id, 1);
    pthread_mutex_init(&env->graveyard_lock, NULL);
    if (!want) {
        cgroup_set_reason(env, "disabled by --no-cgroups");
        return;
    }
    if (cgroup_v2_init(env) || cgroup_v1_init(env)) {
        free(env->reason);
        env->reason = NULL;
        return;
    }
    if (!env->reason)
        cgroup_set_reason(env, "no usable cgroup hierarchy");
}

static bool cgroup_cell_remove(struct cgroup_cell *c);
static void cgroup_cell_release(struct cgroup_cell *c);

void cgroup_env_done(struct cgroup_env *env)
{
    if (!env)
        return;
    /* At shutdown waiting is fine: give dying processes a moment to leave. */
    for (int i = 0; i < 100 && env->graveyard; i++) {
        cgroup_env_sweep(env);
        if (env->graveyard) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    for (struct cgroup_cell *c = env->graveyard, *next; c; c = next) {
        next = c->next;
        log_warn("cgroup: could not remove a cell cgroup at shutdown");
        cgroup_cell_release(c);
    }
    env->graveyard = NULL;
    pthread_mutex_destroy(&env->graveyard_lock);
    /* Best effort: the base directories are empty once every cell is gone. */
    if (env->v1_memory)
        (void)rmdir(env->v1_memory);
    if (env->v1_pids)
        (void)rmdir(env->v1_pids);
    if (env->v1_cpuacct)
        (void)rmdir(env->v1_cpuacct);
    free(env->v2_cells);
    free(env->v1_memory);
    free(env->v1_pids);
    free(env->v1_cpuacct);
    free(env->reason);
    *env = (struct cgroup_env){.mode = CGROUP_NONE};
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
    char name[32];
    snprintf(name, sizeof(name), "c%" PRIuFAST64, atomic_fetch_add(&env->next_id, 1));
    int r = -ENOMEM;
    if (env->mode == CGROUP_V2) {
        if (!(c->v2 = cgroup_join(env->v2_cells, name)))
            goto fail;
        if ((r = cgroup_mkdir(c->v2)) < 0)
            goto fail;
    } else {
        if (!(c->memory = cgroup_join(env->v1_memory, name)) ||
            !(c->pids = cgroup_join(env->v1_pids, name)))
            goto fail;
        if (env->v1_cpuacct && !(c->cpuacct = cgroup_join(env->v1_cpuacct, name)))
            goto fail;
        if ((r = cgroup_mkdir(c->memory)) < 0 || (r = cgroup_mkdir(c->pids)) < 0 ||
            (c->cpuacct && (r = cgroup_mkdir(c->cpuacct)) < 0))
            goto fail;
    }
    *ret = c;
    return 0;
fail:
    log_errno(LOG_ERROR, r, "cgroup: cannot create cell cgroup %s", name);
    cgroup_cell_free(c);
    return r;
}

/* One attempt at removing every directory of the cell; true when all are gone. */
static bool cgroup_cell_remove(struct cgroup_cell *c)
{
    char **dirs[] = {&c->v2, &c->memory, &c->pids, &c->cpuacct};
    bool all = true;
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (!*dirs[i])
            continue;
        if (rmdir(*dirs[i]) == 0 || errno == ENOENT) {
            free(*dirs[i]);
            *dirs[i] = NULL;
        } else if (errno == EBUSY) {
            all = false;
        } else {
            log_errno(LOG_WARN, errno, "cgroup: cannot remove %s", *dirs[i]);
            free(*dirs[i]);
            *dirs[i] = NULL;
        }
    }
    return all;
}

static void cgroup_cell_release(struct cgroup_cell *c)
{
    free(c->v2);
    free(c->memory);
    free(c->pids);
    free(c->cpuacct);
    free(c);
}

void cgroup_cell_free(struct cgroup_cell *c)
{
    if (!c)
        return;
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

int cgroup_cell_attach(struct cgroup_cell *c, pid_t pid)
{
    if (!c)
        return 0;
    char s[32];
    snprintf(s, sizeof(s), "%d", (int)pid);
    const char *dirs[] = {c->v2, c->memory, c->pids, c->cpuacct};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (!dirs[i])
            continue;
        int r = cgroup_knob_write(dirs[i], "cgroup.procs", s);
        if (r < 0)
            return log_errno(LOG_ERROR, r, "cgroup: cannot move pid %d into %s", (int)pid, dirs[i]);
    }
    return 0;
}

int cgroup_cell_set_limits(struct cgroup_cell *c, uint64_t memory_bytes, uint64_t max_pids)
{
    if (!c)
        return 0;
    char v[32];
    int r;
    if (memory_bytes) {
        snprintf(v, sizeof(v), "%" PRIu64, memory_bytes);
        r = c->v2 ? cgroup_knob_write(c->v2, "memory.max", v)
                  : cgroup_knob_write(c->memory, "memory.limit_in_bytes", v);
        if (r < 0)
            return log_errno(LOG_ERROR, r, "cgroup: cannot set the memory limit");
        if (c->v2)
            (void)cgroup_knob_write(c->v2, "memory.swap.max", "0"); /* absent without swap */
    }
    if (max_pids) {
        snprintf(v, sizeof(v), "%" PRIu64, max_pids);
        r = cgroup_knob_write(c->v2 ? c->v2 : c->pids, "pids.max", v);
        if (r < 0)
            return log_errno(LOG_ERROR, r, "cgroup: cannot set the pids limit");
    }
    return 0;
}

static int cgroup_cpu_ns(struct cgroup_cell *c, uint64_t *ret)
{
    if (c->v2) {
        uint64_t us;
        int r = cgroup_knob_keyed(c->v2, "cpu.stat", "usage_usec", &us);
        if (r < 0)
            return r;
        *ret = us * 1000;
        return 0;
    }
    if (!c->cpuacct)
        return -EOPNOTSUPP;
    return cgroup_knob_u64(c->cpuacct, "cpuacct.usage", ret);
}

int cgroup_cell_reset_peak(struct cgroup_cell *c)
{
    if (!c)
        return 0;
    uint64_t cpu = 0;
    if (cgroup_cpu_ns(c, &cpu) == 0)
        c->cpu_base = cpu;
    if (c->v2)
        return 0; /* memory.peak resets only by writing it on newer kernels; ignore */
    return cgroup_knob_write(c->memory, "memory.max_usage_in_bytes", "0");
}

int cgroup_cell_usage(struct cgroup_cell *c, struct cgroup_usage *ret)
{
    *ret = (struct cgroup_usage){0};
    if (!c)
        return -EOPNOTSUPP;
    uint64_t cpu;
    if (cgroup_cpu_ns(c, &cpu) == 0) {
        ret->cpu_ns = cpu >= c->cpu_base ? cpu - c->cpu_base : 0;
        ret->have_cpu = true;
    }
    if (c->v2) {
        if (cgroup_knob_u64(c->v2, "memory.peak", &ret->memory_peak) == 0)
            ret->have_memory = true;
        (void)cgroup_knob_keyed(c->v2, "memory.events", "oom_kill", &ret->oom_kills);
    } else {
        if (cgroup_knob_u64(c->memory, "memory.max_usage_in_bytes", &ret->memory_peak) == 0)
            ret->have_memory = true;
        (void)cgroup_knob_keyed(c->memory, "memory.oom_control", "oom_kill", &ret->oom_kills);
    }
    return 0;
}

int cgroup_cell_kill(struct cgroup_cell *c)
{
    if (!c || !c->v2)
        return -EOPNOTSUPP;
    return cgroup_knob_write(c->v2, "cgroup.kill", "1");
}
