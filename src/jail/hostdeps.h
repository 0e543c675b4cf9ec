// SPDX-License-Identifier: MIT
/*
 * hostdeps — what the interpreter's packages need at run time that lies
 * outside the directories bound for them, discovered on the host once at
 * start-up (jail_config_init) and turned into mount plan operations:
 *   - the chains of symlinks that leave a bound directory (Debian's
 *     /etc/alternatives for BLAS and LAPACK, JavaScript or fonts that a
 *     package links out of its data directory): every link of the chain is
 *     recreated at its path and the final file or directory is bound;
 *   - the data directories of the packages they depend on (jail/dpkg.h).
 * It never binds anything under /proc, /sys, /dev or /run, nor anything
 * that is not world-readable (a link planted in an operator's virtualenv
 * must not expose the operator's private files), nor a directory that
 * would cover an earlier bind. Every path it binds keeps its host path.
 */
#ifndef SANDBOXD_JAIL_HOSTDEPS_H
#define SANDBOXD_JAIL_HOSTDEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "jail/mount.h"

/* The canonical host paths (directories and files) the plan binds at their own path. */
struct hostdeps_binds {
    char **paths;
    size_t n;
};

void hostdeps_binds_free(struct hostdeps_binds *b);
/* Is path (canonical) one of the binds or inside a bound directory? */
bool hostdeps_covered(const struct hostdeps_binds *b, const char *path);
/* Does path contain one of the binds (would binding it hide an earlier bind)? */
bool hostdeps_covers_any(const struct hostdeps_binds *b, const char *path);
/* Remember path (copied) as bound. */
int hostdeps_binds_add(struct hostdeps_binds *b, const char *path);
/* May the sandbox see the file or directory at path (canonical)? Only public things: regular
 * files and directories that anyone may read, below directories anyone may traverse, outside
 * the kernel's and the running system's trees (/proc, /sys, /dev, /run). *ret_dir: it is a
 * directory (set when true is returned). */
bool hostdeps_is_public(const char *path, bool *ret_dir);

#define HOSTDEPS_MAX_ENTRIES 2000000 /* directory entries hostdeps_add() walks at most */

/* What resolving one symlink went through: every link met (at its canonical location, with
 * its text) and where it ends. */
#define HOSTDEPS_MAX_HOPS 40
struct hostdeps_chain {
    char *links[HOSTDEPS_MAX_HOPS]; /* canonical paths of the links met, in order */
    char *texts[HOSTDEPS_MAX_HOPS]; /* their readlink() text */
    size_t n;
    char *final; /* canonical path of what it points to */
};

void hostdeps_chain_done(struct hostdeps_chain *c);
/* Resolve path (absolute) the way the kernel does, recording each symlink met. 0, -ENOENT
 * when something along it is missing, -ELOOP past HOSTDEPS_MAX_HOPS links. */
int hostdeps_resolve(const char *path, struct hostdeps_chain *ret);

struct hostdeps_stats {
    size_t scanned;  /* directory entries walked */
    size_t links;    /* symlinks whose chain leaves the binds */
    size_t symlinks; /* symlink operations added */
    size_t binds;    /* bind operations added */
    size_t skipped;  /* targets refused (not world-readable, special, covering a bind) */
    bool truncated;  /* the walk stopped at its entry limit */
};

/* How the regular file a chain ends at gets into the sandbox at its path, when not by a bind
 * of its own (the shell toolbox: a symlink into one tmpfs of copies, jail/toolbox.h). place()
 * returns 0 or -errno; it may fall back to a bind itself. */
struct hostdeps_placer {
    int (*place)(void *ctx, struct mount_plan *p, const char *final);
    void *ctx;
};

/* Make the chain c (hostdeps_resolve) resolve inside the sandbox as on the host: the links
 * recreated, what it ends at bound read-only at its path (or, a regular file with a placer,
 * put there by placer) — unless that is not world-readable, or would cover a bind or sit where
 * the plan has something else (counted as skipped). Nothing when it is all there already.
 * *ret_new_dir: a directory was bound. 0 or -ENOMEM. placer may be NULL. */
int hostdeps_apply_chain(struct mount_plan *p, struct hostdeps_binds *b,
                         const struct hostdeps_chain *c, const struct hostdeps_placer *placer,
                         struct hostdeps_stats *st, bool *ret_new_dir);

/* Walk roots (canonical directories already bound) for symlinks whose chain leaves the binds,
 * and add what makes each resolve inside the sandbox as it does on the host. At most
 * max_entries directory entries are walked in all. 0 or -errno (out of memory). */
int hostdeps_add_links(struct mount_plan *p, struct hostdeps_binds *b, char *const *roots,
                       size_t n_roots, size_t max_entries, struct hostdeps_stats *st);
/* Bind the data directories that jail/dpkg.h finds for site_dirs in the package database
 * dpkg_dir (nothing when it does not exist). 0 or -errno (out of memory). */
int hostdeps_add_packages(struct mount_plan *p, struct hostdeps_binds *b, const char *dpkg_dir,
                          char *const *site_dirs, size_t n_site, struct hostdeps_stats *st);

/* Both, in order, for a jail whose plan binds the interpreter's directories (b) and whose
 * site directories are site_dirs (NULL-terminated): the package data first (directories),
 * then the links found under everything bound. Logs what it did. 0 or -ENOMEM. */
int hostdeps_add(struct mount_plan *p, struct hostdeps_binds *b, const char *dpkg_dir,
                 char *const *site_dirs);

#endif
