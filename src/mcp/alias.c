// SPDX-License-Identifier: MIT
/*
 * alias — see alias.h.
 */
#include "mcp/alias.h"

#include <errno.h>
#include <string.h>

#include "util/macros.h"
#include "util/utf8.h"

/* Python's keyword.kwlist (soft keywords such as match and type are valid names). */
static const char *const alias_keywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

static bool alias_word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int mcp_alias(const char *name, struct buf *out)
{
    size_t start = out->len;
    int r = 0;
    if (!*name || (*name >= '0' && *name <= '9'))
        r = buf_appends(out, "_");
    const unsigned char *p = (const unsigned char *)name;
    size_t len = strlen(name);
    for (size_t i = 0; r == 0 && i < len;) {
        if (alias_word_char(p[i])) {
            r = buf_append(out, p + i, 1);
            i++;
            continue;
        }
        size_t n = utf8_seq_len(p + i, len - i);
        i += n ? n : 1; /* one '_' per character, or per byte that is not UTF-8 */
        r = buf_appends(out, "_");
    }
    for (size_t k = 0; r == 0 && k < ARRAY_SIZE(alias_keywords); k++)
        if (strcmp(out->data + start, alias_keywords[k]) == 0)
            r = buf_appends(out, "_");
    return r;
}

json_t *mcp_alias_json(const char *name)
{
    struct buf b;
    buf_init(&b, 4 * strlen(name) + 8);
    json_t *s = mcp_alias(name, &b) == 0 ? json_stringn(b.data, b.len) : NULL;
    buf_free(&b);
    return s;
}

void mcp_alias_tools(json_t *tools)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (json_is_object(t) && name)
            json_object_set_new(t, "alias", mcp_alias_json(name));
    }
}
