// SPDX-License-Identifier: MIT
/*
 * fdio — see fdio.h.
 */
#include "util/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/clock.h"
#include "util/macros.h"

int fd_write_all(int fd, const void *buf, size_t len, int64_t deadline_us)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w >= 0) {
            p += w;
            len -= (size_t)w;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return -errno;
        int timeout = -1;
        if (deadline_us) {
            int64_t left = deadline_us - clock_mono_us();
            if (left <= 0)
                return -ETIMEDOUT;
            timeout = (int)((left + 999) / 1000);
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int r = poll(&pfd, 1, timeout);
        if (r < 0 && errno != EINTR)
            return -errno;
        if (r == 0)
            return -ETIMEDOUT;
        if (r > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) && !(pfd.revents & POLLOUT))
            return -EPIPE;
    }
    return 0;
}

int fd_set_nonblock(int fd, bool on)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -errno;
    int want = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
    if (want != flags && fcntl(fd, F_SETFL, want) < 0)
        return -errno;
    return 0;
}

int fd_read_file(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
    return fd_read_file_flags(dirfd, path, 0, max, ret, ret_len);
}

int fd_read_file_flags(int dirfd, const char *path, int oflags, size_t max, char **ret,
                       size_t *ret_len)
{
    _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | oflags);
    if (fd < 0)
        return -errno;
    struct buf b;
    buf_init(&b, max);
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int r = -errno;
            buf_free(&b);
            return r;
        }
        if (n == 0)
            break;
        int r = buf_append(&b, chunk, (size_t)n);
        if (r < 0) {
            buf_free(&b);
            return r == -E2BIG ? -EFBIG : r;
        }
    }
    char *data = buf_take(&b, ret_len);
    if (!data)
        return -ENOMEM;
    *ret = data;
    return 0;
}

int fd_write_file(const char *path, const char *s)
{
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t len = strlen(s);
    ssize_t w;
    do
        w = write(fd, s, len);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        return -errno;
    return (size_t)w == len ? 0 : -EIO;
}
