// SPDX-License-Identifier: MIT
/* Unit tests: handlers/yaml — the YAML 1.2 core schema dialect, its errors, and the caps on the
 * expanded document (aliases count as what they repeat and are shared, never copied). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "handlers/yaml.h"

static json_t *load(const char *text)
{
    json_t *v = NULL;
    char *err = NULL;
    if (flow_yaml_load(text, strlen(text), NULL, &v, NULL, &err) < 0)
        fail_msg("yaml: %s: %s", text, err ? err : "?");
    free(err);
    return v;
}

/* The error message of a document that must fail with err (caller frees). */
static char *failure(const char *text, int err)
{
    json_t *v = NULL;
    char *msg = NULL;
    struct flow_yaml_info info;
    int r = flow_yaml_load(text, strlen(text), NULL, &v, &info, &msg);
    if (r != -err)
        fail_msg("yaml: %s: expected %d, got %d (%s)", text, -err, r, msg ? msg : "");
    assert_null(v);
    assert_true(info.line > 0 || strstr(msg, "line") == NULL);
    assert_non_null(msg);
    return msg;
}

static void core_schema_scalars(void **state)
{
    /* value: the YAML text after "v: ", and the JSON it must become */
    static const char *const cases[][2] = {
        {"1", "1"},
        {"-7", "-7"},
        {"+5", "5"},
        {"017", "17"}, /* decimal in 1.2, octal 15 in 1.1 */
        {"0o17", "15"},
        {"0x1F", "31"},
        {"0x-5", "\"0x-5\""},
        {"0x 5", "\"0x 5\""},
        {"9223372036854775807", "9223372036854775807"},
        {"-9223372036854775808", "-9223372036854775808"},
        {"1.5", "1.5"},
        {"1.", "1.0"},
        {".5", "0.5"},
        {"-2.5e-3", "-0.0025"},
        {"1e3", "1000.0"},
        {"1_000", "\"1_000\""},
        {"true", "true"},
        {"True", "true"},
        {"TRUE", "true"},
        {"tRUE", "\"tRUE\""},
        {"false", "false"},
        {"yes", "\"yes\""}, /* YAML 1.1 booleans are strings */
        {"on", "\"on\""},
        {"no", "\"no\""},
        {"off", "\"off\""},
        {"y", "\"y\""},
        {"1:30", "\"1:30\""}, /* no sexagesimal */
        {"~", "null"},
        {"null", "null"},
        {"Null", "null"},
        {"", "null"},
        {"'1'", "\"1\""},
        {"\"true\"", "\"true\""},
        {"!!str 1", "\"1\""},
        {"!!int \"0x10\"", "16"},
        {"!!float 1", "1.0"},
        {"!!bool \"false\"", "false"},
        {"!!null ''", "null"},
        {"! 12", "\"12\""},
        {"2001-12-14", "\"2001-12-14\""}, /* no timestamps */
        {"<<", "\"<<\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char doc[128];
        snprintf(doc, sizeof(doc), "v: %s\n", cases[i][0]);
        json_t *v = load(doc);
        json_error_t e;
        json_t *want = json_loads(cases[i][1], JSON_DECODE_ANY, &e);
        json_t *got = json_object_get(v, "v");
        if (!json_equal(got, want) || json_typeof(got) != json_typeof(want)) {
            char *shown = json_dumps(got, JSON_ENCODE_ANY);
            fail_msg("v: %s -> %s, want %s", cases[i][0], shown, cases[i][1]);
        }
        json_decref(want);
        json_decref(v);
    }
}

static void keys_and_merge(void **state)
{
    json_t *v = load("1: a\n1.5: b\ntrue: c\n~: d\n'q k': e\n<<: {x: 1}\n");
    assert_string_equal(json_string_value(json_object_get(v, "1")), "a");
    assert_string_equal(json_string_value(json_object_get(v, "1.5")), "b");
    assert_string_equal(json_string_value(json_object_get(v, "true")), "c");
    assert_string_equal(json_string_value(json_object_get(v, "null")), "d");
    assert_string_equal(json_string_value(json_object_get(v, "q k")), "e");
    /* no merge keys: "<<" is a key like any other */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "<<"), "x")), 1);
    assert_null(json_object_get(v, "x"));
    json_decref(v);
    json_t *empty = load("");
    assert_true(json_is_null(empty));
    json_decref(empty);
}

