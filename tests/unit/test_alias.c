// SPDX-License-Identifier: MIT
/* Unit tests: mcp/alias — the one rule from MCP server and tool names to Python identifiers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/alias.h"

static void aliases(void **state)
{
    static const char *const cases[][2] = {
        {"get_sum", "get_sum"},
        {"get-sum", "get_sum"},
        {"get\xe2\x80\x94sum", "get_sum"},
        {"caf\xc3\xa9", "caf_"},
        {"\xf0\x9f\x98\x80", "_"},
        {"class", "class_"},
        {"None", "None_"},
        {"match", "match"},
        {"2fa", "_2fa"},
        {"", "_"},
        {"a.b", "a_b"},
        {"x\xff", "x_"},
        {"Tool Name", "Tool_Name"},
        {"__dunder__", "__dunder__"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *a = mcp_alias_json(cases[i][0]);
        assert_non_null(a);
        if (strcmp(json_string_value(a), cases[i][1]) != 0)
            fail_msg("'%s' -> '%s', want '%s'", cases[i][0], json_string_value(a), cases[i][1]);
        json_decref(a);
    }
    json_t *tools = json_pack("[{s:s}, {s:i}, s]", "name", "get-sum", "name", 3, "junk");
    mcp_alias_tools(tools);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "alias")),
                        "get_sum");
    assert_null(json_object_get(json_array_get(tools, 1), "alias"));
    json_decref(tools);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aliases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
