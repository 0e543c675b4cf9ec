// SPDX-License-Identifier: MIT
/* The fake cgroupfs of the jail/cgroup unit tests (cgroup_fixture.c): plain files in a temp
 * dir, a fake /proc, and a struct cgroup_fs that models the kernel's rules over them (see
 * test_cgroup.c). */
#ifndef SANDBOXD_TESTS_CGROUP_FIXTURE_H
#define SANDBOXD_TESTS_CGROUP_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
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

#include "jail/cgroup.h"
#include "util/fdio.h"
#include "util/log.h"

struct fake {
    char tmp[64];     /* the test's directory */
    char proc[128];   /* its fake /proc */
    char root[128];   /* the fake cgroup2 root ("with space" checks mountinfo escapes) */
    bool no_peak;     /* a kernel before 5.19: no memory.peak */
    bool peak_reset;  /* a kernel 6.12+: memory.peak opens for writing */
    const char *deny; /* mkdir below this path gives EACCES */
    int ebusy;        /* EBUSY answers given to subtree_control writes */
    int moves;        /* pids written to a cgroup.procs */
};

char *path_of(const char *dir, const char *name);
void put(const char *dir, const char *name, const char *content);
char *get(const char *dir, const char *name);
void assert_file(const char *dir, const char *name, const char *want);
bool exists(const char *dir, const char *name);
bool word_in(const char *list, const char *word);
char *dir_of(const char *path);
int drop_pid(const char *path, const struct stat *st, int type, struct FTW *ftw);
bool has_procs(const char *dir);
char *offered(struct fake *f, const char *dir);
char *hierarchy_of(struct fake *f, const char *path);
int fake_write(void *ctx, const char *path, const char *value);
int fake_read(void *ctx, const char *path, char **ret);
void fake_populate(struct fake *f, const char *path);
int fake_mkdir(void *ctx, const char *path);
int rm_file(const char *path, const struct stat *st, int type, struct FTW *ftw);
int count_subdirs(const char *path, const struct stat *st, int type, struct FTW *ftw);
int fake_rmdir(void *ctx, const char *path);
int fake_open(void *ctx, const char *path, int flags);
struct cgroup_fs fake_fs(struct fake *f);
char *host_cgroup(struct fake *f, const char *rel, const char *procs);
int setup(void **state);
int teardown(void **state);
int init_env(struct fake *f, struct cgroup_env *env, struct cgroup_options *o, struct cgroup_fs *fs);

#endif
