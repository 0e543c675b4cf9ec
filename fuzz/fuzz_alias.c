// SPDX-License-Identifier: MIT
/*
 * fuzz_alias — the rule that turns an MCP server or tool name into a Python
 * identifier (mcp/alias.c). Names come from MCP servers and configuration
 * files. Whatever the name, the alias is a Python identifier that is not a
 * keyword, names that are identifiers already keep their spelling (apart
 * from a keyword's trailing '_'), the rule is idempotent, and one character
 * of the name is one character of the alias. mcp_alias_tools() sets the
 * same alias on every tool object of a list.
 *
 * Input: the name (bytes up to the first NUL), then optionally JSON for a
 * tools list.
 */
#include <string.h>

#include "fuzz.h"
#include "mcp/alias.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    size_t name_len;
    const uint8_t *raw = fuzz_split(&in, 0, &name_len);
    char *name = fuzz_strndup(raw, name_len);

    json_t *a = alias_of(name);
    const char *s = json_string_value(a);
    size_t len = json_string_length(a);
    FUZZ_CHECK(is_identifier(s, len));
    /* A keyword gets '_' behind, so the alias never is one: aliasing it changes nothing. */
    json_t *again = alias_of(s);
    FUZZ_CHECK(json_equal(a, again));
    json_decref(again);
    size_t chars = characters(name);
    bool prefixed = !*name || (*name >= '0' && *name <= '9');
    FUZZ_CHECK(len == chars + prefixed || len == chars + prefixed + 1);
    if (is_identifier(name, name_len))
        FUZZ_CHECK(strncmp(s, name, name_len) == 0 && (len == name_len || s[len - 1] == '_'));

    /* The same alias on every tool of a list. */
    json_t *tools = json_loadb((const char *)in.data, in.len, 0, NULL);
    if (json_is_array(tools)) {
        mcp_alias_tools(tools);
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t)
        {
            const char *tn = json_string_value(json_object_get(t, "name"));
            json_t *ta = json_object_get(t, "alias");
            if (!json_is_object(t) || !tn)
                continue;
            json_t *want = alias_of(tn);
            FUZZ_CHECK(json_equal(ta, want));
            json_decref(want);
        }
    }
    json_decref(tools);
    json_decref(a);
    free(name);
    return 0;
}
