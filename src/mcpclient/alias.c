// SPDX-License-Identifier: MIT
/*
 * alias — see alias.h.
 */
#include "mcpclient/alias.h"

#include <errno.h>
#include <string.h>

#include "util/log.h"
#include "util/macros.h"
#include "util/utf8.h"

/* Python's keyword.kwlist (soft keywords such as match and type are valid names). */
static const char *const alias_keywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

#define ALIAS_MAX_ITEMS 4096 /* collision suffixes are looked for among this many names */

static bool alias_word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool alias_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Both spellings: runs (one '_' for a run of other characters, lowercased) or not. */
static int alias_build(const char *name, bool upstream, struct buf *out)
{
    size_t start = out->len;
    const unsigned char *p = (const unsigned char *)name;
    size_t len = strlen(name);
    if (upstream) {
        while (len && alias_space(p[len - 1]))
            len--;
        while (len && alias_space(*p))
            p++, len--;
    }
    int r = 0;
    if (!len || (*p >= '0' && *p <= '9'))
        r = buf_appends(out, "_");
    bool in_run = false;
    for (size_t i = 0; r == 0 && i < len;) {
        if (alias_word_char(p[i])) {
            char c = (char)p[i];
            if (upstream && c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            r = buf_append(out, &c, 1);
            in_run = false;
            i++;
            continue;
        }
        size_t n = utf8_seq_len(p + i, len - i);
        i += n ? n : 1; /* a character, or a byte that is not UTF-8 */
        if (!upstream || !in_run)
            r = buf_appends(out, "_");
        in_run = true;
    }
    for (size_t k = 0; r == 0 && k < ARRAY_SIZE(alias_keywords); k++)
        if (strcmp(out->data + start, alias_keywords[k]) == 0)
            r = buf_appends(out, "_");
    return r;
}

int mcp_alias(const char *name, struct buf *out)
{
    return alias_build(name, true, out);
}

int mcp_alias_earlier(const char *name, struct buf *out)
{
    return alias_build(name, false, out);
}

json_t *mcp_alias_json(const char *name)
{
    struct buf b;
    buf_init(&b, 4 * strlen(name) + 8);
    json_t *s = mcp_alias(name, &b) == 0 ? json_stringn(b.data, b.len) : NULL;
    buf_free(&b);
    return s;
}

/* Some object of items before index end has "alias" a. */
static bool alias_taken(json_t *items, size_t end, const char *a)
{
    for (size_t i = 0; i < end; i++) {
        const char *v = json_string_value(json_object_get(json_array_get(items, i), "alias"));
        if (v && strcmp(v, a) == 0)
            return true;
    }
    return false;
}

void mcp_alias_tools(json_t *items)
{
    size_t n = json_array_size(items);
    if (n > ALIAS_MAX_ITEMS)
        n = ALIAS_MAX_ITEMS; /* beyond: the rule without suffixes (quadratic work is capped) */
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *t = json_array_get(items, i);
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!json_is_object(t) || !name)
            continue;
        struct buf b;
        buf_init(&b, 4 * strlen(name) + 32);
        if (mcp_alias(name, &b) < 0) {
            buf_free(&b);
            continue;
        }
        size_t base = b.len;
        for (unsigned k = 2; i < n && alias_taken(items, i, b.data) && k < ALIAS_MAX_ITEMS + 2;
             k++) {
            b.len = base;
            b.data[base] = '\0';
            if (buf_printf(&b, "_%u", k) < 0)
                break;
        }
        json_object_set_new(t, "alias", json_stringn(b.data, b.len));
        buf_free(&b);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(items, i);
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *alias = json_string_value(json_object_get(t, "alias"));
        if (!name || !alias)
            continue;
        struct buf b;
        buf_init(&b, 4 * strlen(name) + 8);
        if (mcp_alias_earlier(name, &b) == 0 && strcmp(b.data, alias) != 0 &&
            !alias_taken(items, n, b.data) &&
            json_object_set_new(t, "aliases", json_pack("[s#]", b.data, b.len)) < 0)
            log_warn("mcp: tool %s keeps no earlier alias (out of memory)", name);
        buf_free(&b);
    }
}

const char *mcp_alias_of(json_t *items, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(items, i, t)
    {
        const char *v = json_string_value(json_object_get(t, "name"));
        if (v && strcmp(v, name) == 0)
            return json_string_value(json_object_get(t, "alias"));
    }
    return NULL;
}
