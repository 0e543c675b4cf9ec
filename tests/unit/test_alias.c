// SPDX-License-Identifier: MIT
/* Unit tests: mcpclient/alias — the one rule from MCP server and tool names to Python identifiers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcpclient/alias.h"

static void aliases(void **state)
{
    /* upstream's _sanitize_identifier: runs of other characters become one '_', lowercased */
    static const char *const cases[][2] = {
        {"get_sum", "get_sum"},
        {"get-sum", "get_sum"},
        {"Get-Time", "get_time"},
        {"get\xe2\x80\x94sum", "get_sum"},
        {"caf\xc3\xa9", "caf_"},
        {"\xf0\x9f\x98\x80", "_"},
        {"class", "class_"},
        {"None", "none"},
        {"match", "match"},
        {"2fa", "_2fa"},
        {"", "_"},
        {"  ", "_"},
        {"a.b", "a_b"},
        {"a--b", "a_b"},
        {"a_-b", "a__b"},
        {"x\xff", "x_"},
        {"Tool Name", "tool_name"},
        {" padded ", "padded"},
        {"__dunder__", "__dunder__"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *a = mcp_alias_json(cases[i][0]);
        assert_non_null(a);
        if (strcmp(json_string_value(a), cases[i][1]) != 0)
            fail_msg("'%s' -> '%s', want '%s'", cases[i][0], json_string_value(a), cases[i][1]);
        json_decref(a);
    }
}

static const char *alias_at(json_t *items, size_t i, const char *key)
{
    json_t *v = json_object_get(json_array_get(items, i), key);
    return json_is_array(v) ? json_string_value(json_array_get(v, 0)) : json_string_value(v);
}

static void collisions_and_earlier_spellings(void **state)
{
    json_t *tools = json_pack("[{s:s}, {s:i}, s, {s:s}, {s:s}, {s:s}, {s:s}, {s:s}]", "name",
                              "get-sum", "name", 3, "junk", "name", "a.b", "name", "a_b", "name",
                              "A-B", "name", "Get-Time", "name", "class");
    mcp_alias_tools(tools);
    assert_string_equal(alias_at(tools, 0, "alias"), "get_sum");
    assert_null(json_object_get(json_array_get(tools, 0), "aliases")); /* the same spelling */
    assert_null(json_object_get(json_array_get(tools, 1), "alias"));
    assert_string_equal(alias_at(tools, 3, "alias"), "a_b");
    assert_string_equal(alias_at(tools, 4, "alias"), "a_b_2");
    assert_string_equal(alias_at(tools, 5, "alias"), "a_b_3");
    /* a.b was called a_b before: that is now another tool's alias, so it is not kept */
    assert_null(json_object_get(json_array_get(tools, 3), "aliases"));
    assert_string_equal(alias_at(tools, 5, "aliases"), "A_B");
    assert_string_equal(alias_at(tools, 6, "alias"), "get_time");
    assert_string_equal(alias_at(tools, 6, "aliases"), "Get_Time");
    assert_string_equal(alias_at(tools, 7, "alias"), "class_");
    assert_string_equal(mcp_alias_of(tools, "A-B"), "a_b_3");
    assert_null(mcp_alias_of(tools, "nope"));
    json_decref(tools);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aliases),
        cmocka_unit_test(collisions_and_earlier_spellings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
