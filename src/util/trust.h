// SPDX-License-Identifier: MIT
/*
 * trust — may sandboxd take state or instructions from this path? Only when
 * nobody but us (and root) could have put them there. The rule, as
 * OpenSSH's secure_path() and GnuPG's home-directory check have it, applied
 * to the path with symlinks resolved:
 *   - the path itself is a directory (or a regular file, as asked), owned by
 *     the effective uid (for a file, root will do too), and writable by
 *     neither its group nor others;
 *   - every directory above it, up to "/", is owned by the effective uid or
 *     root and writable by neither group nor others — except a root-owned
 *     directory with the sticky bit (/tmp, /var/tmp), where others may create
 *     entries but not replace ours.
 * Used for the state directory (saved tools run in sessions), the tenants
 * file and the list of trusted project directories.
 */
#ifndef SANDBOXD_UTIL_TRUST_H
#define SANDBOXD_UTIL_TRUST_H

#include <stdbool.h>

#include "util/error.h"

enum trust_kind {
    TRUST_DIR,  /* a directory owned by the effective uid */
    TRUST_FILE, /* a regular file owned by the effective uid or root */
};

/* 0 when path passes the rule; -errno otherwise with *err (code UNTRUSTED_PATH; FORBIDDEN for
 * a level that someone else owns or may write, NOT_FOUND, INVALID when it is no directory or
 * no regular file, INTERNAL) naming the offending path and what is wrong with it. */
int trust_check(const char *path, enum trust_kind kind, struct sbx_error *err);
/* mkdir -p path (missing levels get mode 0700), then trust_check(path, TRUST_DIR). */
int trust_make_dir(const char *path, struct sbx_error *err);

#endif
