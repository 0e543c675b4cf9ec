// SPDX-License-Identifier: MIT
/*
 * fuzz_alias — the rule that turns an MCP server or tool name into a Python
 * identifier (mcpclient/alias.c). Names come from MCP servers and configuration
 * files. Whatever the name, the alias is a lower-case Python identifier that
 * is not a keyword, an identifier is only lowercased (apart from a keyword's
 * trailing '_'), the rule is idempotent, and runs never make it longer than
 * the name. The earlier spelling keeps one character per character and the
 * case. mcp_alias_tools() gives every object of a list the rule's alias, or
 * it with "_2", "_3" when taken, never one alias twice.
 *
 * Input: the name (bytes up to the first NUL), then optionally JSON for a
 * tools list.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mcpclient/alias.h"
#include "util/utf8.h"

static bool is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool is_identifier(const char *s, size_t len)
{
    if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_word((unsigned char)s[i]))
            return false;
    return true;
}

/* The characters of name, counting a byte that starts no UTF-8 sequence as one. */
static size_t characters(const char *name)
{
    size_t n = 0, len = strlen(name);
    for (size_t i = 0; i < len; n++) {
        size_t k = utf8_seq_len((const unsigned char *)name + i, len - i);
        i += k ? k : 1;
    }
    return n;
}

static json_t *alias_of(const char *name)
{
    json_t *a = mcp_alias_json(name);
    FUZZ_CHECK(json_is_string(a));
    return a;
}

/* Lists longer than alias.c's cap get the rule without suffixes past it; a small bound here. */
#define ALIAS_LIST_CHECKED 64

static char *earlier_of(const char *name)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    FUZZ_CHECK(mcp_alias_earlier(name, &b) == 0 && b.data);
    return buf_take(&b, NULL);
}

static bool has_upper(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    size_t name_len;
    const uint8_t *raw = fuzz_split(&in, 0, &name_len);
    char *name = fuzz_strndup(raw, name_len);

    json_t *a = alias_of(name);
    const char *s = json_string_value(a);
    size_t len = json_string_length(a);
    FUZZ_CHECK(is_identifier(s, len) && !has_upper(s, len));
    /* A keyword gets '_' behind, so the alias never is one: aliasing it changes nothing. */
    json_t *again = alias_of(s);
    FUZZ_CHECK(json_equal(a, again));
    json_decref(again);
    /* Runs collapse: never longer than the name, but for a '_' in front and one behind. */
    size_t chars = characters(name);
    FUZZ_CHECK(len >= 1 && len <= chars + 2);
    if (is_identifier(name, name_len)) { /* lowercased, else as it was */
        for (size_t i = 0; i < name_len; i++)
            FUZZ_CHECK(s[i] == (name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]));
        FUZZ_CHECK(len == name_len || (len == name_len + 1 && s[len - 1] == '_'));
    }

    /* The earlier spelling, still accepted: one character per character, case kept. */
    char *old = earlier_of(name);
    size_t old_len = strlen(old);
    bool prefixed = !*name || (*name >= '0' && *name <= '9');
    FUZZ_CHECK(is_identifier(old, old_len));
    FUZZ_CHECK(old_len == chars + prefixed || old_len == chars + prefixed + 1);
    if (is_identifier(name, name_len))
        FUZZ_CHECK(strncmp(old, name, name_len) == 0);
    free(old);

    /* Within a list, each object's alias is the rule's, or it with "_N" (N >= 2) when taken,
     * and no two objects share one. */
    json_t *tools = json_loadb((const char *)in.data, in.len, 0, NULL);
    if (json_is_array(tools)) {
        mcp_alias_tools(tools);
        json_t *seen = json_object();
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t)
        {
            const char *tn = json_string_value(json_object_get(t, "name"));
            const char *ta = json_string_value(json_object_get(t, "alias"));
            if (!json_is_object(t) || !tn)
                continue;
            FUZZ_CHECK(ta && (i >= ALIAS_LIST_CHECKED || !json_object_get(seen, ta)));
            json_object_set_new(seen, ta, json_true());
            json_t *want = alias_of(tn);
            const char *w = json_string_value(want);
            size_t wl = strlen(w);
            FUZZ_CHECK(strncmp(ta, w, wl) == 0);
            if (ta[wl]) { /* "_N", N >= 2 */
                char *end = NULL;
                FUZZ_CHECK(ta[wl] == '_' && ta[wl + 1] >= '1' && ta[wl + 1] <= '9');
                FUZZ_CHECK(strtoul(ta + wl + 1, &end, 10) >= 2 && *end == '\0');
            }
            FUZZ_CHECK(mcp_alias_of(tools, tn) != NULL);
            json_decref(want);
        }
        json_decref(seen);
    }
    json_decref(tools);
    json_decref(a);
    free(name);
    return 0;
}
