// SPDX-License-Identifier: MIT
/*
 * cgroup_setup — the configuration half of cgroup.h: which hierarchy the host offers,
 * where sandboxd's own cgroup is, and the one-time preparation of the parent of every
 * cell. Runs once, single-threaded, at start-up; the per-cell actions are in cgroup.c.
 *
 * v2, below the base X (our own cgroup, or the delegated --cgroup-root):
 *   X/supervisor  only when X holds processes: every one of them is moved here first,
 *                 because the kernel refuses (EBUSY) to enable controllers for the children
 *                 of a cgroup that has processes of its own ("no internal processes")
 *   X/cells       memory.max = the cells' budget; enables memory pids [cpu] for
 *   X/cells/cN    one per sandbox (cgroup.c)
 * v1, in each of the memory, pids, cpuacct (and with --cpus, cpu) hierarchies:
 *   <our cgroup>/sandboxd-<pid>/cN, with memory.limit_in_bytes of sandboxd-<pid> = budget
 * Nothing above X (or above our own v1 cgroups) is ever written; X itself only gets its
 * cgroup.subtree_control, which decides what X's children (ours) may use.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jail/cgroup.h"
#include "jail/cgroup_int.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

/* Re-reads of cgroup.procs while processes keep forking into the cgroup being emptied. */
#define SETUP_MOVE_ROUNDS 32
/* Largest /proc/self/mountinfo read (a container host can have thousands of mounts). */
#define SETUP_MOUNTINFO_MAX (16u << 20)

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

/* ---- where we are: /proc/self/cgroup and /proc/self/mountinfo ---------------------------- */

/* Is word one of the items of list (separated by spaces, commas or newlines)? */
static bool setup_word_in(const char *list, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, " ,\n");
        if (n == wl && strncmp(p, word, wl) == 0)
            return true;
        p += n;
        p += strspn(p, " ,\n");
    }
    return false;
}

/* proc/name, whole (caller frees *ret). */
static int setup_read_proc(const char *proc, const char *name, size_t max, char **ret)
{
    _cleanup_free_ char *file = cgroup_join(proc, name);
    return file ? fd_read_file(AT_FDCWD, file, max, ret, NULL) : -ENOMEM;
}