static void errors_name_the_line(void **state)
{
    static const struct {
        const char *doc;
        const char *says;
    } cases[] = {
        {"a: 1\nb: 2\na: 3\n", "duplicate key 'a' at line 3"},
        {"m:\n  x: 1\n  'x': 2\n", "duplicate key 'x' at line 3"},
        {"a: 9223372036854775808\n", "line 1 is outside the 64-bit range"},
        {"a: 0xFFFFFFFFFFFFFFFF\n", "outside the 64-bit range"},
        {"a: 1\nb: .inf\n", ".inf at line 2 is not a finite number"},
        {"a: -.Inf\n", "not a finite number"},
        {"a: .nan\n", "not a finite number"},
        {"a: 1e999\n", "too large for a double"},
        {"a: !!binary aGVsbG8=\n", "not supported"},
        {"a: !custom x\n", "not supported"},
        {"a: !!set {x}\n", "not supported"},
        {"a: !!int abc\n", "is not a !!int"},
        {"a: 1\n---\nb: 2\n", "more than one document"},
        {"a: *nope\n", "names no earlier anchor"},
        {"a: &x [1, *x]\n", "names no earlier anchor"},
        {"? [1, 2]\n: x\n", "key at line 1 is not a scalar"},
        {"a: [unclosed\n", "YAML error at line"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *msg = failure(cases[i].doc, EINVAL);
        if (!strstr(msg, cases[i].says))
            fail_msg("%s: '%s' does not say '%s'", cases[i].doc, msg, cases[i].says);
        free(msg);
    }
}

static void aliases_are_shared_and_counted(void **state)
{
    json_t *v = NULL;
    char *err = NULL;
    struct flow_yaml_info info;
    const char *doc = "base: &b {x: [1, 2, 3]}\ncopies: [*b, *b, *b]\n";
    assert_int_equal(flow_yaml_load(doc, strlen(doc), NULL, &v, &info, &err), 0);
    json_t *copies = json_object_get(v, "copies");
    /* the same node, not a copy */
    assert_ptr_equal(json_array_get(copies, 0), json_object_get(v, "base"));
    assert_ptr_equal(json_array_get(copies, 2), json_object_get(v, "base"));
    /* the size counts every repetition: 4 times the anchored mapping and its 5 nodes */
    assert_true(info.bytes >= 4 * 5 * 8);
    json_decref(v);
}

static void alias_bombs_are_refused(void **state)
{
    /* By bytes: a 1 MiB string and 4000 aliases of it (a 1.07 MB document that expanded to
     * 4 GB before). */
    size_t big = 1u << 20;
    size_t len = big + 64 + 4000 * 6;
    char *doc = malloc(len);
    assert_non_null(doc);
    size_t k = (size_t)sprintf(doc, "blob: &x \"");
    memset(doc + k, 'A', big);
    k += big;
    k += (size_t)sprintf(doc + k, "\"\nl:\n");
    for (int i = 0; i < 4000; i++)
        k += (size_t)sprintf(doc + k, "- *x\n");
    json_t *v = NULL;
    char *err = NULL;
    assert_int_equal(flow_yaml_load(doc, k, NULL, &v, NULL, &err), -E2BIG);
    assert_non_null(strstr(err, "bytes"));
    free(err);
    /* the same document is fine with a cap above its expanded size */
    struct flow_yaml_limits roomy = {.max_bytes = SIZE_MAX / 2};
    err = NULL;
    assert_int_equal(flow_yaml_load(doc, k, &roomy, &v, NULL, &err), 0);
    json_decref(v);
    free(doc);

    /* By nodes: "billion laughs", nine levels of ten aliases. */
    char bomb[4096] = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 9; i++) {
        char line[256];
        snprintf(line, sizeof(line), "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n",
                 i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
        strcat(bomb, line);
    }
    err = failure(bomb, E2BIG);
    assert_non_null(strstr(err, "nodes"));
    free(err);
}

static void depth_and_anchor_caps(void **state)
{
    char deep[1024] = "";
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    free(failure(deep, E2BIG));
    size_t n = FLOW_YAML_MAX_ANCHORS + 1;
    char *doc = malloc(n * 24 + 1);
    assert_non_null(doc);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(doc + k, "k%zu: &a%zu x\n", i, i);
    char *msg = failure(doc, E2BIG);
    assert_non_null(strstr(msg, "anchors"));
    free(msg);
    free(doc);
}

/* Found by fuzz_yaml: an alias nests what it repeats as deep as where it is repeated, so a
 * chain of anchors (each 60 levels deep, each holding the previous one) made a document
 * thousands of levels deep, which neither jansson (2048) nor Python's json can read back.
 * The depth cap holds for the expanded document. */
static void aliases_cannot_nest_deeper(void **state)
{
    char doc[2048] = "", open_[64] = "", close_[64] = "";
    memset(open_, '[', 30);
    memset(close_, ']', 30);
    snprintf(doc, sizeof(doc), "a: &a %sx%s\nb: &b %s*a%s\n", open_, close_, open_, close_);
    json_t *v = load(doc); /* 60 levels: within the cap */
    size_t levels = 0;
    for (json_t *n = json_object_get(v, "b"); json_is_array(n); n = json_array_get(n, 0))
        levels++;
    assert_int_equal(levels, 60);
    json_decref(v);
    size_t n = strlen(doc);
    snprintf(doc + n, sizeof(doc) - n, "c: [[[[[[*b]]]]]]\n"); /* 1 + 6 + 60 levels */
    char *msg = failure(doc, E2BIG);
    assert_non_null(strstr(msg, "alias *b at line 3 nests deeper than 64 levels"));
    free(msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(core_schema_scalars),
        cmocka_unit_test(keys_and_merge),
        cmocka_unit_test(errors_name_the_line),
        cmocka_unit_test(aliases_are_shared_and_counted),
        cmocka_unit_test(alias_bombs_are_refused),
        cmocka_unit_test(depth_and_anchor_caps),
        cmocka_unit_test(aliases_cannot_nest_deeper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
