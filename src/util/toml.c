// SPDX-License-Identifier: MIT
/*
 * toml — see toml.h. A recursive-descent reader over the whole text, one
 * expression a line. What TOML forbids is refused: a table or key defined
 * twice, a [header] for a table made by dotted keys or inline, an inline
 * table extended afterwards, an array of tables mixed with a static array,
 * bad escapes, leading zeros, misplaced underscores, control characters, a
 * lone CR, invalid UTF-8. Each object and array the document makes has
 * flags (how it was defined) in a side table, as jansson values carry none.
 */
#include "util/toml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/fmt.h"
#include "util/utf8.h"

#define TOML_MAX_KEY_PARTS 32

enum {
    T_IMPLICIT = 1, /* made as the parent of a [header] */
    T_EXPLICIT = 2, /* named by a [header] or [[header]] */
    T_DOTTED = 4,   /* made by a dotted key */
    T_INLINE = 8,   /* an inline table, or inside one: frozen */
    T_AOT = 16,     /* an array of tables ([[header]]) */
};

struct toml {
    const char *p, *end;
    unsigned line;
    char *err;
    unsigned depth;
    json_t *root, *cur;
    struct {
        json_t *v;
        unsigned flags;
    } * tabs;
    size_t ntabs;
};

static int toml_fail(struct toml *t, const char *fmt, ...) _printf_(2, 3);
static int toml_fail(struct toml *t, const char *fmt, ...)
{
    if (!t->err) {
        va_list ap;
        va_start(ap, fmt);
        char *msg = fmt_va(fmt, ap);
        va_end(ap);
        t->err = msg ? fmt_str("line %u: %s", t->line, msg) : NULL;
        free(msg);
    }
    return -EINVAL;
}

static unsigned toml_flags(struct toml *t, json_t *v)
{
    for (size_t i = 0; i < t->ntabs; i++)
        if (t->tabs[i].v == v)
            return t->tabs[i].flags;
    return 0;
}

static int toml_set_flags(struct toml *t, json_t *v, unsigned flags)
{
    for (size_t i = 0; i < t->ntabs; i++)
        if (t->tabs[i].v == v) {
            t->tabs[i].flags = flags;
            return 0;
        }
    if (t->ntabs >= TOML_MAX_TABLES)
        return toml_fail(t, "more than %d tables", TOML_MAX_TABLES);
    t->tabs[t->ntabs].v = v;
    t->tabs[t->ntabs++].flags = flags;
    return 0;
}

/* A new object made with flags, added to parent under key (it must not exist). */
static json_t *toml_new_table(struct toml *t, json_t *parent, const char *key, unsigned flags)
{
    json_t *o = json_object();
    if (!o || json_object_set_new(parent, key, o) < 0) {
        toml_fail(t, "out of memory");
        return NULL;
    }
    return toml_set_flags(t, o, flags) < 0 ? NULL : o;
}

static bool toml_at(const struct toml *t, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(t->end - t->p) >= n && memcmp(t->p, s, n) == 0;
}

static void toml_ws(struct toml *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t'))
        t->p++;
}

/* At a newline (LF, CRLF): consume it. */
static bool toml_newline(struct toml *t)
{
    if (toml_at(t, "\n") || toml_at(t, "\r\n")) {
        t->p += *t->p == '\r' ? 2 : 1;
        t->line++;
        return true;
    }
    return false;
}

/* Optional whitespace and comment, then a newline or the end. */
static int toml_eol(struct toml *t)
{
    toml_ws(t);
    if (t->p < t->end && *t->p == '#')
        for (t->p++; t->p < t->end && *t->p != '\n' && !toml_at(t, "\r\n"); t->p++) {
            unsigned char c = (unsigned char)*t->p;
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return toml_fail(t, "control character in a comment");
        }
    if (t->p == t->end || toml_newline(t))
        return 0;
    return toml_fail(t, "expected the end of the line, found '%c'", *t->p);
}

/* Whitespace, comments and newlines inside arrays. */
static int toml_ws_nl(struct toml *t)
{
    for (;;) {
        toml_ws(t);
        if (t->p < t->end && *t->p == '#') {
            if (toml_eol(t) < 0)
                return -EINVAL;
        } else if (!toml_newline(t)) {
            return 0;
        }
    }
}