/* Our path in the hierarchy carrying `controller` ("": the v2 hierarchy). */
static int setup_self_path(const char *proc, const char *controller, char **ret)
{
    _cleanup_free_ char *s = NULL;
    int r = setup_read_proc(proc, "self/cgroup", 1u << 20, &s);
    if (r < 0)
        return r;
    for (char *save = NULL, *line = strtok_r(s, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        /* hierarchy-id:controller-list:path */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        bool match =
            *controller ? setup_word_in(c1 + 1, controller) : strcmp(line, "0") == 0 && !c1[1];
        if (match)
            return (*ret = strdup(c2 + 1)) ? 0 : -ENOMEM;
    }
    return -ENOENT;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void setup_unescape(char *s)
{
    char *w = s;
    for (const char *p = s; *p;) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 4;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
}

/* Is path at or below root (both absolute, no trailing slash but "/")? */
static bool setup_path_under(const char *path, const char *root)
{
    size_t rl = strlen(root);
    if (strcmp(root, "/") == 0)
        return true;
    return strncmp(path, root, rl) == 0 && (path[rl] == '\0' || path[rl] == '/');
}

/* The mount of the hierarchy with `controller` ("": cgroup2) whose root holds `self`. */
static int setup_find_mount(const char *proc, const char *controller, const char *self,
                            char **ret_mnt, char **ret_root)
{
    _cleanup_free_ char *s = NULL;
    int r = setup_read_proc(proc, "self/mountinfo", SETUP_MOUNTINFO_MAX, &s);
    if (r < 0)
        return r;
    for (char *lsave = NULL, *line = strtok_r(s, "\n", &lsave); line;
         line = strtok_r(NULL, "\n", &lsave)) {
        /* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
        char *dash = strstr(line, " - ");
        if (!dash)
            continue;
        *dash = '\0';
        char *f[5] = {0}, *save = NULL;
        size_t n = 0;
        for (char *t = strtok_r(line, " ", &save); t && n < ARRAY_SIZE(f);
             t = strtok_r(NULL, " ", &save))
            f[n++] = t;
        char *fstype = strtok_r(dash + 3, " ", &save);
        char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
        char *super = source ? strtok_r(NULL, " ", &save) : NULL;
        if (n < 5 || !super)
            continue;
        bool match = *controller ? strcmp(fstype, "cgroup") == 0 && setup_word_in(super, controller)
                                 : strcmp(fstype, "cgroup2") == 0;
        if (!match)
            continue;
        setup_unescape(f[3]);
        setup_unescape(f[4]);
        if (!setup_path_under(self, f[3]))
            continue; /* a bind of another part of the hierarchy */
        *ret_mnt = strdup(f[4]);
        *ret_root = strdup(f[3]);
        if (!*ret_mnt || !*ret_root) {
            free(*ret_mnt);
            free(*ret_root);
            return -ENOMEM;
        }
        return 0;
    }
    return -ENOENT;
}

/* Directory of our own cgroup in the hierarchy of `controller`; *ret_mnt (may be NULL) gets
 * the mount point, which bounds the walk up for limits. */
static int setup_self_dir(const char *proc, const char *controller, char **ret, char **ret_mnt)
{
    _cleanup_free_ char *self = NULL, *mnt = NULL, *root = NULL;
    int r = setup_self_path(proc, controller, &self);
    if (r < 0)
        return r;
    if (strncmp(self, "/..", 3) == 0)
        return -ENOENT; /* outside our cgroup namespace: nothing of it is visible */
    if ((r = setup_find_mount(proc, controller, self, &mnt, &root)) < 0)
        return r;
    const char *rel = strcmp(root, "/") == 0 ? self : self + strlen(root);
    char *dir = NULL;
    if (asprintf(&dir, "%s%s%s", mnt, (*rel && *rel != '/') ? "/" : "", rel) < 0)
        return -ENOMEM;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    *ret = dir;
    if (ret_mnt)
        *ret_mnt = TAKE_PTR(mnt);
    return 0;
}

/* ---- the cells' memory budget ------------------------------------------------------------ */

static int setup_mem_total(const char *proc, uint64_t *ret)
{
    _cleanup_free_ char *s = NULL;
    int r = setup_read_proc(proc, "meminfo", 1u << 20, &s);
    if (r < 0)
        return r;
    const char *p = strstr(s, "MemTotal:");
    unsigned long long kb;
    if (!p || sscanf(p, "MemTotal: %llu kB", &kb) != 1)
        return -EINVAL;
    *ret = (uint64_t)kb * 1024;
    return 0;
}

/* --cells-memory-mb, else 3/4 of the least of the machine's memory and the limits (`knob`)
 * of dir and its ancestors up to the mount point mnt: what is left is the supervisor's. */
static int setup_budget(struct cgroup_env *env, const struct cgroup_options *o, const char *proc,
                        const char *dir, const char *mnt, const char *knob)
{
    free(env->budget_from); /* from a failed v2 attempt before v1 */
    env->budget_from = NULL;
    if (o->cells_bytes) {
        env->budget = o->cells_bytes;
        return (env->budget_from = strdup("--cells-memory-mb")) ? 0 : -ENOMEM;
    }
    uint64_t least = 0;
    int r = setup_mem_total(proc, &least);
    if (r < 0)
        return r;
    _cleanup_free_ char *where = strdup("the machine's memory");
    _cleanup_free_ char *d = strdup(dir);
    if (!where || !d)
        return -ENOMEM;
    size_t ml = strlen(mnt);
    for (;;) {
        uint64_t v;
        if (cgroup_read_u64(env, d, knob, &v) == 0 && v < least) {
            least = v;
            free(where);
            if (!(where = fmt_str("%s/%s", d, knob)))
                return -ENOMEM;
        }
        char *slash = strrchr(d, '/');
        if (strlen(d) <= ml || !slash || slash == d)
            break;
        *slash = '\0';
    }
    env->budget = least / 4 * 3 / (1u << 20) * (1u << 20);
    env->budget_from = fmt_str("3/4 of %s (%" PRIu64 " MiB)", where, least >> 20);
    return env->budget_from ? 0 : -ENOMEM;
}

/* ---- cgroup v2 --------------------------------------------------------------------------- */

/* Move every process of base into the leaf base/supervisor (created if needed), until none
 * is left: processes may fork while we move them, so read cgroup.procs again each round. */
static int setup_leaf_move(struct cgroup_env *env, const char *base, char **ret_leaf, char **why)
{
    _cleanup_free_ char *leaf = cgroup_join(base, "supervisor");
    if (!leaf)
        return -ENOMEM;
    int r = env->fs.mkdir(env->fs.ctx, leaf);
    if (r < 0 && r != -EEXIST)
        return fmt_error(why, -r, "cannot create the leaf %s for the processes of %s: %s", leaf,
                         base, strerror(-r));
    for (int round = 0; round < SETUP_MOVE_ROUNDS; round++) {
        _cleanup_free_ char *procs = NULL;
        if ((r = cgroup_read(env, base, "cgroup.procs", &procs)) < 0)
            return fmt_error(why, -r, "cannot read %s/cgroup.procs: %s", base, strerror(-r));
        bool any = false;
        for (char *save = NULL, *pid = strtok_r(procs, "\n", &save); pid;
             pid = strtok_r(NULL, "\n", &save)) {
            any = true;
            r = cgroup_write(env, leaf, "cgroup.procs", pid);
            if (r == -ESRCH)
                continue; /* exited meanwhile */
            if (r < 0)
                return fmt_error(why, -r, "cannot move process %s from %s into %s: %s", pid, base,
                                 leaf, strerror(-r));
            env->moved++;
        }
        if (!any) {
            free(*ret_leaf); /* a second move (cpu after memory) finds the same leaf */
            *ret_leaf = TAKE_PTR(leaf);
            return 0;
        }
    }
    return fmt_error(why, EBUSY, "processes keep appearing in %s; cannot empty it into %s", base,
                     leaf);
}

static const char *setup_hint(int err)
{
    switch (err) {
    case EACCES:
    case EPERM:
        return "; run sandboxd as root, or delegate this cgroup to its user (systemd: "
               "Delegate=yes) or pass --cgroup-root a delegated one";
    case EROFS:
        return "; the cgroup filesystem is read-only (in a container: give it a writable, "
               "delegated cgroup)";
    default:
        return "";
    }
}

/* Enable what dir's children need (the words of `want` not yet in its subtree_control). */
static int setup_enable(struct cgroup_env *env, const char *dir, const char *want)
{
    _cleanup_free_ char *have = NULL;
    int r = cgroup_read(env, dir, "cgroup.subtree_control", &have);
    if (r < 0)
        return r;
    _cleanup_free_ char *w = strdup(want), *line = strdup("");
    if (!w || !line)
        return -ENOMEM;
    for (char *save = NULL, *c = strtok_r(w, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
        if (setup_word_in(have, c))
            continue;
        char *more = fmt_str("%s%s+%s", line, *line ? " " : "", c);
        if (!more)
            return -ENOMEM;
        free(line);
        line = more;
    }
    return *line ? cgroup_write(env, dir, "cgroup.subtree_control", line) : 0;
}

/* Enable `want` in base's subtree_control, moving base's processes into a leaf when the
 * kernel says EBUSY (the no-internal-processes rule), as nsjail's cgroup2 setup does
 * (nsjail moves only itself, which still fails when a shell shares the cgroup). */
static int setup_enable_base(struct cgroup_env *env, const char *base, const char *want,
                             char **ret_leaf, char **why)
{
    int r = setup_enable(env, base, want);
    if (r == -EBUSY) {
        if ((r = setup_leaf_move(env, base, ret_leaf, why)) < 0)
            return r;
        r = setup_enable(env, base, want);
    }
    if (r < 0)
        return fmt_error(why, -r, "cannot enable %s for the children of %s: %s%s", want, base,
                         strerror(-r), setup_hint(-r));
    return 0;
}

/* A cells directory left by an earlier instance: take it over when nothing runs in it. */
/* Remove the cell directories a dead sandboxd left in dir (empty ones: rmdir refuses the
 * others, which are logged and skipped, so their names are not reused). */
static int setup_sweep_stale(struct cgroup_env *env, const char *dir, char **why)
{
    DIR *d = opendir(dir);
    if (!d)
        return fmt_error(why, errno, "cannot list %s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        _cleanup_free_ char *stale = cgroup_join(dir, e->d_name);
        int r = stale ? env->fs.rmdir(env->fs.ctx, stale) : -ENOMEM;
        if (r < 0)
            log_errno(LOG_WARN, r, "cgroup: cannot remove the stale cell %s", stale);
    }
    closedir(d);
    return 0;
}

static int setup_reuse_cells(struct cgroup_env *env, const char *cells, char **why)
{
    uint64_t populated = 0;
    if (cgroup_read_keyed(env, cells, "cgroup.events", "populated", &populated) == 0 && populated)
        return fmt_error(why, EBUSY,
                         "%s holds processes: another sandboxd (or what is left of one) uses "
                         "this cgroup; stop it, or give each instance its own --cgroup-root",
                         cells);
    return setup_sweep_stale(env, cells, why);
}

static bool setup_exists(struct cgroup_env *env, const char *dir, const char *knob, int flags)
{
    _cleanup_free_ char *p = cgroup_join(dir, knob);
    int fd = p ? env->fs.open(env->fs.ctx, p, flags) : -ENOMEM;
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* Does memory.peak take "reset" (kernel 6.12+: a new peak for that open file alone)? Try it
 * on cells/, where it changes nothing for anyone else. Opening is no test: cgroupfs lets root
 * open a read-only knob for writing, and only the write fails (EINVAL). */
static bool setup_peak_resettable(struct cgroup_env *env, const char *cells)
{
    _cleanup_free_ char *p = cgroup_join(cells, "memory.peak");
    _cleanup_close_ int fd = p ? env->fs.open(env->fs.ctx, p, O_RDWR) : -ENOMEM;
    return fd >= 0 && fd_write_all(fd, "reset\n", 6, 0) == 0;
}

static int setup_v2(struct cgroup_env *env, const struct cgroup_options *o, const char *proc,
                    const char *base, const char *mnt, char **why)
{
    _cleanup_free_ char *ctrls = NULL, *leaf = NULL, *cells = NULL;
    int r = cgroup_read(env, base, "cgroup.controllers", &ctrls);
    if (r < 0)
        return fmt_error(why, -r, "%s is not a cgroup v2 directory (cgroup.controllers: %s)", base,
                         strerror(-r));
    ctrls[strcspn(ctrls, "\n")] = '\0';
    const char *missing = !setup_word_in(ctrls, "memory") ? "memory"
                          : !setup_word_in(ctrls, "pids") ? "pids"
                                                          : NULL;
    _cleanup_free_ char *v1 = NULL;
    if (missing && setup_self_path(proc, missing, &v1) == 0)
        return fmt_error(why, ENOTSUP,
                         "%s does not offer the %s controller: it is bound to a cgroup v1 "
                         "hierarchy (a hybrid host)",
                         base, missing);
    if (missing)
        return fmt_error(why, ENOTSUP,
                         "%s does not offer the %s controller (its cgroup.controllers: \"%s\"); "
                         "its parent must enable it for it (systemd: Delegate=yes), or pass "
                         "--cgroup-root a delegated cgroup",
                         base, missing, ctrls);
    bool cpu = setup_word_in(ctrls, "cpu");
    if ((r = setup_enable_base(env, base, "memory pids", &leaf, why)) < 0)
        return r;
    /* cpu is optional: cpu.stat exists without it, but it gives each child (cells, and the
     * supervisor) an equal cpu.weight, and --cpus needs it. */
    _cleanup_free_ char *cpu_why = NULL;
    if (cpu && setup_enable_base(env, base, "cpu", &leaf, &cpu_why) < 0) {
        log_warn("cgroup: %s", cpu_why);
        if (o->cpus_milli)
            env->cpu_reason = TAKE_PTR(cpu_why);
        cpu = false;
    } else if (!cpu && o->cpus_milli) {
        env->cpu_reason = fmt_str("%s does not offer the cpu controller (its "
                                  "cgroup.controllers: \"%s\")",
                                  base, ctrls);
    }
    const char *want = cpu ? "memory pids cpu" : "memory pids";
    if (!(cells = cgroup_join(base, "cells")))
        return -ENOMEM;
    r = env->fs.mkdir(env->fs.ctx, cells);
    if (r == -EEXIST && (r = setup_reuse_cells(env, cells, why)) < 0)
        return r;
    if (r < 0)
        return fmt_error(why, -r, "cannot create %s: %s%s", cells, strerror(-r), setup_hint(-r));
    if ((r = setup_budget(env, o, proc, base, mnt, "memory.max")) < 0) {
        fmt_error(why, -r, "cannot choose the cells' memory budget: %s", strerror(-r));
        goto fail;
    }
    if ((r = setup_enable(env, cells, want)) < 0 ||
        (r = cgroup_writef(env, cells, "memory.max", "%" PRIu64, env->budget)) < 0) {
        fmt_error(why, -r, "cannot prepare %s: %s", cells, strerror(-r));
        goto fail;
    }
    env->have_peak = setup_exists(env, cells, "memory.peak", O_RDONLY);
    env->peak_resettable = env->have_peak && setup_peak_resettable(env, cells);
    env->have_kill = setup_exists(env, cells, "cgroup.kill", O_WRONLY);
    env->have_oom_group = setup_exists(env, cells, "memory.oom.group", O_RDONLY);
    env->cpu_quota = cpu && o->cpus_milli;
    if (!(env->controllers = strdup(want)) || !(env->base = strdup(base))) {
        r = -ENOMEM;
        goto fail;
    }
    env->leaf = TAKE_PTR(leaf);
    env->cells = TAKE_PTR(cells);
    env->mode = CGROUP_V2;
    return 0;
fail:
    (void)env->fs.rmdir(env->fs.ctx, cells); /* ours, and empty: nothing was put in it */
    free(env->controllers);
    env->controllers = NULL;
    return r;
}

/* ---- cgroup v1 --------------------------------------------------------------------------- */

static int setup_v1_base(struct cgroup_env *env, const char *proc, const char *controller,
                         char **ret, char **ret_mnt, char **why)
{
    _cleanup_free_ char *self = NULL;
    int r = setup_self_dir(proc, controller, &self, ret_mnt);
    if (r < 0)
        return fmt_error(why, -r, "no cgroup v1 %s hierarchy holding our cgroup is mounted",
                         controller);
    char *base = fmt_str("%s/sandboxd-%d", self, (int)getpid());
    if (!base)
        return -ENOMEM;
    r = env->fs.mkdir(env->fs.ctx, base);
    if (r < 0 && r != -EEXIST) {
        fmt_error(why, -r, "cannot create %s: %s%s", base, strerror(-r), setup_hint(-r));
        free(base);
        return r;
    }
    /* It exists when an earlier sandboxd with our pid was killed before it could clean up:
     * its cells' names would collide with ours. */
    if (r == -EEXIST && (r = setup_sweep_stale(env, base, why)) < 0) {
        free(base);
        return r;
    }
    *ret = base;
    return 0;
}

static int setup_v1(struct cgroup_env *env, const struct cgroup_options *o, const char *proc,
                    char **why)
{
    _cleanup_free_ char *mnt = NULL, *ignored = NULL;
    int r = setup_v1_base(env, proc, "memory", &env->v1_memory, &mnt, why);
    if (r < 0 || (r = setup_v1_base(env, proc, "pids", &env->v1_pids, NULL, why)) < 0)
        return r;
    if (setup_v1_base(env, proc, "cpuacct", &env->v1_cpuacct, NULL, &ignored) < 0)
        log_info("cgroup: %s; cpu time comes from rusage", ignored);
    if (o->cpus_milli) {
        _cleanup_free_ char *cpu = NULL;
        if (setup_v1_base(env, proc, "cpu", &cpu, NULL, &env->cpu_reason) == 0) {
            env->cpu_quota = true;
            if (!env->v1_cpuacct || strcmp(cpu, env->v1_cpuacct) != 0)
                env->v1_cpu = TAKE_PTR(cpu); /* else co-mounted: the cpuacct dirs take it */
        }
    }
    /* Only kernels before 6.x have the knob, and there it is 0 unless a parent set it: the
     * budget must cover the cells below. */
    (void)cgroup_write(env, env->v1_memory, "memory.use_hierarchy", "1");
    _cleanup_free_ char *self = strdup(env->v1_memory);
    if (!self)
        return -ENOMEM;
    *strrchr(self, '/') = '\0';
    if ((r = setup_budget(env, o, proc, self, mnt, "memory.limit_in_bytes")) < 0 ||
        (r = cgroup_writef(env, env->v1_memory, "memory.limit_in_bytes", "%" PRIu64, env->budget)) <
            0)
        return fmt_error(why, -r, "cannot set the cells' budget on %s: %s", env->v1_memory,
                         strerror(-r));
    env->controllers =
        fmt_str("memory pids%s%s", env->v1_cpuacct ? " cpuacct" : "", env->cpu_quota ? " cpu" : "");
    if (!env->controllers)
        return -ENOMEM;
    env->mode = CGROUP_V1;
    return 0;
}

/* Undo a failed v1 attempt (the bases are ours and empty). */
static void setup_v1_drop(struct cgroup_env *env)
{
    char **dirs[] = {&env->v1_memory, &env->v1_pids, &env->v1_cpuacct, &env->v1_cpu};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (*dirs[i])
            (void)env->fs.rmdir(env->fs.ctx, *dirs[i]);
        free(*dirs[i]);
        *dirs[i] = NULL;
    }
}

/* ---- the environment --------------------------------------------------------------------- */

static void setup_log(const struct cgroup_env *env)
{
    if (env->mode == CGROUP_NONE) {
        log_warn("cgroup: no cgroup limits (rlimits only): %s", env->reason);
        return;
    }
    if (env->leaf)
        log_info("cgroup: moved %u processes of %s into the leaf %s", env->moved, env->base,
                 env->leaf);
    log_info("cgroup: %s, cells in %s with %s, memory budget %" PRIu64 " MiB (%s)%s%s",
             cgroup_mode_name(env->mode), env->cells ? env->cells : env->v1_memory,
             env->controllers, env->budget >> 20, env->budget_from,
             env->cpu_reason ? "; no --cpus quota: " : "", env->cpu_reason ? env->cpu_reason : "");
}

/* ---- priming the migration lock (cgroup.h) ----------------------------------------------- */

static void *setup_prime_thread(void *arg)
{
    (void)arg;
    /* v1: this thread into the memory (else pids) cgroup it is in; v2: the process into its
     * own cgroup. Either is a move to where it already is: nothing changes hands. */
    static const char *const tries[][2] = {
        {"memory", "tasks"}, {"pids", "tasks"}, {"", "cgroup.procs"}};
    for (size_t i = 0; i < ARRAY_SIZE(tries); i++) {
        _cleanup_free_ char *dir = NULL, *file = NULL;
        if (setup_self_dir("/proc", tries[i][0], &dir, NULL) < 0)
            continue;
        char id[32];
        snprintf(id, sizeof(id), "%d", (int)(*tries[i][0] ? gettid() : getpid()));
        if ((file = cgroup_join(dir, tries[i][1])) && fd_write_file(file, id) == 0)
            break;
    }
    return NULL;
}

void cgroup_prime(void)
{
    pthread_t t;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return;
    (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, setup_prime_thread, NULL) != 0)
        log_debug("cgroup: no thread to prime the migration lock; the first attach waits");
    pthread_attr_destroy(&attr);
}

int cgroup_env_init(struct cgroup_env *env, const struct cgroup_options *opt)
{
    *env = (struct cgroup_env){
        .mode = CGROUP_NONE,
        .fs = opt->fs ? *opt->fs : cgroup_fs_real,
        .cpus_milli = opt->cpus_milli,
        .required = opt->require || opt->root,
    };
    atomic_init(&env->next_id, 1);
    pthread_mutex_init(&env->graveyard_lock, NULL);
    const char *proc = opt->proc ? opt->proc : "/proc";
    _cleanup_free_ char *why2 = NULL, *why1 = NULL, *self = NULL, *mnt = NULL;
    int r = 0;
    if (!opt->want) {
        env->reason = strdup("disabled by --no-cgroups");
    } else if (opt->root) {
        _cleanup_free_ char *root = strdup(opt->root);
        if (!root)
            return -ENOMEM;
        size_t n = strlen(root);
        while (n > 1 && root[n - 1] == '/')
            root[--n] = '\0';
        r = setup_v2(env, opt, proc, root, root, &why2);
        if (r < 0)
            env->reason = fmt_str("--cgroup-root: %s", why2 ? why2 : strerror(-r));
    } else {
        bool v2 = setup_self_dir(proc, "", &self, &mnt) == 0;
        _cleanup_free_ char *m = NULL, *p = NULL;
        bool v1 =
            setup_self_path(proc, "memory", &m) == 0 || setup_self_path(proc, "pids", &p) == 0;
        if (v2 && (r = setup_v2(env, opt, proc, self, mnt, &why2)) == 0)
            goto done;
        /* A failed v2 attempt may have left a cpu reason; v1 starts afresh. */
        free(env->cpu_reason);
        env->cpu_reason = NULL;
        env->moved = 0;
        if (v1 && (r = setup_v1(env, opt, proc, &why1)) == 0)
            goto done;
        setup_v1_drop(env);
        if (r == -ENOMEM)
            return r;
        if (!v2 && !v1)
            env->reason = strdup("no cgroup filesystem holds our cgroup (neither cgroup2 nor "
                                 "the v1 memory and pids hierarchies are mounted)");
        else if (v2 && v1 && why1)
            env->reason = fmt_str("cgroup v2: %s; cgroup v1: %s", why2 ? why2 : "unusable", why1);
        else
            env->reason = fmt_str("cgroup %s: %s", v2 ? "v2" : "v1", v2 ? why2 : why1);
    }
done:
    if (env->mode == CGROUP_NONE && !env->reason)
        return -ENOMEM;
    if (opt->cpus_milli && !env->cpu_quota && !env->cpu_reason)
        env->cpu_reason = strdup("--cpus needs cgroups, which are not in use");
    setup_log(env);
    if (env->required && (env->mode == CGROUP_NONE || (opt->cpus_milli && !env->cpu_quota)))
        return r < 0 ? r : -EPERM;
    return 0;
}

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
    cgroup_env_bury(env);
    pthread_mutex_destroy(&env->graveyard_lock);
    /* Best effort: the parents are empty once every cell is gone. The leaf stays: sandboxd
     * itself is in it. */
    if (env->cells)
        (void)env->fs.rmdir(env->fs.ctx, env->cells);
    setup_v1_drop(env);
    free(env->base);
    free(env->leaf);
    free(env->cells);
    free(env->controllers);
    free(env->budget_from);
    free(env->reason);
    free(env->cpu_reason);
    *env = (struct cgroup_env){.mode = CGROUP_NONE};
}

json_t *cgroup_env_describe(const struct cgroup_env *env)
{
    json_t *o = json_pack("{s:s, s:b, s:s*, s:s*}", "mode", cgroup_mode_name(env->mode), "required",
                          env->required, "reason", env->reason, "cpuReason", env->cpu_reason);
    if (!o || env->mode == CGROUP_NONE)
        return o;
    json_t *ctrls = json_array();
    _cleanup_free_ char *words = strdup(env->controllers);
    for (char *save = NULL, *w = words ? strtok_r(words, " ", &save) : NULL; w && ctrls;
         w = strtok_r(NULL, " ", &save))
        json_array_append_new(ctrls, json_string(w));
    json_object_set_new(o, "controllers", ctrls ? ctrls : json_null());
    json_object_set_new(o, "cellsMemoryBytes", json_integer((json_int_t)env->budget));
    json_object_set_new(o, "cellsMemoryFrom", json_string(env->budget_from));
    json_object_set_new(o, "cpus",
                        env->cpu_quota ? json_real(env->cpus_milli / 1000.0) : json_null());
    if (env->mode == CGROUP_V1) {
        json_object_set_new(o, "cells", json_string(env->v1_memory));
        json_object_set_new(o, "memoryPeak", json_string("memory.max_usage_in_bytes"));
        json_object_set_new(o, "kill", json_string("pid namespace"));
        json_object_set_new(o, "oomGroup", json_false());
        return o;
    }
    json_object_set_new(o, "base", json_string(env->base));
    json_object_set_new(o, "cells", json_string(env->cells));
    json_object_set_new(o, "supervisorLeaf", env->leaf ? json_string(env->leaf) : json_null());
    json_object_set_new(o, "processesMoved", json_integer(env->moved));
    json_object_set_new(
        o, "memoryPeak",
        json_string(!env->have_peak ? "rusage (no memory.peak: kernel before 5.19)"
                    : env->peak_resettable
                        ? "memory.peak, per execution"
                        : "memory.peak since the cell started (kernel before 6.12 cannot reset "
                          "it)"));
    json_object_set_new(o, "kill",
                        json_string(env->have_kill ? "cgroup.kill"
                                                   : "pid namespace (no cgroup.kill: kernel "
                                                     "before 5.14)"));
    json_object_set_new(o, "oomGroup", json_boolean(env->have_oom_group));
    return o;
}
