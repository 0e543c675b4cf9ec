// SPDX-License-Identifier: MIT
/*
 * toon — see toon.h. The shapes, chosen per value as the specification
 * says: `key: value` for primitives, `key:` and indented fields for objects,
 * `key[N]: a,b` for arrays of primitives, `key[N]{f,g}:` and one row a line
 * for arrays of objects that share their keys and hold only primitives, and
 * `key[N]:` with `- item` lines for anything else.
 */
#include "util/toon.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/jdump.h"

#define TOON_MAX_TEXT (64u << 20) /* the document */

struct toon {
    struct buf out;
    int err; /* the first failure; later appends are skipped */
};

static void toon_put(struct toon *t, const char *s, size_t len)
{
    if (!t->err)
        t->err = buf_append(&t->out, s, len);
}

static void toon_puts(struct toon *t, const char *s)
{
    toon_put(t, s, strlen(s));
}

/* A new line at depth (the first line of the document gets no newline before it). */
static void toon_line(struct toon *t, unsigned depth)
{
    if (t->out.len)
        toon_puts(t, "\n");
    for (unsigned i = 0; i < depth; i++)
        toon_puts(t, "  ");
}

static bool toon_primitive(const json_t *v)
{
    return !json_is_object(v) && !json_is_array(v);
}

/* Numeric-like: [+-]?digits(.digits)?(e[+-]?digits)? — a decoder would read it as a number. */
static bool toon_numeric_like(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    size_t n = strspn(p, "0123456789");
    if (!n)
        return false;
    p += n;
    if (*p == '.') {
        n = strspn(p + 1, "0123456789");
        if (!n)
            return false;
        p += 1 + n;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        n = strspn(p, "0123456789");
        if (!n)
            return false;
        p += n;
    }
    return *p == '\0';
}

static bool toon_needs_quotes(const char *s, size_t len, char delim)
{
    if (!len || s[0] == ' ' || s[0] == '\t' || s[len - 1] == ' ' || s[len - 1] == '\t' ||
        s[0] == '-' || s[0] == '#')
        return true;
    if (!strcmp(s, "true") || !strcmp(s, "false") || !strcmp(s, "null") || toon_numeric_like(s))
        return true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == delim || strchr(":\"\\[]{}", c))
            return true;
    }
    return false;
}

static void toon_quoted(struct toon *t, const char *s, size_t len)
{
    toon_puts(t, "\"");
    size_t from = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = c == '\\'   ? "\\\\"
                          : c == '"'  ? "\\\""
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                                      : NULL;
        char u[8];
        if (!esc && c < 0x20) {
            snprintf(u, sizeof(u), "\\u%04x", c);
            esc = u;
        }
        if (!esc)
            continue;
        toon_put(t, s + from, i - from);
        toon_puts(t, esc);
        from = i + 1;
    }
    toon_put(t, s + from, len - from);
    toon_puts(t, "\"");
}

static void toon_string(struct toon *t, const char *s, size_t len, char delim)
{
    if (toon_needs_quotes(s, len, delim) || strlen(s) != len)
        toon_quoted(t, s, len);
    else
        toon_put(t, s, len);
}

static void toon_key(struct toon *t, const char *key)
{
    bool bare = (*key >= 'A' && *key <= 'Z') || (*key >= 'a' && *key <= 'z') || *key == '_';
    for (const char *p = key; bare && *p; p++)
        bare = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
               *p == '_' || *p == '.';
    if (bare)
        toon_puts(t, key);
    else
        toon_quoted(t, key, strlen(key));
}

/* A real in canonical decimal form: no exponent for 1e-6 <= |x| < 1e21, no trailing zeros,
 * integral values without a fraction, -0 as 0. */
