// SPDX-License-Identifier: MIT
/*
 * jdump — see jdump.h. The containers are walked here; strings, keys,
 * integers and literals are written by jansson's own json_dump_callback()
 * (so escaping and JSON_ENSURE_ASCII behave exactly as jansson's), reals by
 * jdump_real(). The layout flags follow jansson's dump.c: JSON_INDENT(n)
 * puts each member on its own line, JSON_COMPACT drops the spaces after ','
 * and ':'.
 */
#include "util/jdump.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The process never calls setlocale(), so printf and strtod use '.' as the decimal point. */
size_t jdump_real(double value, char out[32])
{
    /* A normal double whose shortest decimal form has at most 15 significant digits prints
     * as that form with %.15g (DBL_DIG is 15: rounding to 15 digits cannot move it), %.16g is
     * the nearest 16-digit decimal, and 17 digits always round-trip: the first of 15, 16, 17
     * that reads back exactly is the shortest. Subnormals carry fewer bits, so they try every
     * precision. */
    int n = 0;
    int first = fabs(value) < DBL_MIN && value != 0 ? 1 : 15;
    for (int prec = first; prec <= 17; prec++) {
        n = snprintf(out, 32, "%.*g", prec, value);
        if (strtod(out, NULL) == value)
            break;
    }
    if (n < 0 || n >= 32) { /* cannot happen for %g of a double; keep the text valid JSON */
        memcpy(out, "0.0", 4);
        return 3;
    }
    size_t len = (size_t)n;
    char *e = strchr(out, 'e');
    if (!e && !strchr(out, '.') && len + 2 < 32) { /* "1" would read back as an integer */
        memcpy(out + len, ".0", 3);
        return len + 2;
    }
    if (e) { /* "1e+22" -> "1e22", "1e-07" -> "1e-7", as jansson and JavaScript write them */
        char *digits = e + 1;
        char *from = digits;
        if (*from == '+')
            from++;
        else if (*from == '-')
            digits = ++from;
        while (from[0] == '0' && from[1])
            from++;
        memmove(digits, from, strlen(from) + 1);
        len = strlen(out);
    }
    return len;
}

struct jdump_ctx {
    struct buf *out;
    size_t flags;
    int err;
};

static int jdump_put(const char *data, size_t len, void *userdata)
{
    struct jdump_ctx *c = userdata;
    int r = buf_append(c->out, data, len);
    if (r < 0) {
        c->err = r;
        return -1;
    }
    return 0;
}

static int jdump_lit(struct jdump_ctx *c, const char *s)
{
    return jdump_put(s, strlen(s), c) < 0 ? c->err : 0;
}

/* A scalar other than a real, through jansson. */
static int jdump_scalar(struct jdump_ctx *c, const json_t *v)
{
    size_t f = (c->flags & (JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH)) | JSON_ENCODE_ANY;
    if (json_dump_callback(v, jdump_put, c, f) < 0)
        return c->err ? c->err : -ENOMEM;
    return 0;
}

static int jdump_newline(struct jdump_ctx *c, size_t depth)
{
    size_t indent = c->flags & JSON_MAX_INDENT;
    if (!indent)
        return 0;
    int r = jdump_lit(c, "\n");
    for (size_t i = 0; r == 0 && i < indent * depth; i++)
        r = jdump_lit(c, " ");
    return r;
}

/* Between two members: "," then a newline (indented) or a space (neither compact nor
 * indented), as jansson writes it. */
static int jdump_sep(struct jdump_ctx *c, size_t depth)
{
    int r = jdump_lit(c, ",");
    if (r == 0 && (c->flags & JSON_MAX_INDENT))
        r = jdump_newline(c, depth);
    else if (r == 0 && !(c->flags & JSON_COMPACT))
        r = jdump_lit(c, " ");
    return r;
}

static int jdump_value(struct jdump_ctx *c, const json_t *v, size_t depth);

static int jdump_object(struct jdump_ctx *c, const json_t *v, size_t depth)
{
    if (json_object_size(v) == 0)
        return jdump_lit(c, "{}");
    int r = jdump_lit(c, "{");
    if (r == 0)
        r = jdump_newline(c, depth + 1);
    bool first = true;
    const char *key;
    size_t key_len;
    json_t *member;
    json_object_keylen_foreach((json_t *)v, key, key_len, member)
    {
        if (r == 0 && !first)
            r = jdump_sep(c, depth + 1);
        first = false;
        if (r == 0) {
            json_t *k = json_stringn_nocheck(key, key_len);
            r = k ? jdump_scalar(c, k) : -ENOMEM;
            json_decref(k);
        }
        if (r == 0)
            r = jdump_lit(c, c->flags & JSON_COMPACT ? ":" : ": ");
        if (r == 0)
            r = jdump_value(c, member, depth + 1);
        if (r < 0)
            return r;
    }
    if (r == 0)
        r = jdump_newline(c, depth);
    return r == 0 ? jdump_lit(c, "}") : r;
}

static int jdump_array(struct jdump_ctx *c, const json_t *v, size_t depth)
{
    size_t n = json_array_size(v);
    if (n == 0)
        return jdump_lit(c, "[]");
    int r = jdump_lit(c, "[");
    if (r == 0)
        r = jdump_newline(c, depth + 1);
    for (size_t i = 0; r == 0 && i < n; i++) {
        if (i)
            r = jdump_sep(c, depth + 1);
        if (r == 0)
            r = jdump_value(c, json_array_get(v, i), depth + 1);
    }
    if (r == 0)
        r = jdump_newline(c, depth);
    return r == 0 ? jdump_lit(c, "]") : r;
}

static int jdump_value(struct jdump_ctx *c, const json_t *v, size_t depth)
{
    if (depth > JDUMP_MAX_DEPTH)
        return -E2BIG;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return jdump_object(c, v, depth);
    case JSON_ARRAY:
        return jdump_array(c, v, depth);
    case JSON_REAL: {
        char text[32];
        size_t n = jdump_real(json_real_value(v), text);
        return jdump_put(text, n, c) < 0 ? c->err : 0;
    }
    default:
        return jdump_scalar(c, v);
    }
}

int jdump_buf(const json_t *json, size_t flags, struct buf *out)
{
    if (!json)
        return -EINVAL;
    struct jdump_ctx c = {.out = out, .flags = flags};
    size_t mark = out->len;
    int r = jdump_value(&c, json, 0);
    if (r < 0 && out->data) { /* leave the buffer as it was */
        out->len = mark;
        out->data[mark] = '\0';
    }
    return r;
}

char *jdump(const json_t *json, size_t flags, size_t *ret_len)
{
    struct buf b;
    buf_init(&b, SIZE_MAX - 1);
    if (jdump_buf(json, flags, &b) < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b, ret_len);
}