static int toml_hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* \uXXXX or \UXXXXXXXX at t->p (after the backslash and letter): UTF-8 into out. */
static int toml_unicode(struct toml *t, int digits, struct buf *out)
{
    uint32_t cp = 0;
    for (int i = 0; i < digits; i++) {
        int h = t->p < t->end ? toml_hex(*t->p) : -1;
        if (h < 0)
            return toml_fail(t, "\\%c needs %d hex digits", digits == 4 ? 'u' : 'U', digits);
        cp = cp << 4 | (uint32_t)h;
        t->p++;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return toml_fail(t, "escape of U+%04X, which is not a Unicode scalar value", cp);
    if (cp == 0)
        return toml_fail(t, "\\u0000: NUL characters are not supported");
    unsigned char u[4];
    size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (n == 1) {
        u[0] = (unsigned char)cp;
    } else {
        for (size_t i = n - 1; i > 0; i--, cp >>= 6)
            u[i] = (unsigned char)(0x80 | (cp & 0x3F));
        u[0] = (unsigned char)((n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0) | cp);
    }
    return buf_append(out, u, n) < 0 ? toml_fail(t, "out of memory") : 0;
}

/* A string at t->p (its opening quote): basic, literal, or either multi-line. */
static int toml_string(struct toml *t, bool allow_multi, struct buf *out)
{
    char q = *t->p;
    bool multi = allow_multi && toml_at(t, q == '"' ? "\"\"\"" : "'''");
    t->p += multi ? 3 : 1;
    if (multi)
        (void)toml_newline(t); /* a newline right after the opening is trimmed */
    for (;;) {
        if (t->p >= t->end)
            return toml_fail(t, "unterminated string");
        char c = *t->p;
        if (c == q && (!multi || toml_at(t, q == '"' ? "\"\"\"" : "'''"))) {
            if (!multi) {
                t->p++;
                return 0;
            }
            size_t run = 0;
            while (t->p + run < t->end && t->p[run] == q)
                run++;
            if (run > 5)
                return toml_fail(t, "too many quotes at the end of a multi-line string");
            if (buf_append(out, t->p, run - 3) < 0)
                return toml_fail(t, "out of memory");
            t->p += run;
            return 0;
        }
        if (multi && (c == '\n' || toml_at(t, "\r\n"))) {
            if (buf_append(out, "\n", 1) < 0)
                return toml_fail(t, "out of memory");
            (void)toml_newline(t);
            continue;
        }
        unsigned char uc = (unsigned char)c;
        if ((uc < 0x20 && c != '\t') || uc == 0x7f)
            return toml_fail(t, "control character in a string");
        if (c != '\\' || q == '\'') {
            if (buf_append(out, t->p++, 1) < 0)
                return toml_fail(t, "out of memory");
            continue;
        }
        t->p++; /* the backslash */
        if (multi) {
            /* A backslash that ends a line trims the whitespace and newlines that follow. */
            const char *s = t->p;
            while (s < t->end && (*s == ' ' || *s == '\t'))
                s++;
            if (s < t->end && (*s == '\n' || (*s == '\r' && s + 1 < t->end && s[1] == '\n'))) {
                t->p = s;
                while (t->p < t->end) {
                    if (*t->p == ' ' || *t->p == '\t')
                        t->p++;
                    else if (!toml_newline(t))
                        break;
                }
                continue;
            }
        }
        if (t->p >= t->end)
            return toml_fail(t, "unterminated string");
        char e = *t->p++;
        const char *map = e ? strchr("b\bt\tn\nf\fr\r\"\"\\\\", e) : NULL;
        if (e == 'u' || e == 'U') {
            if (toml_unicode(t, e == 'u' ? 4 : 8, out) < 0)
                return -EINVAL;
        } else if (map && (map - "b\bt\tn\nf\fr\r\"\"\\\\") % 2 == 0) {
            if (buf_append(out, map + 1, 1) < 0)
                return toml_fail(t, "out of memory");
        } else {
            return toml_fail(t, "invalid escape \\%c", e);
        }
    }
}

/* A simple key: bare, or one quoted string on one line. */
static int toml_simple_key(struct toml *t, struct buf *out)
{
    buf_reset(out);
    if (t->p < t->end && (*t->p == '"' || *t->p == '\'')) {
        if (toml_string(t, false, out) < 0)
            return -EINVAL;
    } else {
        const char *s = t->p;
        while (t->p < t->end && (*t->p == '_' || *t->p == '-' || (*t->p >= 'a' && *t->p <= 'z') ||
                                 (*t->p >= 'A' && *t->p <= 'Z') || (*t->p >= '0' && *t->p <= '9')))
            t->p++;
        if (t->p == s)
            return toml_fail(t, "expected a key");
        if (buf_append(out, s, (size_t)(t->p - s)) < 0)
            return toml_fail(t, "out of memory");
    }
    if (buf_append(out, "", 0) < 0) /* an empty quoted key still gets its terminator */
        return toml_fail(t, "out of memory");
    return 0;
}

/* A dotted key into parts (each strdup'ed). */
static int toml_key(struct toml *t, char **parts, size_t *ret_n)
{
    struct buf b;
    buf_init(&b, (size_t)(t->end - t->p) + 1);
    size_t n = 0;
    int r = 0;
    for (;;) {
        toml_ws(t);
        if (n == TOML_MAX_KEY_PARTS) {
            r = toml_fail(t, "a key of more than %d parts", TOML_MAX_KEY_PARTS);
            break;
        }
        if ((r = toml_simple_key(t, &b)) < 0)
            break;
        parts[n] = strdup(b.data ? b.data : "");
        if (!parts[n]) {
            r = toml_fail(t, "out of memory");
            break;
        }
        n++;
        toml_ws(t);
        if (t->p >= t->end || *t->p != '.')
            break;
        t->p++;
    }
    buf_free(&b);
    *ret_n = n;
    return r;
}

static void toml_parts_free(char **parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
}

static int toml_value(struct toml *t, json_t **ret);

/* Digits with single underscores between them; at least one digit. */
static bool toml_digits(const char *s, size_t n, int (*isdig)(char))
{
    if (!n || s[0] == '_' || s[n - 1] == '_')
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '_' ? s[i + 1] == '_' : isdig(s[i]) < 0)
            return false;
    return true;
}

