// SPDX-License-Identifier: MIT
/* Unit tests: the TOON encoder (util/toon.c) on the shapes of the TOON specification's
 * examples — objects, inline primitive arrays, tables, expanded lists, objects as list items,
 * quoting, canonical numbers — and the answers of --compat code-execution-mode. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "util/toon.h"

/* The TOON text of the JSON text in. */
static void expect(const char *in, const char *want)
{
    json_error_t err;
    json_t *v = json_loads(in, JSON_DECODE_ANY, &err);
    assert_non_null(v);
    char *out = NULL;
    assert_int_equal(toon_encode(v, &out), 0);
    if (strcmp(out, want) != 0)
        fail_msg("TOON of %s:\n--- got\n%s\n--- want\n%s", in, out, want);
    free(out);
    json_decref(v);
}

static void objects_and_primitives(void **state)
{
    expect("{\"id\": 123, \"name\": \"Ada\", \"active\": true, \"x\": null}",
           "id: 123\nname: Ada\nactive: true\nx: null");
    expect("{\"user\": {\"id\": 1, \"meta\": {\"a\": \"b\"}}, \"empty\": {}}",
           "user:\n  id: 1\n  meta:\n    a: b\nempty:");
    expect("{}", "");
    expect("\"hello\"", "hello");
    expect("42", "42");
    expect("{\"my-key\": 1, \"a.b\": 2, \"_x\": 3, \"\": 4, \"9z\": 5}",
           "\"my-key\": 1\na.b: 2\n_x: 3\n\"\": 4\n\"9z\": 5");
}

static void quoting(void **state)
{
    expect("{\"a\": \"\", \"b\": \" lead\", \"c\": \"true\", \"d\": \"42\", \"e\": \"-3.5e2\","
           " \"f\": \"a:b\", \"g\": \"x,y\", \"h\": \"[1]\", \"i\": \"-\", \"j\": \"#tag\","
           " \"k\": \"say \\\"hi\\\"\", \"l\": \"line\\nnext\\ttab\\u0001\", \"m\": \"ünï code\","
           " \"n\": \"05\", \"o\": \"+1\", \"p\": \"a b\"}",
           "a: \"\"\nb: \" lead\"\nc: \"true\"\nd: \"42\"\ne: \"-3.5e2\"\nf: \"a:b\"\n"
           "g: \"x,y\"\nh: \"[1]\"\ni: \"-\"\nj: \"#tag\"\nk: \"say \\\"hi\\\"\"\n"
           "l: \"line\\nnext\\ttab\\u0001\"\nm: ünï code\nn: \"05\"\no: \"+1\"\np: a b");
}

static void numbers(void **state)
{
    expect("[1.5, 1.0, -0.0, 0.000001, 1e20, 1e21, 1e-7, 123456789.125, -2]",
           "[9]: 1.5,1,0,0.000001,100000000000000000000,1e+21,1e-7,123456789.125,-2");
}

static void arrays(void **state)
{
    expect("{\"tags\": [\"reading\", \"gaming\"], \"nums\": [1, 2, 3], \"none\": []}",
           "tags[2]: reading,gaming\nnums[3]: 1,2,3\nnone: []");
    expect("{\"items\": [{\"sku\": \"A1\", \"qty\": 2, \"price\": 9.99},"
           " {\"price\": 14.5, \"sku\": \"B2\", \"qty\": 1}]}",
           "items[2]{sku,qty,price}:\n  A1,2,9.99\n  B2,1,14.5");
    expect("{\"items\": [{\"id\": 1, \"name\": \"First\"}, {\"id\": 2, \"name\": \"Second\","
           " \"extra\": true}]}",
           "items[2]:\n  - id: 1\n    name: First\n  - id: 2\n    name: Second\n    extra: true");
    expect("{\"pairs\": [[1, 2], [3, 4], []]}", "pairs[3]:\n  - [2]: 1,2\n  - [2]: 3,4\n  - [0]:");
    expect("{\"items\": [1, {\"a\": 1}, \"text\", {}]}",
           "items[4]:\n  - 1\n  - a: 1\n  - text\n  -");
    expect("{\"items\": [{\"users\": [{\"id\": 1, \"name\": \"Ada\"}, {\"id\": 2,"
           " \"name\": \"Bob\"}], \"status\": \"active\"}]}",
           "items[1]:\n  - users[2]{id,name}:\n      1,Ada\n      2,Bob\n    status: active");
    expect("{\"items\": [{\"nested\": {\"x\": 1}, \"id\": 1}]}",
           "items[1]:\n  - nested:\n      x: 1\n    id: 1");
    expect("[{\"a\": 1}, {\"a\": 2}]", "[2]{a}:\n  1\n  2");
    expect("[]", "[]");
    expect("{\"rows\": [{\"v\": \"x,y\"}]}", "rows[1]{v}:\n  \"x,y\"");
}

/* The answers of sandboxd mcp --compat code-execution-mode with MCP_BRIDGE_OUTPUT_MODE=toon. */
static void compat_payloads(void **state)
{
    expect("{\"status\": \"success\", \"summary\": \"Success\", \"exitCode\": 0,"
           " \"stdout\": [\"line1\", \"line2\"]}",
           "status: success\nsummary: Success\nexitCode: 0\nstdout[2]: line1,line2");
    expect("{\"status\": \"validation_error\", \"summary\": \"Missing 'code' argument\","
           " \"error\": \"Missing 'code' argument\"}",
           "status: validation_error\nsummary: Missing 'code' argument\n"
           "error: Missing 'code' argument");
}

static void too_deep(void **state)
{
    json_t *v = json_object();
    json_t *top = v;
    for (int i = 0; i < TOON_MAX_DEPTH + 5; i++) {
        json_t *n = json_object();
        json_object_set_new(v, "k", n);
        v = n;
    }
    char *out = NULL;
    assert_int_equal(toon_encode(top, &out), -E2BIG);
    assert_null(out);
    json_decref(top);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(objects_and_primitives),
        cmocka_unit_test(quoting),
        cmocka_unit_test(numbers),
        cmocka_unit_test(arrays),
        cmocka_unit_test(compat_payloads),
        cmocka_unit_test(too_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
