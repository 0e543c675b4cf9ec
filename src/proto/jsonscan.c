// SPDX-License-Identifier: MIT
/*
 * jsonscan — see jsonscan.h. A hand-written state machine over the bytes
 * (RFC 8259 grammar, UTF-8 after Unicode table 3-7) with an explicit stack of
 * container kinds, so deep nesting costs a byte per level and no recursion.
 */
#include "proto/jsonscan.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JSONSCAN_KEY_MAX 256 /* member names longer than this never match a path */

enum { KIND_ARRAY, KIND_OBJECT };

struct scan {
    const unsigned char *p, *end;
    const char *error;
    unsigned char kind[JSONSCAN_MAX_DEPTH];
    unsigned depth, max_depth;
    const char *const *path;
    size_t path_len;
    unsigned on_path;    /* containers from the top that lie on the path */
    bool next_on_path;   /* the value about to start continues the path (if an object) */
    bool next_is_target; /* the value about to start is the one asked for */
    bool in_target;
    unsigned target_depth;
    const unsigned char *begin;
    struct jsonscan_result *res;
    struct jsonscan_counts at_start;
};

static int scan_fail(struct scan *s, const char *why)
{
    s->error = why;
    return -EBADMSG;
}

static void scan_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int scan_hex4(struct scan *s, unsigned *ret)
{
    if (s->end - s->p < 4)
        return scan_fail(s, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = s->p[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16)
            return scan_fail(s, "invalid \\u escape");
        v = v << 4 | d;
    }
    s->p += 4;
    *ret = v;
    return 0;
}

/* Append code point cp as UTF-8 to out (when there is room; *len counts anyway). */
static void scan_put_utf8(unsigned char *out, size_t cap, size_t *len, unsigned cp)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (out && *len + n <= cap)
        memcpy(out + *len, b, n);
    *len += n;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), or 0. */
static size_t scan_utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F; /* no UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else
        return 0;
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* A string starting at the opening quote; its decoded bytes go to out (up to cap; *ret_len is
 * the full decoded length) when out is not NULL. */