static void toon_real(struct toon *t, double x)
{
    if (x == 0) {
        toon_puts(t, "0");
        return;
    }
    char text[32];
    jdump_real(x, text);
    double ax = x < 0 ? -x : x;
    char *e = strpbrk(text, "eE");
    if (e && ax >= 1e-6 && ax < 1e21) {
        /* digits d.ddd with exponent k: write them out with the point moved. */
        int k = atoi(e + 1);
        *e = '\0';
        bool neg = text[0] == '-';
        char digits[32];
        size_t nd = 0;
        int point = 0; /* digits before the point in the mantissa */
        bool seen_point = false;
        for (const char *p = text + neg; *p; p++) {
            if (*p == '.') {
                seen_point = true;
                continue;
            }
            digits[nd++] = *p;
            point += !seen_point;
        }
        point += k;
        char out[64];
        size_t o = 0;
        if (neg)
            out[o++] = '-';
        if (point <= 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -point; i++)
                out[o++] = '0';
            for (size_t i = 0; i < nd; i++)
                out[o++] = digits[i];
        } else {
            for (int i = 0; i < point; i++)
                out[o++] = (size_t)i < nd ? digits[i] : '0';
            if ((size_t)point < nd) {
                out[o++] = '.';
                for (size_t i = (size_t)point; i < nd; i++)
                    out[o++] = digits[i];
            }
        }
        out[o] = '\0';
        toon_puts(t, out); /* shortest digits: no trailing zeros to trim */
        return;
    } else if (e) {
        /* Outside the canonical range: JSON exponent form with a sign (1e+21, 1e-7). */
        int k = atoi(e + 1);
        char fixed[64];
        snprintf(fixed, sizeof(fixed), "%.*se%c%d", (int)(e - text), text, k < 0 ? '-' : '+',
                 k < 0 ? -k : k);
        toon_puts(t, fixed);
        return;
    }
    /* "1.0" -> "1", "1.50" cannot happen (shortest form), "2.5" stays. */
    size_t n = strlen(text);
    char *dot = strchr(text, '.');
    if (dot && !strpbrk(text, "eE")) {
        while (n > (size_t)(dot - text) + 1 && text[n - 1] == '0')
            text[--n] = '\0';
        if (text[n - 1] == '.')
            text[--n] = '\0';
    }
    toon_puts(t, text);
}

static void toon_scalar(struct toon *t, const json_t *v, char delim)
{
    char num[32];
    switch (json_typeof(v)) {
    case JSON_STRING:
        toon_string(t, json_string_value(v), json_string_length(v), delim);
        break;
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        toon_puts(t, num);
        break;
    case JSON_REAL:
        toon_real(t, json_real_value(v));
        break;
    case JSON_TRUE:
        toon_puts(t, "true");
        break;
    case JSON_FALSE:
        toon_puts(t, "false");
        break;
    default:
        toon_puts(t, "null");
        break;
    }
}

/* "[N]" and, for a table, "{f,g}", then ":". key may be NULL (root or list item). */
static void toon_header(struct toon *t, const char *key, size_t n, const json_t *fields)
{
    if (key)
        toon_key(t, key);
    char len[32];
    snprintf(len, sizeof(len), "[%zu]", n);
    toon_puts(t, len);
    if (fields) {
        toon_puts(t, "{");
        const char *f;
        json_t *unused;
        bool first = true;
        json_object_foreach((json_t *)fields, f, unused)
        {
            if (!first)
                toon_puts(t, ",");
            first = false;
            toon_key(t, f);
        }
        toon_puts(t, "}");
    }
    toon_puts(t, ":");
}

static bool toon_all_primitive(const json_t *a)
{
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)a, i, v)
    {
        if (!toon_primitive(v))
            return false;
    }
    return true;
}

/* The first element when every element is a non-empty object with the same keys and only
 * primitive values (a table), else NULL. */
static const json_t *toon_table(const json_t *a)
{
    const json_t *first = json_array_get(a, 0);
    if (!json_is_object(first) || !json_object_size(first))
        return NULL;
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)a, i, v)
    {
        if (!json_is_object(v) || json_object_size(v) != json_object_size(first))
            return NULL;
        const char *k;
        json_t *f;
        json_object_foreach((json_t *)first, k, f)
        {
            json_t *cell = json_object_get(v, k);
            if (!cell || !toon_primitive(cell))
                return NULL;
        }
    }
    return first;
}

/* " a,b,c" after a header. */
static void toon_inline(struct toon *t, const json_t *a)
{
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)a, i, v)
    {
        toon_puts(t, i ? "," : " ");
        toon_scalar(t, v, ',');
    }
}

