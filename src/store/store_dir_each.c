// SPDX-License-Identifier: MIT
/*
 * store_dir_each — every workspace of the state directory, the operator's and each tenant's,
 * in name order, for `sandboxd migrate` (store_ops.each_workspace). See store_dir_int.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_dir_int.h"
#include "util/macros.h"
#include "util/path.h"

static int store_dir_cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* fn(userdata, tenant, name) for each directory below parent (an fd, borrowed) that may be a
 * workspace or tenant, by name. */
static int store_dir_each_in(int parent, const char *tenant, store_ws_fn fn, void *userdata)
{
    DIR *d = store_dir_opendir(parent);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    char **names = NULL;
    size_t n = 0;
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(d))) {
        struct stat st;
        if (path_check_name(e->d_name) || strlen(e->d_name) > STORE_MAX_KEY_LEN ||
            fstatat(parent, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        char **grown = realloc(names, (n + 1) * sizeof(*names));
        if (!grown || !(grown[n] = strdup(e->d_name)))
            r = -ENOMEM;
        if (grown)
            names = grown;
        if (r == 0)
            n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), store_dir_cmp_name);
    for (size_t i = 0; i < n; i++) {
        if (r == 0)
            r = fn(userdata, tenant, names[i]);
        free(names[i]);
    }
    free(names);
    return r;
}

struct store_dir_tenants {
    struct store_dir *ds;
    store_ws_fn fn;
    void *userdata;
};

/* A store_ws_fn over STATE_DIR/tenants: name is a tenant's. */
static int store_dir_each_tenant(void *userdata, const char *unused, const char *tenant)
{
    (void)unused;
    struct store_dir_tenants *t = userdata;
    int fd = store_dir_parent(t->ds, tenant, false);
    if (fd < 0)
        return fd == -ENOENT ? 0 : fd;
    int r = store_dir_each_in(fd, tenant, t->fn, t->userdata);
    close(fd);
    return r;
}

int store_dir_each_workspace(struct store *s, store_ws_fn fn, void *userdata, struct sbx_error *err)
{
    struct store_dir *ds = (struct store_dir *)s;
    int r = ds->root_fd < 0 ? 0 : store_dir_each_in(ds->root_fd, "", fn, userdata);
    if (r == 0) {
        struct store_dir_tenants t = {.ds = ds, .fn = fn, .userdata = userdata};
        _cleanup_close_ int all = store_dir_subdir(ds->state_fd, "tenants", false);
        if (all >= 0)
            r = store_dir_each_in(all, "", store_dir_each_tenant, &t);
        else if (all != -ENOENT)
            r = all;
    }
    if (r < 0 && !err->message)
        store_fail(err, r, "workspaces");
    return r;
}