static int scan_string(struct scan *s, unsigned char *out, size_t cap, size_t *ret_len)
{
    const unsigned char *start = ++s->p; /* past the quote */
    size_t len = 0;
    for (;;) {
        if (s->p >= s->end)
            return scan_fail(s, "unterminated string");
        unsigned char c = *s->p;
        if (c == '"')
            break;
        if (c < 0x20)
            return scan_fail(s, "control character in a string");
        if (c == '\\') {
            s->p++;
            if (s->p >= s->end)
                return scan_fail(s, "unterminated string");
            unsigned char e = *s->p++;
            static const char simple[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
            const char *k = e ? strchr(simple, e) : NULL;
            if (k) {
                scan_put_utf8(out, cap, &len, (unsigned char)decoded[k - simple]);
                continue;
            }
            if (e != 'u')
                return scan_fail(s, "invalid escape");
            unsigned cp;
            int r = scan_hex4(s, &cp);
            if (r < 0)
                return r;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return scan_fail(s, "lone low surrogate in a \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u')
                    return scan_fail(s, "lone high surrogate in a \\u escape");
                s->p += 2;
                if ((r = scan_hex4(s, &lo)) < 0)
                    return r;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return scan_fail(s, "invalid surrogate pair in a \\u escape");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            /* A value may hold U+0000 (RFC 8259); jansson refuses it in member names. */
            if (cp == 0 && out)
                return scan_fail(s, "\\u0000 in a member name is not allowed");
            scan_put_utf8(out, cap, &len, cp);
            continue;
        }
        size_t n = c < 0x80 ? 1 : scan_utf8_seq(s->p, s->end);
        if (n == 0)
            return scan_fail(s, "invalid UTF-8 in a string");
        if (out && len + n <= cap)
            memcpy(out + len, s->p, n);
        len += n;
        s->p += n;
    }
    s->res->total.strings++;
    s->res->total.string_bytes += (size_t)(s->p - start);
    s->p++; /* the closing quote */
    if (ret_len)
        *ret_len = len;
    return 0;
}

static int scan_number(struct scan *s)
{
    const unsigned char *p = s->p, *e = s->end;
    if (p < e && *p == '-')
        p++;
    if (p >= e || *p < '0' || *p > '9')
        return scan_fail(s, "invalid number");
    if (*p == '0')
        p++;
    else
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9')
            return scan_fail(s, "invalid number");
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || *p < '0' || *p > '9')
            return scan_fail(s, "invalid number");
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    s->p = p;
    return 0;
}

static void scan_counts_sub(struct jsonscan_counts *d, const struct jsonscan_counts *a,
                            const struct jsonscan_counts *b)
{
    d->values = a->values - b->values;
    d->containers = a->containers - b->containers;
    d->members = a->members - b->members;
    d->strings = a->strings - b->strings;
    d->string_bytes = a->string_bytes - b->string_bytes;
}

/* A value starts at s->p (whitespace skipped). */
static void scan_value_begins(struct scan *s)
{
    s->res->total.values++;
    if (s->next_is_target) {
        s->next_is_target = false;
        s->in_target = true;
        s->target_depth = s->depth;
        s->res->start = (size_t)(s->p - s->begin);
        s->at_start = s->res->total;
        s->at_start.values--; /* this value belongs to the target */
    }
}

/* A value ended at s->p, in a container at depth s->depth (0: the top level). */
static void scan_value_ends(struct scan *s)
{
    s->next_on_path = false;
    if (s->in_target && s->depth == s->target_depth) {
        s->in_target = false;
        s->res->found = true;
        s->res->end = (size_t)(s->p - s->begin);
        scan_counts_sub(&s->res->found_counts, &s->res->total, &s->at_start);
    }
}

/* A member name was read at the current depth: does it lead along the path? */
static void scan_key(struct scan *s, const unsigned char *key, size_t len, bool fits)
{
    unsigned d = s->depth;
    if (!s->path || s->res->found || s->in_target || s->on_path != d || d > s->path_len)
        return;
    const char *want = s->path[d - 1];
    if (!fits || strlen(want) != len || memcmp(want, key, len) != 0)
        return;
    if (d == s->path_len)
        s->next_is_target = true;
    else
        s->next_on_path = true;
}

static int scan_open(struct scan *s, int kind)
{
    if (s->depth >= s->max_depth)
        return scan_fail(s, "nested too deeply");
    bool continues = s->next_on_path || (s->depth == 0 && s->path && s->path_len > 0);
    s->kind[s->depth++] = (unsigned char)kind;
    s->res->total.containers++;
    if (kind == KIND_OBJECT && continues && s->on_path == s->depth - 1)
        s->on_path = s->depth;
    s->next_on_path = false;
    s->p++;
    return 0;
}

static void scan_close(struct scan *s)
{
    if (s->on_path == s->depth)
        s->on_path--;
    s->depth--;
    s->p++;
    scan_value_ends(s);
}

int jsonscan(const char *text, size_t len, unsigned max_depth, const char *const *path,
             struct jsonscan_result *ret, const char **ret_error)
{
    struct scan s = {
        .p = (const unsigned char *)text,
        .end = (const unsigned char *)text + len,
        .begin = (const unsigned char *)text,
        .max_depth = max_depth && max_depth < JSONSCAN_MAX_DEPTH ? max_depth : JSONSCAN_MAX_DEPTH,
        .path = path,
        .res = ret,
    };
    *ret = (struct jsonscan_result){0};
    while (path && path[s.path_len])
        s.path_len++;
    if (s.path_len == 0)
        s.path = NULL;
    unsigned char key[JSONSCAN_KEY_MAX];
    int r = 0;
    /* The states: a value is expected (after '[', ',' in an array, ':' or at the start), or a
     * value just ended (a ',' or a closing bracket is expected, or the end at depth 0). */
    bool want_value = true;
    for (;;) {
        scan_ws(&s);
        if (want_value) {
            if (s.p >= s.end)
                return *ret_error = "unexpected end of the document", -EBADMSG;
            scan_value_begins(&s);
            unsigned char c = *s.p;
            if (c == '{' || c == '[') {
                if ((r = scan_open(&s, c == '{' ? KIND_OBJECT : KIND_ARRAY)) < 0)
                    break;
                scan_ws(&s);
                if (s.p < s.end && *s.p == (c == '{' ? '}' : ']')) {
                    scan_close(&s);
                    want_value = false;
                    continue;
                }
                if (c == '[')
                    continue; /* the first element */
            } else {
                if (c == '"')
                    r = scan_string(&s, NULL, 0, NULL);
                else if (c == '-' || (c >= '0' && c <= '9'))
                    r = scan_number(&s);
                else if (s.end - s.p >= 4 && memcmp(s.p, "true", 4) == 0)
                    s.p += 4;
                else if (s.end - s.p >= 5 && memcmp(s.p, "false", 5) == 0)
                    s.p += 5;
                else if (s.end - s.p >= 4 && memcmp(s.p, "null", 4) == 0)
                    s.p += 4;
                else
                    r = scan_fail(&s, "invalid value");
                if (r < 0)
                    break;
                scan_value_ends(&s);
                want_value = false;
                continue;
            }
        } else {
            if (s.depth == 0) {
                if (s.p != s.end)
                    r = scan_fail(&s, "garbage after the document");
                break;
            }
            if (s.p >= s.end) {
                r = scan_fail(&s, "unexpected end of the document");
                break;
            }
            bool object = s.kind[s.depth - 1] == KIND_OBJECT;
            if (*s.p == (object ? '}' : ']')) {
                scan_close(&s);
                continue;
            }
            if (*s.p != ',') {
                r = scan_fail(&s, object ? "expected ',' or '}'" : "expected ',' or ']'");
                break;
            }
            s.p++;
            if (!object) {
                want_value = true;
                continue;
            }
            scan_ws(&s);
        }
        /* A member of the object at the current depth: "name" ':' then its value. */
        if (s.p >= s.end || *s.p != '"') {
            r = scan_fail(&s, "expected a member name");
            break;
        }
        size_t klen = 0;
        if ((r = scan_string(&s, key, sizeof(key), &klen)) < 0)
            break;
        ret->total.members++;
        scan_key(&s, key, klen <= sizeof(key) ? klen : 0, klen <= sizeof(key));
        scan_ws(&s);
        if (s.p >= s.end || *s.p != ':') {
            r = scan_fail(&s, "expected ':'");
            break;
        }
        s.p++;
        want_value = true;
    }
    if (r < 0) {
        *ret_error = s.error;
        return r;
    }
    return 0;
}

json_t *jsonscan_load_without(const char *text, size_t len, size_t start, size_t end)
{
    size_t n = len - (end - start) + 4;
    char *copy = malloc(n);
    if (!copy)
        return NULL;
    memcpy(copy, text, start);
    memcpy(copy + start, "null", 4);
    memcpy(copy + start + 4, text + end, len - end);
    json_error_t jerr;
    json_t *v = json_loadb(copy, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    free(copy);
    return v;
}

size_t jsonscan_tree_cost(const struct jsonscan_counts *c)
{
    /* jansson 2.14 on x86-64, allocations with 16 bytes of malloc overhead: a scalar in an array
     * ~57 bytes, a string ~84 + its bytes, an empty array ~153, an empty object ~249, each
     * member ~122 + its name. Rounded up. */
    return 64 * c->values + 32 * c->strings + 192 * c->containers + 128 * c->members +
           c->string_bytes;
}