static int toml_dec(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : -1;
}
static int toml_oct(char c)
{
    return c >= '0' && c <= '7' ? c - '0' : -1;
}
static int toml_bin(char c)
{
    return c == '0' || c == '1' ? c - '0' : -1;
}

/* A date, time or date-time as written: the shapes of RFC 3339 TOML accepts. */
static bool toml_datetime(const char *s, size_t n)
{
    static const char *const shapes[] = {"dddd-dd-dd", "dd:dd:dd", "dddd-dd-ddTdd:dd:dd"};
    for (size_t k = 0; k < 3; k++) {
        const char *shape = shapes[k];
        size_t m = strlen(shape), i = 0;
        if (n < m)
            continue;
        for (; i < m; i++)
            if (shape[i] == 'd'   ? toml_dec(s[i]) < 0
                : shape[i] == 'T' ? s[i] != 'T' && s[i] != 't' && s[i] != ' '
                                  : s[i] != shape[i])
                break;
        if (i < m)
            continue;
        if (k == 0) {
            if (n == m)
                return true;
            continue; /* perhaps a date-time */
        }
        if (i < n && s[i] == '.') { /* fraction of a second */
            size_t d = 0;
            for (i++; i < n && toml_dec(s[i]) >= 0; i++)
                d++;
            if (!d)
                return false;
        }
        if (k == 1 || i == n)
            return i == n;
        if (s[i] == 'Z' || s[i] == 'z')
            return i + 1 == n;
        return n - i == 6 && (s[i] == '+' || s[i] == '-') && toml_dec(s[i + 1]) >= 0 &&
               toml_dec(s[i + 2]) >= 0 && s[i + 3] == ':' && toml_dec(s[i + 4]) >= 0 &&
               toml_dec(s[i + 5]) >= 0;
    }
    return false;
}

