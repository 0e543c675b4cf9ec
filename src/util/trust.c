// SPDX-License-Identifier: MIT
/*
 * trust — see trust.h. The path is resolved once (realpath) and each level
 * of the result is checked with lstat: every level being owned by us or root
 * and not writable by others means nobody else can swap a level for a
 * symlink after the check either.
 */
#include "util/trust.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fmt.h"
#include "util/macros.h"

static int trust_level(const char *path, bool leaf, enum trust_kind kind, char **ret_why)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        int e = errno;
        *ret_why = fmt_str("cannot inspect %s: %s", path, strerror(e));
        return -e;
    }
    uid_t me = geteuid();
    if (leaf && kind == TRUST_DIR && !S_ISDIR(st.st_mode))
        return fmt_error(ret_why, ENOTDIR, "%s is not a directory", path);
    if (leaf && kind == TRUST_FILE && !S_ISREG(st.st_mode))
        return fmt_error(ret_why, EINVAL, "%s is not a regular file", path);
    bool root_ok = !leaf || kind == TRUST_FILE;
    if (st.st_uid != me && !(root_ok && st.st_uid == 0))
        return fmt_error(ret_why, EPERM, "%s is owned by uid %u, not by uid %u (sandboxd's)%s",
                         path, (unsigned)st.st_uid, (unsigned)me, root_ok ? " or root" : "");
    /* A root-owned sticky directory (/tmp) lets others add entries, never replace ours. */
    bool sticky_root = !leaf && st.st_uid == 0 && (st.st_mode & S_ISVTX);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_root)
        return fmt_error(ret_why, EPERM, "%s is writable by its group or by others (mode %04o)",
                         path, (unsigned)(st.st_mode & 07777));
    return 0;
}

static int trust_check_why(const char *path, enum trust_kind kind, char **ret_why)
{
    *ret_why = NULL;
    _cleanup_free_ char *real = realpath(path, NULL);
    if (!real) {
        int e = errno;
        *ret_why = fmt_str("cannot resolve %s: %s", path, strerror(e));
        return -e;
    }
    int r = trust_level(real, true, kind, ret_why);
    /* Then each directory above, up to and including "/". */
    for (char *slash = strrchr(real, '/'); r == 0 && slash; slash = strrchr(real, '/')) {
        if (slash == real) {
            r = trust_level("/", false, kind, ret_why);
            break;
        }
        *slash = '\0';
        r = trust_level(real, false, kind, ret_why);
    }
    return r;
}

static int trust_make_dir_why(const char *path, char **ret_why)
{
    *ret_why = NULL;
    if (!*path)
        return fmt_error(ret_why, EINVAL, "an empty path is no directory");
    _cleanup_free_ char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    for (char *p = copy + 1;; p++) {
        bool end = *p == '\0';
        if (!end && *p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
            int e = errno;
            *ret_why = fmt_str("cannot create %s: %s", copy, strerror(e));
            return -e;
        }
        if (end)
            break;
        *p = '/';
    }
    return trust_check_why(path, TRUST_DIR, ret_why);
}

/* The error of a check that failed with r and why (taken; NULL when out of memory). */
static int trust_error(int r, char *why, struct sbx_error *err)
{
    enum sbx_errkind kind = r == -EPERM                     ? SBX_ERR_FORBIDDEN
                            : r == -ENOENT                  ? SBX_ERR_NOT_FOUND
                            : r == -EINVAL || r == -ENOTDIR ? SBX_ERR_INVALID
                                                            : SBX_ERR_INTERNAL;
    sbx_error_set(err, kind, "UNTRUSTED_PATH", NULL, "%s", why ? why : strerror(-r));
    free(why);
    return r;
}

int trust_check(const char *path, enum trust_kind kind, struct sbx_error *err)
{
    char *why = NULL;
    int r = trust_check_why(path, kind, &why);
    return r < 0 ? trust_error(r, why, err) : 0;
}

int trust_make_dir(const char *path, struct sbx_error *err)
{
    char *why = NULL;
    int r = trust_make_dir_why(path, &why);
    return r < 0 ? trust_error(r, why, err) : 0;
}
