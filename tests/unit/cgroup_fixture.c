// SPDX-License-Identifier: MIT
/* See cgroup_fixture.h. */
#include "cgroup_fixture.h"

/* ---- plain files ------------------------------------------------------------------------ */

char *path_of(const char *dir, const char *name)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

void put(const char *dir, const char *name, const char *content)
{
    char *p = path_of(dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    free(p);
}

/* The file's content (caller frees), NULL when it does not exist. */
char *get(const char *dir, const char *name)
{
    char *p = path_of(dir, name), *s = NULL;
    int r = fd_read_file(AT_FDCWD, p, 1 << 20, &s, NULL);
    free(p);
    return r < 0 ? NULL : s;
}

void assert_file(const char *dir, const char *name, const char *want)
{
    char *s = get(dir, name);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

bool exists(const char *dir, const char *name)
{
    char *p = path_of(dir, name);
    bool ok = access(p, F_OK) == 0;
    free(p);
    return ok;
}

bool word_in(const char *list, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, " \n");
        if (n == wl && strncmp(p, word, n) == 0)
            return true;
        p += n;
        p += strspn(p, " \n");
    }
    return false;
}

char *dir_of(const char *path)
{
    char *d = strdup(path);
    *strrchr(d, '/') = '\0';
    return d;
}

/* ---- the fake kernel --------------------------------------------------------------------- */

static char *pid_to_drop;

/* nftw callback: drop pid_to_drop from every cgroup.procs (a migration leaves the old one). */
int drop_pid(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    const char *base = path + ftw->base;
    if (type != FTW_F || strcmp(base, "cgroup.procs") != 0)
        return 0;
    char *dir = dir_of(path), *s = get(dir, "cgroup.procs");
    char *out = calloc(1, strlen(s) + 1);
    for (char *save = NULL, *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (strcmp(l, pid_to_drop) != 0) {
            strcat(out, l);
            strcat(out, "\n");
        }
    put(dir, "cgroup.procs", out);
    free(out);
    free(s);
    free(dir);
    return 0;
}

bool has_procs(const char *dir)
{
    char *s = get(dir, "cgroup.procs");
    bool any = s && *s;
    free(s);
    return any;
}

static bool in_v2(struct fake *f, const char *path)
{
    return strncmp(path, f->root, strlen(f->root)) == 0;
}

/* What a v2 cgroup is offered: its parent's subtree_control (the root: its own file). */
char *offered(struct fake *f, const char *dir)
{
    if (strcmp(dir, f->root) == 0)
        return get(dir, "cgroup.controllers");
    char *parent = dir_of(dir), *s = get(parent, "cgroup.subtree_control");
    free(parent);
    return s;
}

/* Where a migration looks for the pid's old cgroup: the v2 tree, or the v1 hierarchy. */
char *hierarchy_of(struct fake *f, const char *path)
{
    if (in_v2(f, path))
        return strdup(f->root);
    const char *v1 = strstr(path, "/v1/");
    assert_non_null(v1);
    return strndup(path, (size_t)(strchrnul(v1 + 4, '/') - path));
}

int fake_write(void *ctx, const char *path, const char *value)
{
    struct fake *f = ctx;
    if (f->deny && strncmp(path, f->deny, strlen(f->deny)) == 0)
        return -EACCES;
    if (access(path, F_OK) < 0)
        return -ENOENT;
    char *dir = dir_of(path);
    const char *knob = strrchr(path, '/') + 1;
    int r = 0;
    bool root = strcmp(dir, f->root) == 0;
    if (in_v2(f, path) && strcmp(knob, "cgroup.subtree_control") == 0) {
        char *offer = offered(f, dir), *now = get(dir, knob);
        char line[256] = "";
        snprintf(line, sizeof(line), "%s", now);
        line[strcspn(line, "\n")] = '\0';
        char *v = strdup(value);
        for (char *save = NULL, *t = strtok_r(v, " ", &save); t && !r;
             t = strtok_r(NULL, " ", &save)) {
            if (t[0] != '+' || !word_in(offer, t + 1))
                r = -ENOENT; /* what the kernel answers for a controller not offered */
            else if (!root && has_procs(dir))
                r = -EBUSY;
            else if (!word_in(line, t + 1))
                snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", *line ? " " : "",
                         t + 1);
        }
        f->ebusy += r == -EBUSY;
        if (!r)
            put(dir, knob, line);
        free(v);
        free(offer);
        free(now);
    } else if (strcmp(knob, "cgroup.procs") == 0) {
        char *enabled = in_v2(f, path) ? get(dir, "cgroup.subtree_control") : NULL;
        if (enabled && *enabled && !root) {
            r = -EBUSY;
        } else {
            pid_to_drop = strdup(value);
            pid_to_drop[strcspn(pid_to_drop, "\n")] = '\0';
            char *top = hierarchy_of(f, path);
            assert_int_equal(nftw(top, drop_pid, 16, FTW_PHYS), 0);
            char *s = get(dir, knob);
            char *more = NULL;
            assert_true(asprintf(&more, "%s%s\n", s, pid_to_drop) > 0);
            put(dir, knob, more);
            f->moves++;
            free(more);
            free(s);
            free(top);
            free(pid_to_drop);
        }
        free(enabled);
    } else {
        put(dir, knob, value);
    }
    free(dir);
    return r;
}