/* A number, boolean, date or time: the token up to a delimiter. */
static int toml_scalar(struct toml *t, json_t **ret)
{
    const char *s = t->p;
    while (t->p < t->end && !strchr(" \t\r\n#,]}", *t->p))
        t->p++;
    /* "1979-05-27 07:32:00": a date, a space, a time. */
    if (t->p - s == 10 && toml_datetime(s, 10) && t->end - t->p > 3 && *t->p == ' ' &&
        toml_dec(t->p[1]) >= 0 && toml_dec(t->p[2]) >= 0 && t->p[3] == ':')
        for (t->p++; t->p < t->end && !strchr(" \t\r\n#,]}", *t->p);)
            t->p++;
    size_t n = (size_t)(t->p - s);
    if (!n)
        return toml_fail(t, "expected a value");
    char tok[128]; /* no valid number, date or boolean is longer */
    if (n >= sizeof(tok))
        return toml_fail(t, "invalid value '%.40s...'", s);
    memcpy(tok, s, n);
    tok[n] = '\0';
    if (strcmp(tok, "true") == 0 || strcmp(tok, "false") == 0)
        return (*ret = json_boolean(tok[0] == 't')) ? 0 : toml_fail(t, "out of memory");
    if (toml_datetime(tok, n))
        return (*ret = json_stringn(tok, n)) ? 0 : toml_fail(t, "out of memory");
    char clean[128];
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (tok[i] != '_')
            clean[c++] = tok[i];
    clean[c] = '\0';
    const char *u = tok + (*tok == '+' || *tok == '-');
    size_t un = n - (size_t)(u - tok);
    if (un > 2 && u == tok && u[0] == '0' && strchr("xob", u[1])) {
        int (*dig)(char) = u[1] == 'x' ? toml_hex : u[1] == 'o' ? toml_oct : toml_bin;
        if (!toml_digits(u + 2, un - 2, dig))
            return toml_fail(t, "invalid number '%s'", tok);
        errno = 0;
        unsigned long long v = strtoull(clean + 2, NULL, u[1] == 'x' ? 16 : u[1] == 'o' ? 8 : 2);
        if (errno || v > INT64_MAX)
            return toml_fail(t, "integer '%s' out of range", tok);
        return (*ret = json_integer((json_int_t)v)) ? 0 : toml_fail(t, "out of memory");
    }
    if (strcmp(u, "inf") == 0 || strcmp(u, "nan") == 0)
        return toml_fail(t, "'%s': JSON has no infinities or NaN", tok);
    /* [+-]? int ( . digits )? ( [eE] [+-]? digits )? */
    size_t ilen = strcspn(u, ".eE");
    if (!toml_digits(u, ilen, toml_dec) || (ilen > 1 && u[0] == '0'))
        return toml_fail(t, "invalid value '%s'", tok);
    const char *q = u + ilen;
    bool real = false;
    if (*q == '.') {
        size_t f = strcspn(q + 1, "eE");
        if (!toml_digits(q + 1, f, toml_dec))
            return toml_fail(t, "invalid number '%s'", tok);
        q += 1 + f;
        real = true;
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!toml_digits(q, strlen(q), toml_dec))
            return toml_fail(t, "invalid number '%s'", tok);
        q += strlen(q);
        real = true;
    }
    if (*q)
        return toml_fail(t, "invalid value '%s'", tok);
    errno = 0;
    if (real) {
        double d = strtod(clean, NULL);
        if (errno == ERANGE && (d > 1 || d < -1))
            return toml_fail(t, "float '%s' out of range", tok);
        return (*ret = json_real(d)) ? 0 : toml_fail(t, "out of memory");
    }
    long long v = strtoll(clean, NULL, 10);
    if (errno)
        return toml_fail(t, "integer '%s' out of range", tok);
    return (*ret = json_integer(v)) ? 0 : toml_fail(t, "out of memory");
}

