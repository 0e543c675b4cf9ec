// SPDX-License-Identifier: MIT
/*
 * hostcache — what host discovery found at start-up (jail_config_init: the interpreter's
 * answer to where it keeps its files, the data of its packages and the links that leave its
 * directories (jail/hostdeps.h), the shell toolbox (jail/toolbox.h)) and sandboxd's runtime
 * compiled to bytecode, kept in the state directory, so that a start which finds the host as
 * it was replays it in about a millisecond instead of walking tens of thousands of directory
 * entries and starting the interpreter to ask it.
 *
 * Keyed by what discovery depends on: the cache format, sandboxd's version and binary, the
 * options that shape it (a fingerprint string the caller builds), and every host path it read,
 * each with its identity and times (device, inode, size, mtime, ctime, mode): the interpreter,
 * the package database's status file and list directory, the directories it walked, every
 * directory it bound and every file it copied; plus what the plan held before discovery added
 * to it. All of it is checked at every start (one lstat each) and the whole is rebuilt when
 * anything differs. A link made by hand deep inside a bound tree, by neither dpkg nor pip (which
 * change the status file or the tree's top), is not noticed until the cache goes
 * (rm -r STATE_DIR/cache).
 *
 * Never a wrong bind: the directory must pass util/trust.h (ours, writable by nobody else, nor
 * any level above it), a cache file must be a regular file of ours, writable by nobody else,
 * with one link; and what it names is checked again as it is replayed: every bind public by the
 * rule discovery applies (hostdeps_is_public) and the very file or directory recorded, every
 * link still reading the same on the host, every copied file public, not setuid or setgid and
 * the one recorded. A file that is missing, corrupt, stale or untrusted costs the time of
 * discovering again, nothing else. The bytecode needs no such care: it is hash-checked against
 * the source by the interpreter at every import (PEP 552, checked), and the sandbox runs it.
 *
 * Parent side, at start-up; not thread-safe (one per jail_config_init). Logs what it skips.
 */
#ifndef SANDBOXD_JAIL_HOSTCACHE_H
#define SANDBOXD_JAIL_HOSTCACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "jail/mount.h"

#define HOSTCACHE_FORMAT    1
#define HOSTCACHE_MAX_FILE  (16u << 20) /* bytes of one cache file */
#define HOSTCACHE_MAX_ITEMS 100000      /* watched paths, or replayed operations, per file */
#define HOSTCACHE_MAX_PYC   256         /* bytecode files per file */
#define HOSTCACHE_KEEP      8           /* cache files kept in the directory (other options) */

struct hostcache;

/* Open the cache directory dir (made 0700 when missing; must pass trust_check) for the
 * discovery options fingerprint (any text naming every option that shapes discovery), and load
 * its entry when there is one that is trusted, well formed and of this format, version, binary
 * and fingerprint (whether the host still matches is hostcache_fresh's question). 0 with *ret
 * (free with hostcache_free) whether or not an entry was loaded; -errno when the directory
 * cannot be made or trusted (logged; then there is no cache). */
int hostcache_open(const char *dir, const char *fingerprint, struct hostcache **ret);
void hostcache_free(struct hostcache *hc);

/* Is there a loaded entry whose watched paths all match the host now? Logs (debug) what
 * differs. */
bool hostcache_fresh(const struct hostcache *hc);
/* The interpreter's answer recorded with the entry (borrowed; NULL without a loaded entry). */
json_t *hostcache_python(const struct hostcache *hc);
/* Replay the loaded entry's operations onto p, which must hold exactly the operations it held
 * when they were recorded (checked). 0; -ESTALE when the host or p no longer match (p is then
 * partly built: throw it away); -ENOMEM. */
int hostcache_replay(struct hostcache *hc, struct mount_plan *p);
/* Start copying the toolbox's files the loaded entry recorded into a fresh tmpfs on a thread
 * of its own, while the caller plans the rest (hostcache_replay then only links them and
 * attaches that tmpfs). 0 (also when there is nothing to copy, or no thread or tmpfs could be
 * had: then the replay copies them itself) or -ENOMEM. */
int hostcache_copy_start(struct hostcache *hc);
/* Wait for that copy, before the plan is used: 0, or -ESTALE when a file was no longer what was
 * recorded (then the plan is not whole: discover again). Seals the tmpfs. A no-op when no copy
 * runs; hostcache_free waits too. */
int hostcache_copy_wait(struct hostcache *hc);
/* Add the bytecode of the runtime package kept with the entry (loaded or recorded) to p, as
 * files in dir (the package's __pycache__ in the jail), skipping any p has already. 0 or
 * -ENOMEM. */
int hostcache_add_bytecode(const struct hostcache *hc, struct mount_plan *p, const char *dir);

/* Recording a discovery, for hostcache_save (each drops a loaded entry first). */
/* Watch path (absolute): its identity now, or that it is missing. 0 or -ENOMEM. */
int hostcache_watch(struct hostcache *hc, const char *path);
/* Keep python (borrowed; a reference is taken) as the interpreter's answer. */
void hostcache_set_python(struct hostcache *hc, json_t *python);
/* Keep name's bytecode (data, len bytes, copied). 0, -EINVAL for a name that is not a plain
 * "*.pyc" file name, -E2BIG past HOSTCACHE_MAX_PYC, -ENOMEM. */
int hostcache_add_pyc(struct hostcache *hc, const char *name, const void *data, size_t len);
/* Record p's operations from index first on (what discovery added) and a digest of those
 * before it. 0; -EINVAL when they hold something a cache cannot replay (not cached then);
 * -ENOMEM. */
int hostcache_record(struct hostcache *hc, const struct mount_plan *p, size_t first);
/* Write what was recorded (atomically: a new file renamed over the old one), and remove the
 * oldest cache files past HOSTCACHE_KEEP. Logs and returns -errno on failure, which costs
 * nothing but the next start's time. */
int hostcache_save(struct hostcache *hc);

#endif
