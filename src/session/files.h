// SPDX-License-Identifier: MIT
/*
 * files — the files of a session's working directory, as the session file
 * API (CONTRACT §12) puts, reads, deletes and lists them: from the host,
 * without the sandbox's help, so that nothing running in the session can
 * lie about them or stop them.
 *
 * The working directory is the session's /tmp, a tmpfs of --tmp-size-mb in
 * the session's own mount namespace, reached through /proc/PID/root of its
 * live interpreter (after which its pidfd must still be alive: the pid was
 * not recycled). Every path below it is walked one component at a time with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV), so no link, mount or ".." the sandbox plants can lead
 * the host anywhere else; only regular files are read or replaced, opened
 * O_NONBLOCK so a FIFO cannot hold the host. The host does all of it as the
 * sandbox's uid and gid (the calling thread's fsuid and fsgid, restored
 * before returning): what it creates belongs to the sandbox, and it can do
 * nothing there the sandbox could not. The tmpfs's size is the quota: a
 * file that does not fit is -ENOSPC (QUOTA_EXCEEDED). Paths are checked with
 * path_check_plain() first. uid and gid are the sandbox's host ids
 * (sessions_workdir()).
 */
#ifndef SANDBOXD_SESSION_FILES_H
#define SANDBOXD_SESSION_FILES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

/* Entries one listing visits: files, directories and anything else, listed or not. */
#define SESSION_FILES_MAX_LIST 10000

/* The O_PATH fd of /tmp inside the process pid (whose pidfd, borrowed, proves it is still the
 * same process) into *ret_fd. -ENOENT when it is gone, -EPROTO when its /tmp is not a tmpfs. */
int session_files_open_root(pid_t pid, int pidfd, int *ret_fd);
/* Create or replace path (relative to workdir) with len bytes, creating its directories.
 * -ENOSPC over the quota, -EISDIR when path is a directory, -ENOTDIR / -ELOOP when a
 * component is not a directory or is a symlink, -EACCES where the sandbox could not write. */
int session_files_put(int workdir, const char *path, const void *data, size_t len, uid_t uid,
                      gid_t gid);
/* Open path for reading: a read-only fd of the regular file (O_CLOEXEC; caller closes) and its
 * size now, at most max (else -EFBIG). -ENOENT, -EISDIR, -EINVAL (not a regular file). The
 * file is read from the fd, as the client takes it, never copied whole into memory; the
 * sandbox may still change it meanwhile (its own file). */
int session_files_open(int workdir, const char *path, uint64_t max, uid_t uid, gid_t gid,
                       int *ret_fd, uint64_t *ret_size);
/* Remove path (not a directory: -EISDIR). */
int session_files_delete(int workdir, const char *path, uid_t uid, gid_t gid);
/* {"files": [{path, size, modified}], "truncated", "usedBytes", "quotaBytes"}: the regular
 * files below workdir, depth-first in name order (new reference in *ret). At most
 * SESSION_FILES_MAX_LIST entries of any kind are visited, PATH_MAX_DEPTH levels deep; when
 * there was more, truncated is true. */
int session_files_list(int workdir, uid_t uid, gid_t gid, json_t **ret);
/* Set obj's "path" to path as the listing shows it: UTF-8 as it is; anything else with each
 * byte outside a well-formed sequence, and each '%', as %XX, and "pathEncoding": "percent"
 * beside it (decoding gives the name back). 0 or -ENOMEM. */
int session_files_path_set(json_t *obj, const char *path);
/* The error of a file operation that returned r (-errno) about raw_path (shown repaired when it
 * is not UTF-8): NOT_FOUND, CONFLICT (IS_A_DIRECTORY, NOT_A_PLAIN_PATH), FORBIDDEN, INVALID,
 * TOO_LARGE (QUOTA_EXCEEDED) or INTERNAL, into *ret. */
void session_files_error(int r, const char *raw_path, struct sbx_error *ret);

#endif