/* Set key path parts[0..n) = v in table, making dotted tables (flags) on the way. v is stolen. */
static int toml_assign(struct toml *t, json_t *table, char **parts, size_t n, json_t *v,
                       unsigned flags)
{
    for (size_t i = 0; i + 1 < n; i++) {
        json_t *next = json_object_get(table, parts[i]);
        if (!next) {
            next = toml_new_table(t, table, parts[i], T_DOTTED | flags);
        } else if (!json_is_object(next) || !(toml_flags(t, next) & T_DOTTED) ||
                   (toml_flags(t, next) & T_INLINE) != flags) {
            json_decref(v);
            return toml_fail(t, "'%s' is defined already: dotted keys cannot add to it", parts[i]);
        }
        if (!next) {
            json_decref(v);
            return -EINVAL;
        }
        table = next;
    }
    if (json_object_get(table, parts[n - 1])) {
        json_decref(v);
        return toml_fail(t, "key '%s' is defined twice", parts[n - 1]);
    }
    if (json_object_set_new(table, parts[n - 1], v) < 0)
        return toml_fail(t, "out of memory");
    return 0;
}

/* key = value, into table; flags T_INLINE inside inline tables. */
static int toml_keyval(struct toml *t, json_t *table, unsigned flags)
{
    char *parts[TOML_MAX_KEY_PARTS];
    size_t n = 0;
    int r = toml_key(t, parts, &n);
    if (r == 0) {
        toml_ws(t);
        if (t->p >= t->end || *t->p != '=')
            r = toml_fail(t, "expected '=' after the key");
    }
    json_t *v = NULL;
    if (r == 0) {
        t->p++;
        toml_ws(t);
        r = toml_value(t, &v);
    }
    if (r == 0)
        r = toml_assign(t, table, parts, n, v, flags);
    toml_parts_free(parts, n);
    return r;
}

static int toml_array(struct toml *t, json_t **ret)
{
    json_t *a = json_array();
    if (!a)
        return toml_fail(t, "out of memory");
    t->p++; /* [ */
    for (;;) {
        if (toml_ws_nl(t) < 0)
            goto fail;
        if (t->p < t->end && *t->p == ']')
            break;
        json_t *v = NULL;
        if (toml_value(t, &v) < 0 || json_array_append_new(a, v) < 0)
            goto fail;
        if (toml_ws_nl(t) < 0)
            goto fail;
        if (t->p < t->end && *t->p == ',') {
            t->p++;
            continue;
        }
        if (t->p < t->end && *t->p == ']')
            break;
        toml_fail(t, "expected ',' or ']' in an array");
        goto fail;
    }
    t->p++;
    *ret = a;
    return 0;
fail:
    json_decref(a);
    return toml_fail(t, "invalid array");
}

static int toml_inline_table(struct toml *t, json_t **ret)
{
    json_t *o = json_object();
    if (!o || toml_set_flags(t, o, T_INLINE | T_EXPLICIT) < 0) {
        json_decref(o);
        return toml_fail(t, "out of memory");
    }
    t->p++; /* { */
    toml_ws(t);
    if (t->p < t->end && *t->p == '}') {
        t->p++;
        *ret = o;
        return 0;
    }
    for (;;) {
        toml_ws(t);
        if (toml_keyval(t, o, T_INLINE) < 0)
            break;
        toml_ws(t);
        if (t->p < t->end && *t->p == ',') {
            t->p++;
            continue;
        }
        if (t->p < t->end && *t->p == '}') {
            t->p++;
            *ret = o;
            return 0;
        }
        toml_fail(t, "expected ',' or '}' in an inline table (on one line)");
        break;
    }
    json_decref(o);
    return -EINVAL;
}

static int toml_value(struct toml *t, json_t **ret)
{
    if (t->p >= t->end)
        return toml_fail(t, "expected a value");
    if (++t->depth > TOML_MAX_DEPTH)
        return toml_fail(t, "arrays and inline tables nested deeper than %d", TOML_MAX_DEPTH);
    int r;
    if (*t->p == '"' || *t->p == '\'') {
        struct buf b;
        buf_init(&b, (size_t)(t->end - t->p) + 1);
        r = toml_string(t, true, &b);
        if (r == 0 && !(*ret = json_stringn(b.data ? b.data : "", b.len)))
            r = toml_fail(t, "out of memory");
        buf_free(&b);
    } else if (*t->p == '[') {
        r = toml_array(t, ret);
    } else if (*t->p == '{') {
        r = toml_inline_table(t, ret);
    } else {
        r = toml_scalar(t, ret);
    }
    t->depth--;
    return r;
}

