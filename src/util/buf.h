// SPDX-License-Identifier: MIT
/*
 * buf — a bounded, growable byte buffer (after curl's dynbuf). Every buffer
 * fed by someone else's data gets a hard cap at init; appends beyond it fail
 * with -E2BIG and leave the buffer unchanged, so truncation is never silent.
 * The buffer owns its memory; buf_take() hands it to the caller.
 */
#ifndef SANDBOXD_UTIL_BUF_H
#define SANDBOXD_UTIL_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/macros.h"

struct buf {
    char *data; /* NUL-terminated after every successful append */
    size_t len;
    size_t cap;
    size_t max; /* hard cap on len */
};

void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
/* -E2BIG when the result would exceed the cap, -ENOMEM on allocation failure. */
int buf_append(struct buf *b, const void *data, size_t len);
int buf_appends(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) _printf_(2, 3);
/* Append as much of data as fits; returns bytes taken, sets *ret_full when some were dropped. */
size_t buf_append_capped(struct buf *b, const void *data, size_t len, bool *ret_full);
/* Remove the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Hand over the data (NUL-terminated, never NULL on success); the buffer is reset. */
char *buf_take(struct buf *b, size_t *ret_len);

#endif
