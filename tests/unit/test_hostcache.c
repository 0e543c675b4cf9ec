// SPDX-License-Identifier: MIT
/* Unit tests: jail/hostcache — the host discovery of jail_config_init kept in a cache
 * directory. A replay plans exactly what discovery plans; a cache file that is corrupt, stale
 * (a package list or a walked directory changed) or that another user could have written is
 * not used, discovery runs again and writes it anew; a directory others can write gets no
 * cache at all; and an entry naming a private path binds nothing. Each jail_config_init here
 * runs the real discovery of this host (the interpreter, its directories, the toolbox). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>

#include "jail/hostcache.h"
#include "jail/jail.h"
#include "jail/mount.h"

static char root[64];
static char runtime[PATH_MAX];
static char cache[128];
static char file[256]; /* the one cache file of the options below */

static void path_of(char *out, size_t n, const char *rel)
{
    snprintf(out, n, "%s/%s", root, rel);
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

/* The runtime next to the sources: tests/unit/test_hostcache.c -> runtime/ (__FILE__ is
 * absolute, or relative to the build directory meson runs tests in). */
static void find_runtime(void)
{
    char src[PATH_MAX];
    const char *top = getenv("MESON_SOURCE_ROOT");
    if (top)
        snprintf(src, sizeof(src), "%s/runtime", top);
    else
        snprintf(src, sizeof(src), "%.*s/../../runtime", (int)(strrchr(__FILE__, '/') - __FILE__),
                 __FILE__);
    assert_non_null(realpath(src, runtime));
}

static struct jail_options options(const char *cache_dir, const char **site)
{
    static char dpkg[128];
    path_of(dpkg, sizeof(dpkg), "dpkg");
    return (struct jail_options){
        .python = "/usr/bin/python3",
        .runtime_dir = runtime,
        .site_packages = site,
        .dpkg_dir = dpkg,
        .tmp_bytes = 16u << 20,
        .cgroup = {.want = false},
        /* No filter: it is not the cache's business, and valgrind cannot run seccomp(2). */
        .insecure = JAIL_INSECURE_NO_SECCOMP,
        .cache_dir = cache_dir,
    };
}

static const char **site_list(void)
{
    static char site[128];
    static const char *list[2];
    path_of(site, sizeof(site), "site");
    list[0] = site;
    return list;
}

/* The cache file's inode: a save renames a new file over it, a replay leaves it. */
static ino_t cache_ino(void)
{
    struct stat st;
    if (!*file || lstat(file, &st) < 0)
        return 0;
    return st.st_ino;
}

/* How many entries dir holds; the last "*.cache" one into found (may be NULL). */
static size_t listing(const char *dir, char *found, size_t n)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        count++;
        size_t len = strlen(e->d_name);
        if (found && len > 6 && strcmp(e->d_name + len - 6, ".cache") == 0)
            snprintf(found, n, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return count;
}

/* The cache file (the one file of the directory) into file. */
static void find_file(void)
{
    *file = '\0';
    assert_int_equal(listing(cache, file, sizeof(file)), 1);
    assert_true(*file);
}

static bool same_op(const struct mount_op *a, const struct mount_op *b)
{
    return a->kind == b->kind && strcmp(a->dst, b->dst) == 0 &&
           strcmp(a->src ? a->src : "", b->src ? b->src : "") == 0 && a->flags == b->flags &&
           a->ms_flags == b->ms_flags && a->mode == b->mode && a->data_len == b->data_len &&
           (!a->data_len || memcmp(a->data, b->data, a->data_len) == 0) &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static bool is_bytecode(const struct mount_op *op)
{
    return strstr(op->dst, "sandboxd_runtime/__pycache__") != NULL;
}

/* Do two configurations plan the same file system (bytecode aside when skip_bytecode)? */
static void assert_same_plan(const struct jail_config *a, const struct jail_config *b,
                             bool skip_bytecode)
{
    assert_string_equal(a->python, b->python);
    size_t i = 0, j = 0;
    for (; a->site_dirs[i] && b->site_dirs[i]; i++)
        assert_string_equal(a->site_dirs[i], b->site_dirs[i]);
    assert_null(a->site_dirs[i]);
    assert_null(b->site_dirs[i]);
    for (i = 0, j = 0; i < a->plan.n || j < b->plan.n; i++, j++) {
        while (skip_bytecode && i < a->plan.n && is_bytecode(&a->plan.ops[i]))
            i++;
        while (skip_bytecode && j < b->plan.n && is_bytecode(&b->plan.ops[j]))
            j++;
        if (i >= a->plan.n || j >= b->plan.n)
            break;
        if (!same_op(&a->plan.ops[i], &b->plan.ops[j]))
            fail_msg("op %zu/%zu differs: %s /%s <- %s, and %s /%s <- %s", i, j,
                     mount_op_kind_name(a->plan.ops[i].kind), a->plan.ops[i].dst,
                     a->plan.ops[i].src ? a->plan.ops[i].src : "",
                     mount_op_kind_name(b->plan.ops[j].kind), b->plan.ops[j].dst,
                     b->plan.ops[j].src ? b->plan.ops[j].src : "");
    }
    assert_int_equal(i >= a->plan.n, j >= b->plan.n);
}

static bool plan_has(const struct jail_config *c, enum mount_op_kind kind, const char *path)
{
    for (size_t i = 0; i < c->plan.n; i++)
        if (c->plan.ops[i].kind == kind && strcmp(c->plan.ops[i].dst, path + 1) == 0)
            return true;
    return false;
}

/* The reference: a configuration without a cache, and the first one with it (which discovers
 * and saves); kept for the tests below, which compare against them. */
static struct jail_config plain, first;

static int setup(void **state)
{
    find_runtime();
    /* Not under /tmp: the sandbox has its own /tmp, and a site directory may not lie there. */
    snprintf(root, sizeof(root), "/var/tmp/sbx-hostcache-XXXXXX");
    assert_non_null(mkdtemp(root));
    assert_int_equal(chmod(root, 0755), 0);
    path_of(cache, sizeof(cache), "state/cache");
    char p[256];
    /* A site directory whose link leaves it for a public directory, and a package database. */
    path_of(p, sizeof(p), "site");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "share-a");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "share-b");
    assert_int_equal(mkdir(p, 0755), 0);
    char target[256];
    path_of(target, sizeof(target), "share-a");
    path_of(p, sizeof(p), "site/data");
    assert_int_equal(symlink(target, p), 0);
    path_of(p, sizeof(p), "dpkg");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "dpkg/info");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "dpkg/status");
    write_text(p, "Package: x\nStatus: install ok installed\n\n", 0644);

    struct jail_options o = options(NULL, site_list());
    assert_int_equal(jail_config_init(&plain, &o), 0);
    o = options(cache, site_list());
    assert_int_equal(jail_config_init(&first, &o), 0);
    find_file();
    struct stat st;
    assert_int_equal(lstat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    char dir[256];
    snprintf(dir, sizeof(dir), "%s", cache);
    assert_int_equal(lstat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int teardown(void **state)
{
    jail_config_done(&plain);
    jail_config_done(&first);
    assert_int_equal(nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
    return 0;
}

/* Another configuration from the cache: replayed (the file left as it is) or discovered again
 * (a new file renamed over it); either way it plans what discovery plans. */
static void config_again(bool expect_replay)
{
    ino_t before = cache_ino();
    struct jail_config c;
    struct jail_options o = options(cache, site_list());
    assert_int_equal(jail_config_init(&c, &o), 0);
    find_file();
    if (expect_replay)
        assert_int_equal(cache_ino(), before);
    else
        assert_int_not_equal(cache_ino(), before);
    assert_same_plan(&first, &c, false);
    jail_config_done(&c);
}

static void a_replay_plans_what_discovery_plans(void **state)
{
    /* The cache changes nothing but time: the first (discovered) and the plain configuration
     * plan the same (the cached bytecode of the runtime aside), and a replay the same again. */
    assert_same_plan(&plain, &first, true);
    assert_true(plan_has(&first, MOUNT_OP_BIND, file) == false);
    char share[256];
    path_of(share, sizeof(share), "share-a");
    assert_true(plan_has(&first, MOUNT_OP_BIND, share)); /* what the site's link reaches */
    config_again(true);
    config_again(true);
}

static void a_corrupt_cache_is_discovered_again(void **state)
{
    static const char *const garbage[] = {
        "",
        "sandboxd-hostcache\n{\"format\": 1",
        "sandboxd-hostcache\n{\"format\": 99}",
        "not a cache at all\n\0binary",
        "sandboxd-hostcache\n[1, 2, 3]",
    };
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        write_text(file, garbage[i], 0600);
        config_again(false);
    }
    /* Truncated: a valid file cut short in its bytecode. */
    struct stat st;
    assert_int_equal(lstat(file, &st), 0);
    assert_int_equal(truncate(file, st.st_size / 2), 0);
    config_again(false);
    config_again(true);
}

static void a_stale_cache_is_discovered_again(void **state)
{
    char p[256], target[256];
    /* The package list changed (dpkg rewrote its status file). */
    path_of(p, sizeof(p), "dpkg/status");
    write_text(p, "Package: x\nStatus: install ok installed\n\nPackage: y\n", 0644);
    config_again(false);
    config_again(true);
    /* A walked directory changed: the site's link now reaches another directory. The new plan
     * binds that one, and no longer the old one. */
    path_of(p, sizeof(p), "site/data");
    assert_int_equal(unlink(p), 0);
    path_of(target, sizeof(target), "share-b");
    assert_int_equal(symlink(target, p), 0);
    ino_t before = cache_ino();
    struct jail_config c;
    struct jail_options o = options(cache, site_list());
    assert_int_equal(jail_config_init(&c, &o), 0);
    find_file();
    assert_int_not_equal(cache_ino(), before);
    assert_true(plan_has(&c, MOUNT_OP_BIND, target));
    path_of(p, sizeof(p), "share-a");
    assert_false(plan_has(&c, MOUNT_OP_BIND, p));
    /* A directory it bound changed (its mode: no longer public): not bound any more. */
    assert_int_equal(chmod(target, 0700), 0);
    jail_config_done(&c);
    assert_int_equal(jail_config_init(&c, &o), 0);
    assert_false(plan_has(&c, MOUNT_OP_BIND, target));
    assert_int_equal(chmod(target, 0755), 0);
    jail_config_done(&c);
    /* Back as it was for the next tests. */
    path_of(p, sizeof(p), "site/data");
    assert_int_equal(unlink(p), 0);
    path_of(target, sizeof(target), "share-a");
    assert_int_equal(symlink(target, p), 0);
    config_again(false);
}

static void an_untrusted_cache_file_is_ignored(void **state)
{
    /* Another user's file (giving one away takes root), a file others may write, one with two
     * names, a symlink: each is ignored, discovered again and replaced by a file of ours. */
    if (geteuid() == 0) {
        assert_int_equal(chown(file, 65534, 65534), 0);
        config_again(false);
    }
    assert_int_equal(chmod(file, 0666), 0);
    config_again(false);
    char other[300];
    snprintf(other, sizeof(other), "%s/other-name", root);
    assert_int_equal(link(file, other), 0);
    config_again(false);
    assert_int_equal(unlink(other), 0);
    char moved[300];
    snprintf(moved, sizeof(moved), "%s/moved.cache", root);
    assert_int_equal(rename(file, moved), 0);
    assert_int_equal(symlink(moved, file), 0);
    config_again(false);
    struct stat st;
    assert_int_equal(lstat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(st.st_mode & 07777, 0600);
    unlink(moved);
    config_again(true);
}

static void a_directory_others_can_write_gets_no_cache(void **state)
{
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/open/cache", root);
    char open_dir[256];
    snprintf(open_dir, sizeof(open_dir), "%s/open", root);
    assert_int_equal(mkdir(open_dir, 0777), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    struct jail_config c;
    struct jail_options o = options(dir, site_list());
    assert_int_equal(jail_config_init(&c, &o), 0); /* discovered, without a cache */
    assert_same_plan(&plain, &c, false);
    jail_config_done(&c);
    assert_int_equal(listing(dir, NULL, 0), 0); /* made, then refused: nothing written in it */
}

/* Replace the first occurrence of from in the cache file's entry by to (same file otherwise,
 * still ours and private). */
static void edit_entry(const char *from, const char *to)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char *buf = malloc((size_t)st.st_size + strlen(to) + 1);
    assert_non_null(buf);
    assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
    close(fd);
    char *at = memmem(buf, (size_t)st.st_size, from, strlen(from));
    assert_non_null(at);
    size_t head = (size_t)(at - buf), tail = (size_t)st.st_size - head - strlen(from);
    char *out = malloc(head + strlen(to) + tail);
    assert_non_null(out);
    memcpy(out, buf, head);
    memcpy(out + head, to, strlen(to));
    memcpy(out + head + strlen(to), at + strlen(from), tail);
    fd = open(file, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, out, head + strlen(to) + tail), (ssize_t)(head + strlen(to) + tail));
    close(fd);
    free(buf);
    free(out);
}

/* A path's identity as the cache writes it (hostcache_identity). */
static void identity(const char *path, char *out, size_t n)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    snprintf(out, n, "%" PRIx64 ":%" PRIx64 ":%" PRIx64 ":%lld.%09ld:%lld.%09ld:%o",
             (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
             st.st_ctim.tv_nsec, (unsigned)st.st_mode);
}

static void an_entry_naming_a_private_path_binds_nothing(void **state)
{
    /* Even in a file of ours, with the identity the directory has: every bind is checked as
     * discovery checks it. A private directory named in place of the public one the site's
     * link reaches is not bound. */
    char secret[256], share[256], id[160];
    path_of(secret, sizeof(secret), "secret");
    assert_int_equal(mkdir(secret, 0700), 0);
    path_of(share, sizeof(share), "share-a");
    char from[600], to[600];
    identity(share, id, sizeof(id));
    snprintf(from, sizeof(from), "[\"bind\",\"%s\",\"%s\"]", share, id);
    identity(secret, id, sizeof(id));
    snprintf(to, sizeof(to), "[\"bind\",\"%s\",\"%s\"]", secret, id);
    edit_entry(from, to);
    struct jail_config c;
    struct jail_options o = options(cache, site_list());
    assert_int_equal(jail_config_init(&c, &o), 0);
    assert_false(plan_has(&c, MOUNT_OP_BIND, secret));
    assert_true(plan_has(&c, MOUNT_OP_BIND, share));
    assert_same_plan(&first, &c, false);
    jail_config_done(&c);
    find_file();
    config_again(true);
}

static void old_cache_files_are_pruned(void **state)
{
    /* Other options and other builds leave files of their own: at most HOSTCACHE_KEEP stay,
     * the oldest go first, and leftovers of interrupted saves go. */
    char p[300];
    for (int i = 0; i < 10; i++) {
        snprintf(p, sizeof(p), "%s/%016x.cache", cache, i);
        write_text(p, "sandboxd-hostcache\n{}", 0600);
        struct timespec t[2] = {{.tv_sec = 1000 + i}, {.tv_sec = 1000 + i}};
        assert_int_equal(utimensat(AT_FDCWD, p, t, 0), 0);
    }
    snprintf(p, sizeof(p), "%s/.interrupted.cache.1.tmp", cache);
    write_text(p, "half", 0600);
    struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
    assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
    /* A save (a rediscovery: the file is corrupt) prunes. */
    char ours[sizeof(file)];
    snprintf(ours, sizeof(ours), "%s", file);
    write_text(ours, "corrupt", 0600);
    struct jail_config c;
    struct jail_options o = options(cache, site_list());
    assert_int_equal(jail_config_init(&c, &o), 0);
    jail_config_done(&c);
    assert_int_equal(listing(cache, NULL, 0), HOSTCACHE_KEEP); /* ours and the newest others */
    assert_int_equal(access(p, F_OK), -1);
    for (int i = 0; i < 10; i++) {
        snprintf(p, sizeof(p), "%s/%016x.cache", cache, i);
        assert_int_equal(access(p, F_OK) == 0, i >= 10 - (HOSTCACHE_KEEP - 1));
        (void)unlink(p);
    }
    assert_int_equal(access(ours, F_OK), 0);
    find_file();
    config_again(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_replay_plans_what_discovery_plans),
        cmocka_unit_test(a_corrupt_cache_is_discovered_again),
        cmocka_unit_test(a_stale_cache_is_discovered_again),
        cmocka_unit_test(an_untrusted_cache_file_is_ignored),
        cmocka_unit_test(a_directory_others_can_write_gets_no_cache),
        cmocka_unit_test(an_entry_naming_a_private_path_binds_nothing),
        cmocka_unit_test(old_cache_files_are_pruned),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