/* [key] or [[key]]: the table later key/value lines go to. */
static int toml_header(struct toml *t)
{
    bool aot = toml_at(t, "[[");
    t->p += aot ? 2 : 1;
    char *parts[TOML_MAX_KEY_PARTS];
    size_t n = 0;
    int r = toml_key(t, parts, &n);
    if (r == 0 && !toml_at(t, aot ? "]]" : "]"))
        r = toml_fail(t, "expected '%s' to end the table header", aot ? "]]" : "]");
    if (r == 0)
        t->p += aot ? 2 : 1;
    json_t *table = t->root;
    for (size_t i = 0; r == 0 && i < n; i++) {
        bool last = i + 1 == n;
        json_t *v = json_object_get(table, parts[i]);
        unsigned f = v ? toml_flags(t, v) : 0;
        if (last && aot) {
            if (!v) {
                v = json_array();
                if (!v || json_object_set_new(table, parts[i], v) < 0)
                    r = toml_fail(t, "out of memory");
                else
                    r = toml_set_flags(t, v, T_AOT);
            } else if (!(f & T_AOT)) {
                r = toml_fail(t, "'%s' is defined already, not as an array of tables", parts[i]);
            }
            json_t *o = r == 0 ? json_object() : NULL;
            if (r == 0 && (!o || json_array_append_new(v, o) < 0))
                r = toml_fail(t, "out of memory");
            if (r == 0)
                r = toml_set_flags(t, o, T_EXPLICIT);
            table = o;
        } else if (last) {
            if (!v)
                table = toml_new_table(t, table, parts[i], T_EXPLICIT);
            else if (json_is_object(v) && f == T_IMPLICIT)
                r = toml_set_flags(t, table = v, T_EXPLICIT);
            else
                r = toml_fail(t, "table '%s' is defined twice", parts[i]);
        } else if (!v) {
            table = toml_new_table(t, table, parts[i], T_IMPLICIT);
        } else if (json_is_array(v) && (f & T_AOT)) {
            table = json_array_get(v, json_array_size(v) - 1);
        } else if (json_is_object(v) && !(f & T_INLINE)) {
            table = v;
        } else {
            r = toml_fail(t, "'%s' is not a table", parts[i]);
        }
        if (r == 0 && !table)
            r = -EINVAL;
    }
    toml_parts_free(parts, n);
    if (r == 0)
        t->cur = table;
    return r;
}

int toml_parse(const char *text, size_t len, json_t **ret, char **ret_error)
{
    *ret_error = NULL;
    struct toml t = {.p = text, .end = text + len, .line = 1};
    /* The document is UTF-8 (TOML requires it, and jansson's strings do). */
    for (size_t i = 0; i < len;) {
        size_t n = text[i] ? utf8_seq_len((const unsigned char *)text + i, len - i) : 0;
        if (!n) {
            for (const char *s = text; s < text + i; s++)
                t.line += *s == '\n';
            toml_fail(&t, text[i] ? "invalid UTF-8" : "a NUL byte");
            *ret_error = t.err;
            return t.err ? -EINVAL : -ENOMEM;
        }
        i += n;
    }
    t.tabs = calloc(TOML_MAX_TABLES, sizeof(*t.tabs));
    t.root = json_object();
    t.cur = t.root;
    int r = t.tabs && t.root ? toml_set_flags(&t, t.root, T_EXPLICIT) : -ENOMEM;
    if (t.p + 3 <= t.end && memcmp(t.p, "\xEF\xBB\xBF", 3) == 0)
        t.p += 3; /* a byte order mark */
    while (r == 0 && t.p < t.end) {
        toml_ws(&t);
        if (t.p >= t.end)
            break;
        if (*t.p == '#' || *t.p == '\n' || *t.p == '\r')
            r = toml_eol(&t);
        else if (*t.p == '[')
            r = toml_header(&t) < 0 ? -EINVAL : toml_eol(&t);
        else
            r = toml_keyval(&t, t.cur, 0) < 0 ? -EINVAL : toml_eol(&t);
    }
    free(t.tabs);
    if (r < 0) {
        json_decref(t.root);
        if (r == -EINVAL && !t.err)
            return -ENOMEM; /* the message itself could not be made */
        *ret_error = t.err;
        return r == -ENOMEM && !t.err ? -ENOMEM : -EINVAL;
    }
    *ret = t.root;
    return 0;
}
