// SPDX-License-Identifier: MIT
/*
 * fdio — small, careful wrappers around read/write/poll on file descriptors:
 * full writes with EINTR handling, non-blocking toggles, whole-file reads
 * with a size cap. Never logs; every function returns -errno on failure.
 */
#ifndef SANDBOXD_UTIL_FDIO_H
#define SANDBOXD_UTIL_FDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Write all of buf; blocks (polling when the fd is non-blocking) until done or deadline_us
 * (monotonic, 0 = none) passes (-ETIMEDOUT). */
int fd_write_all(int fd, const void *buf, size_t len, int64_t deadline_us);
int fd_set_nonblock(int fd, bool on);
/* Read a whole file (at most max bytes, else -EFBIG); *ret is NUL-terminated, caller frees. */
int fd_read_file(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
/* The same, opened with oflags added (O_NOFOLLOW). */
int fd_read_file_flags(int dirfd, const char *path, int oflags, size_t max, char **ret,
                       size_t *ret_len);
/* Write a small string to a file (for /proc and cgroup knobs). */
int fd_write_file(const char *path, const char *s);

#endif