int fake_read(void *ctx, const char *path, char **ret)
{
    struct fake *f = ctx;
    if (access(path, F_OK) < 0)
        return -ENOENT;
    if (in_v2(f, path) && strcmp(strrchr(path, '/') + 1, "cgroup.controllers") == 0) {
        char *dir = dir_of(path);
        *ret = offered(f, dir);
        free(dir);
        return 0;
    }
    return fd_read_file(AT_FDCWD, path, 1 << 20, ret, NULL);
}

/* The interface files a new cgroup has: v2 from the parent's subtree_control, v1 from the
 * hierarchy it is in. */
void fake_populate(struct fake *f, const char *path)
{
    put(path, "cgroup.procs", "");
    if (!in_v2(f, path)) {
        if (strstr(path, "/v1/memory/")) {
            put(path, "memory.limit_in_bytes", "9223372036854771712\n");
            put(path, "memory.max_usage_in_bytes", "0\n");
            put(path, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
            put(path, "memory.use_hierarchy", "0\n");
        } else if (strstr(path, "/v1/pids/")) {
            put(path, "pids.max", "max\n");
        } else if (strstr(path, "/v1/cpuacct/")) {
            put(path, "cpuacct.usage", "0\n");
        } else if (strstr(path, "/v1/cpu/")) {
            put(path, "cpu.cfs_period_us", "100000\n");
            put(path, "cpu.cfs_quota_us", "-1\n");
        }
        return;
    }
    char *parent = dir_of(path), *ctrls = get(parent, "cgroup.subtree_control");
    put(path, "cgroup.controllers", ctrls);
    put(path, "cgroup.subtree_control", "");
    put(path, "cgroup.events", "populated 0\nfrozen 0\n");
    put(path, "cgroup.kill", "");
    put(path, "cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n");
    if (word_in(ctrls, "memory")) {
        put(path, "memory.max", "max\n");
        put(path, "memory.swap.max", "max\n");
        put(path, "memory.oom.group", "0\n");
        put(path, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
        if (!f->no_peak)
            put(path, "memory.peak", "0\n");
    }
    if (word_in(ctrls, "pids"))
        put(path, "pids.max", "max\n");
    if (word_in(ctrls, "cpu"))
        put(path, "cpu.max", "max 100000\n");
    free(ctrls);
    free(parent);
}

int fake_mkdir(void *ctx, const char *path)
{
    struct fake *f = ctx;
    if (f->deny && strncmp(path, f->deny, strlen(f->deny)) == 0)
        return -EACCES;
    if (mkdir(path, 0755) < 0)
        return -errno;
    fake_populate(f, path);
    return 0;
}

int rm_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

int count_subdirs(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    return type == FTW_D && ftw->level == 1 ? 1 : 0; /* nftw stops at the first nonzero */
}

int fake_rmdir(void *ctx, const char *path)
{
    if (access(path, F_OK) < 0)
        return -ENOENT;
    if (has_procs(path) || nftw(path, count_subdirs, 16, FTW_PHYS) != 0)
        return -EBUSY;
    return nftw(path, rm_file, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

int fake_open(void *ctx, const char *path, int flags)
{
    struct fake *f = ctx;
    const char *knob = strrchr(path, '/') + 1;
    /* Before 6.12 memory.peak has no write handler, yet cgroupfs lets root open it for writing:
     * only the write fails. A read-only fd behind the caller's back fails the same way. */
    if (strcmp(knob, "memory.peak") == 0 && !f->peak_reset)
        flags = (flags & ~O_ACCMODE) | O_RDONLY;
    int fd = open(path, flags | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* ---- fixtures ---------------------------------------------------------------------------- */

struct cgroup_fs fake_fs(struct fake *f)
{
    return (struct cgroup_fs){.write = fake_write,
                              .read = fake_read,
                              .mkdir = fake_mkdir,
                              .rmdir = fake_rmdir,
                              .open = fake_open,
                              .ctx = f};
}

/* Make a v2 cgroup below the fake root by hand, as the host set it up before us. */
char *host_cgroup(struct fake *f, const char *rel, const char *procs)
{
    char *dir = path_of(f->root, rel);
    assert_int_equal(mkdir(dir, 0755), 0);
    fake_populate(f, dir);
    put(dir, "cgroup.procs", procs);
    return dir;
}

/* A fake host: a cgroup2 root offering cpu memory pids, enabled for its children, and a
 * machine with 8 GiB; we run in /user.slice/shell with two other processes, the way a
 * login shell and a sibling share a cgroup. */
int setup(void **state)
{
    struct fake *f = calloc(1, sizeof(*f));
    snprintf(f->tmp, sizeof(f->tmp), "/tmp/sandboxd-cgtest.XXXXXX");
    assert_non_null(mkdtemp(f->tmp));
    snprintf(f->proc, sizeof(f->proc), "%s/proc", f->tmp);
    snprintf(f->root, sizeof(f->root), "%s/cgroup fs", f->tmp);
    char self[PATH_MAX];
    snprintf(self, sizeof(self), "%s/self", f->proc);
    assert_int_equal(mkdir(f->proc, 0755), 0);
    assert_int_equal(mkdir(self, 0755), 0);
    assert_int_equal(mkdir(f->root, 0755), 0);
    put(f->proc, "meminfo", "MemTotal:        8388608 kB\nMemFree:         1000 kB\n");
    put(self, "cgroup", "0::/user.slice/shell\n");
    char *mi = NULL;
    assert_true(asprintf(&mi,
                         "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
                         "30 22 0:26 / %s/cgroup\\040fs rw,nosuid - cgroup2 cgroup2 rw\n",
                         f->tmp) > 0);
    put(self, "mountinfo", mi);
    free(mi);
    put(f->root, "cgroup.controllers", "cpuset cpu io memory pids\n");
    put(f->root, "cgroup.subtree_control", "cpu memory pids\n");
    put(f->root, "cgroup.procs", "1\n");
    free(host_cgroup(f, "user.slice", ""));
    char *slice = path_of(f->root, "user.slice");
    put(slice, "cgroup.subtree_control", "cpu memory pids\n");
    put(slice, "memory.max", "4294967296\n"); /* 4 GiB: tighter than the machine */
    free(slice);
    char *procs = NULL;
    assert_true(asprintf(&procs, "101\n102\n%d\n", (int)getpid()) > 0);
    free(host_cgroup(f, "user.slice/shell", procs));
    free(procs);
    *state = f;
    return 0;
}

int teardown(void **state)
{
    struct fake *f = *state;
    assert_int_equal(nftw(f->tmp, rm_file, 16, FTW_DEPTH | FTW_PHYS), 0);
    free(f);
    return 0;
}

int init_env(struct fake *f, struct cgroup_env *env, struct cgroup_options *o, struct cgroup_fs *fs)
{
    *fs = fake_fs(f);
    o->want = true;
    o->proc = f->proc;
    o->fs = fs;
    return cgroup_env_init(env, o);
}