static void toon_object(struct toon *t, const json_t *o, unsigned depth);
static void toon_list_item(struct toon *t, const json_t *v, unsigned depth);

/* An array under key (NULL: the root or a list item, the header already begun with "- "),
 * its header on the current line and its content below at depth + 1. */
static void toon_array(struct toon *t, const char *key, const json_t *a, unsigned depth)
{
    if (depth > TOON_MAX_DEPTH) {
        t->err = t->err ? t->err : -E2BIG;
        return;
    }
    size_t n = json_array_size(a);
    if (toon_all_primitive(a)) {
        toon_header(t, key, n, NULL);
        toon_inline(t, a);
        return;
    }
    /* A table is only for keyed or root arrays: a list item's inner array is a list. */
    const json_t *first = key || !depth ? toon_table(a) : NULL;
    toon_header(t, key, n, first);
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)a, i, v)
    {
        if (first) {
            toon_line(t, depth + 1);
            const char *k;
            json_t *unused;
            bool lead = true;
            json_object_foreach((json_t *)first, k, unused)
            {
                if (!lead)
                    toon_puts(t, ",");
                lead = false;
                toon_scalar(t, json_object_get(v, k), ',');
            }
        } else {
            toon_list_item(t, v, depth + 1);
        }
    }
}

/* key: value, key: [] / key[N]..., or key: and the fields below. */
static void toon_field(struct toon *t, const char *key, const json_t *v, unsigned depth)
{
    if (json_is_array(v) && json_array_size(v)) {
        toon_array(t, key, v, depth);
        return;
    }
    toon_key(t, key);
    if (json_is_array(v)) {
        toon_puts(t, ": []");
    } else if (json_is_object(v)) {
        toon_puts(t, ":");
        toon_object(t, v, depth + 1);
    } else {
        toon_puts(t, ": ");
        toon_scalar(t, v, ',');
    }
}

static void toon_object(struct toon *t, const json_t *o, unsigned depth)
{
    if (depth > TOON_MAX_DEPTH) {
        t->err = t->err ? t->err : -E2BIG;
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        toon_line(t, depth);
        toon_field(t, k, v, depth);
    }
}

/* One "- ..." line at depth (and what belongs to it below). An object's first field shares the
 * hyphen's line; its other fields, and the content of that first field, go one level deeper. */
static void toon_list_item(struct toon *t, const json_t *v, unsigned depth)
{
    toon_line(t, depth);
    if (toon_primitive(v)) {
        toon_puts(t, "- ");
        toon_scalar(t, v, ',');
    } else if (json_is_array(v)) {
        toon_puts(t, "- ");
        if (!json_array_size(v))
            toon_puts(t, "[0]:");
        else
            toon_array(t, NULL, v, depth);
    } else if (!json_object_size(v)) {
        toon_puts(t, "-");
    } else {
        toon_puts(t, "- ");
        void *it = json_object_iter((json_t *)v);
        const char *k = json_object_iter_key(it);
        toon_field(t, k, json_object_iter_value(it), depth + 1);
        for (it = json_object_iter_next((json_t *)v, it); it;
             it = json_object_iter_next((json_t *)v, it)) {
            toon_line(t, depth + 1);
            toon_field(t, json_object_iter_key(it), json_object_iter_value(it), depth + 1);
        }
    }
}

int toon_encode(json_t *value, char **ret)
{
    struct toon t = {0};
    buf_init(&t.out, TOON_MAX_TEXT);
    if (json_is_object(value))
        toon_object(&t, value, 0);
    else if (json_is_array(value) && !json_array_size(value))
        toon_puts(&t, "[]");
    else if (json_is_array(value))
        toon_array(&t, NULL, value, 0);
    else
        toon_scalar(&t, value, ',');
    if (t.err) {
        buf_free(&t.out);
        return t.err == -E2BIG ? -E2BIG : -ENOMEM;
    }
    *ret = buf_take(&t.out, NULL);
    if (!*ret) { /* an empty object: an empty document */
        *ret = strdup("");
        return *ret ? 0 : -ENOMEM;
    }
    return 0;
}
