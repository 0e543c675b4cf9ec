// SPDX-License-Identifier: MIT
/*
 * macros — small language helpers shared by every module: scope-bound
 * cleanup (free, close, json_decref), ownership hand-over and array sizes.
 * Header only; nothing here allocates or logs.
 */
#ifndef SANDBOXD_UTIL_MACROS_H
#define SANDBOXD_UTIL_MACROS_H

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Hand ownership of *p to the caller of the expression and leave NULL behind. */
#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) take_ptr_tmp_ = (p);                                                         \
        (p) = NULL;                                                                                \
        take_ptr_tmp_;                                                                             \
    })

#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int take_fd_tmp_ = (fd);                                                                   \
        (fd) = -1;                                                                                 \
        take_fd_tmp_;                                                                              \
    })

static inline void freep(void *p)
{
    free(*(void **)p);
}

static inline void closep(const int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        (void)close(*fd); /* nothing useful to do on close failure of a cleanup path */
        errno = saved;
    }
}

#define _cleanup_(f)    __attribute__((cleanup(f)))
#define _cleanup_free_  _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
/* jansson's json_decrefp (jansson.h, 2.11+): drops the reference; hand it on with TAKE_PTR. */
#define _cleanup_json_ _cleanup_(json_decrefp)
#define _unused_       __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

/* Close *fd if open and mark it closed. */
static inline void fd_closep(int *fd)
{
    closep(fd);
    *fd = -1;
}

#endif
