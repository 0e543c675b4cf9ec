// SPDX-License-Identifier: MIT
/*
 * hostcache_int — shared by hostcache.c (opening, loading, using an entry) and
 * hostcache_save.c (recording and saving one): the cache's state and the helpers both use.
 */
#ifndef SANDBOXD_JAIL_HOSTCACHE_INT_H
#define SANDBOXD_JAIL_HOSTCACHE_INT_H

#include <jansson.h>
#include <linux/mount.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "jail/hostcache.h"
#include "jail/mount.h"
#include "jail/toolbox.h"

#ifndef SANDBOXD_VERSION
#define SANDBOXD_VERSION "0.0.0"
#endif

#define HOSTCACHE_MAGIC    "sandboxd-hostcache\n"
#define HOSTCACHE_ID_MAX   160 /* bytes of an identity */
#define HOSTCACHE_BIND_SET (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) /* binds */

struct hostcache_pyc {
    char *name;
    char *data; /* recorded: owned; loaded: points into the file read */
    size_t len;
};

struct hostcache {
    int dirfd;
    char *dir;
    char *name;        /* "<hex>.cache" */
    char *fingerprint; /* the caller's, plus our binary's path and identity */
    char exe[HOSTCACHE_ID_MAX];
    /* loaded */
    char *file; /* the whole file */
    json_t *entry;
    const char *blob; /* the bytecode files, in file */
    size_t blob_len;
    /* the toolbox's files of a loaded entry, copied on a thread of their own (copy_start) */
    struct toolbox_stage stage; /* root: ours; the plan attaches a duplicate */
    char **copy_files, **copy_ids;
    size_t n_copy;
    pthread_t copier;
    bool copying; /* the thread runs or has not been joined */
    int copy_result;
    /* recorded (a new entry) */
    bool recording;
    json_t *watch, *ops, *python;
    char prefix[17];
    struct hostcache_pyc pyc[HOSTCACHE_MAX_PYC];
    size_t n_pyc;
};

/* path's identity: what lstat() says of it that changes when it is replaced, written to,
 * re-linked or re-permitted. 0, or -errno from lstat (-ENOENT: missing). */
int hostcache_identity(const char *path, char out[HOSTCACHE_ID_MAX]);
/* The digest of the first n operations of p (16 hex digits and a NUL in out). */
void hostcache_digest(const struct mount_plan *p, size_t n, char out[17]);
/* Forget the loaded entry and the file it came from. */
void hostcache_drop_entry(struct hostcache *hc);
/* A bytecode file's name the cache keeps: "<name>.pyc", plain characters, not hidden. */
bool hostcache_pyc_name_ok(const char *name);

#endif
