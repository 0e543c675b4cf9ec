// SPDX-License-Identifier: MIT
/*
 * buf — bounded growable buffer; see buf.h. Growth doubles up to the cap.
 */
#include "util/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
    *b = (struct buf){.max = max};
}

void buf_free(struct buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int buf_reserve(struct buf *b, size_t extra)
{
    if (extra > b->max - b->len)
        return -E2BIG;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p = realloc(b->data, cap);
    if (!p)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
    int r = buf_reserve(b, len);
    if (r < 0)
        return r;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int buf_appends(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    int r = buf_append(b, s, (size_t)n);
    free(s);
    return r;
}

size_t buf_append_capped(struct buf *b, const void *data, size_t len, bool *ret_full)
{
    size_t room = b->max - b->len;
    size_t take = len < room ? len : room;
    if (take < len && ret_full)
        *ret_full = true;
    if (take && buf_append(b, data, take) < 0) {
        if (ret_full)
            *ret_full = true;
        return 0;
    }
    return take;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *buf_take(struct buf *b, size_t *ret_len)
{
    if (!b->data && buf_reserve(b, 0) < 0)
        return NULL;
    char *p = b->data;
    if (ret_len)
        *ret_len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
