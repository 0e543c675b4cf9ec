// SPDX-License-Identifier: MIT
/* Unit tests: proto/jsonscan, the validator of untrusted JSON, and the frame reader's use of it
 * (tree budget, members handed over as text). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proto/frame.h"
#include "proto/jsonscan.h"

static int scan(const char *text, const char *const *path, struct jsonscan_result *res)
{
    const char *why = NULL;
    int r = jsonscan(text, strlen(text), 0, path, res, &why);
    if (r < 0)
        assert_non_null(why);
    return r;
}

/* The scanner accepts exactly what jansson accepts (bar integers too big for jansson). */
static void jsonscan_agrees_with_jansson(void **state)
{
    static const char *const docs[] = {
        "{}",
        "[]",
        "0",
        "-0",
        "1.5e10",
        "-1.25E-3",
        "\"x\"",
        "true",
        "false",
        "null",
        " {\"a\" : [1, 2, {\"b\": null}], \"c\": \"\\u00e9\\n\\t\\\"\"} ",
        "[[[[]]]]",
        "\"\\ud83d\\ude00\"",
        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
        "[1,2,3]",
        "{\"a\":1,\"a\":2}", /* duplicates: valid JSON; the frame reader rejects them itself */
        /* invalid */
        "",
        " ",
        "{",
        "}",
        "[1,]",
        "[,1]",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{1:2}",
        "01",
        "1.",
        ".5",
        "1e",
        "-",
        "+1",
        "tru",
        "nul",
        "[1 2]",
        "{} {}",
        "\"abc",
        "\"\\x\"",
        "\"\\u12\"",
        "{\"\\u0000\": 1}",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\x01\"",
        "\"\xc0\xaf\"",
        "\"\xed\xa0\x80\"",
        "\"\xf4\x90\x80\x80\"",
        "\"\xe2\x82\"",
        "\"\x80\"",
        "[\"a\"\"b\"]",
        "NaN",
        "Infinity",
        "[1]x",
        "{\"a\":1 \"b\":2}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_error_t err;
        json_t *j = json_loadb(docs[i], strlen(docs[i]), JSON_DECODE_ANY, &err);
        struct jsonscan_result res;
        int r = scan(docs[i], NULL, &res);
        if ((j != NULL) != (r == 0))
            fail_msg("disagreement on document %zu: %s (jansson %s, jsonscan %d)", i, docs[i],
                     j ? "accepts" : err.text, r);
        json_decref(j);
    }
    /* Too big for jansson's integers, still JSON: passed through, never parsed. */
    struct jsonscan_result res;
    assert_int_equal(scan("[123456789012345678901234567890]", NULL, &res), 0);
}

static void jsonscan_depth_is_capped(void **state)
{
    size_t n = JSONSCAN_MAX_DEPTH + 10;
    char *deep = malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    struct jsonscan_result res;
    const char *why;
    assert_int_equal(jsonscan(deep, 2 * n, 0, NULL, &res, &why), -EBADMSG);
    assert_string_equal(why, "nested too deeply");
    assert_int_equal(jsonscan(deep + 10, 2 * (n - 10), 0, NULL, &res, &why), 0);
    assert_int_equal(jsonscan(deep + 10, 2 * (n - 10), 100, NULL, &res, &why), -EBADMSG);
    free(deep);
}

static void jsonscan_counts(void **state)
{
    struct jsonscan_result res;
    assert_int_equal(scan("{\"a\": [1, \"xy\", {}], \"b\": null}", NULL, &res), 0);
    assert_int_equal(res.total.values, 6);     /* {}, [], 1, "xy", {}, null */
    assert_int_equal(res.total.containers, 3); /* the outer object, the array, the inner {} */
    assert_int_equal(res.total.members, 2);
    assert_int_equal(res.total.strings, 3); /* "a", "xy", "b" */
    assert_int_equal(res.total.string_bytes, 4);
    assert_true(jsonscan_tree_cost(&res.total) > 6 * 50);
}

static void jsonscan_finds_a_path(void **state)
{
    static const char *const data[] = {"data", NULL};
    static const char *const result[] = {"data", "result", NULL};
    const char *doc = "{\"type\":\"result\",\"x\":{\"data\":1},\"data\":{\"result\":[1,[2]],"
                      "\"data\":3},\"result\":4}";
    struct jsonscan_result res;
    assert_int_equal(scan(doc, data, &res), 0);
    assert_true(res.found);
    assert_int_equal(
        strncmp(doc + res.start, "{\"result\":[1,[2]],\"data\":3}", res.end - res.start), 0);
    assert_int_equal(res.end - res.start, strlen("{\"result\":[1,[2]],\"data\":3}"));
    assert_int_equal(scan(doc, result, &res), 0);
    assert_true(res.found);
    assert_int_equal(res.end - res.start, 7);
    assert_memory_equal(doc + res.start, "[1,[2]]", 7);
    assert_int_equal(res.found_counts.values, 4);
    assert_int_equal(res.found_counts.containers, 2);
    /* An escaped name is the same name; a scalar at the top of the path is found too. */
    assert_int_equal(scan("{\"d\\u0061ta\" : \"big\" }", data, &res), 0);
    assert_true(res.found);
    assert_memory_equal("{\"d\\u0061ta\" : \"big\" }" + res.start, "\"big\"", 5);
    /* Not there: nested elsewhere, or the parent is not an object. */
    assert_int_equal(scan("{\"x\":{\"data\":1}}", data, &res), 0);
    assert_false(res.found);
    assert_int_equal(scan("{\"data\":[{\"result\":1}]}", result, &res), 0);
    assert_false(res.found);
    assert_int_equal(scan("[{\"data\":1}]", data, &res), 0);
    assert_false(res.found);
}

static void frame_feed(struct frame_reader *fr, const char *json)
{
    size_t len = strlen(json);
    unsigned char hdr[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
                            (unsigned char)(len >> 8), (unsigned char)len};
    assert_int_equal(frame_reader_feed(fr, hdr, 4), 0);
    for (size_t off = 0; off < len; off += FRAME_READ_CHUNK) {
        size_t n = len - off < FRAME_READ_CHUNK ? len - off : FRAME_READ_CHUNK;
        assert_int_equal(frame_reader_feed(fr, json + off, n), 0);
    }
}

static void frame_hands_over_a_member_as_text(void **state)
{
    static const char *const path[] = {"data", NULL};
    struct frame_reader fr;
    frame_reader_init(&fr, 1 << 20);
    /* Alone in the buffer: the buffer itself is handed over. */
    frame_feed(&fr, "{\"type\":\"result\",\"data\":[1, 2.50, 123456789012345678901234567890]}");
    json_t *msg = NULL;
    struct frame_raw raw;
    const char *why;
    assert_int_equal(frame_reader_next_raw(&fr, path, &msg, &raw, &why), 1);
    assert_string_equal(json_string_value(json_object_get(msg, "type")), "result");
    assert_true(json_is_null(json_object_get(msg, "data")));
    assert_int_equal(raw.len, strlen("[1, 2.50, 123456789012345678901234567890]"));
    assert_memory_equal(frame_raw_data(&raw), "[1, 2.50, 123456789012345678901234567890]", raw.len);
    frame_raw_done(&raw);
    json_decref(msg);
    /* Followed by another frame: a copy; a duplicate of the member is still refused. */
    frame_feed(&fr, "{\"data\":\"x\",\"n\":1}");
    frame_feed(&fr, "{\"data\":1,\"d\\u0061ta\":2}");
    assert_int_equal(frame_reader_next_raw(&fr, path, &msg, &raw, &why), 1);
    assert_memory_equal(frame_raw_data(&raw), "\"x\"", 3);
    assert_int_equal(json_integer_value(json_object_get(msg, "n")), 1);
    frame_raw_done(&raw);
    json_decref(msg);
    assert_int_equal(frame_reader_next_raw(&fr, path, &msg, &raw, &why), -EBADMSG);
    assert_null(raw.text);
    /* Invalid text inside the member is refused like any invalid frame. */
    frame_feed(&fr, "{\"data\":[1,]}");
    assert_int_equal(frame_reader_next_raw(&fr, path, &msg, &raw, &why), -EBADMSG);
    frame_reader_done(&fr);
}

/* A frame whose tree would cost far more than its size is refused, unless the dense part is
 * the member handed over as text. */
static void frame_tree_budget(void **state)
{
    static const char *const path[] = {"data", NULL};
    size_t n = 6u << 20; /* ~3M zeros: a ~170 MB tree from 6 MB of text */
    char *doc = malloc(n + 64);
    size_t k = (size_t)sprintf(doc, "{\"data\":[0");
    while (k < n)
        k += (size_t)sprintf(doc + k, ",0");
    k += (size_t)sprintf(doc + k, "]}");
    struct frame_reader fr;
    frame_reader_init(&fr, 64u << 20);
    frame_feed(&fr, doc);
    json_t *msg = NULL;
    struct frame_raw raw = {0};
    const char *why;
    assert_int_equal(frame_reader_next(&fr, &msg, &why), -E2BIG);
    assert_null(msg);
    assert_int_equal(fr.in.len, 0);
    frame_feed(&fr, doc);
    assert_int_equal(frame_reader_next_raw(&fr, path, &msg, &raw, &why), 1);
    assert_int_equal(raw.len, k - strlen("{\"data\":}"));
    frame_raw_done(&raw);
    json_decref(msg);
    /* A long string is cheap to parse: accepted whole. */
    memset(doc, 'x', n);
    memcpy(doc, "{\"s\":\"", 6);
    memcpy(doc + n - 2, "\"}", 3);
    frame_feed(&fr, doc);
    assert_int_equal(frame_reader_next(&fr, &msg, &why), 1);
    assert_int_equal(json_string_length(json_object_get(msg, "s")), n - 8);
    json_decref(msg);
    /* The big buffer is given back once empty. */
    assert_null(fr.in.data);
    frame_reader_done(&fr);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jsonscan_agrees_with_jansson),
        cmocka_unit_test(jsonscan_depth_is_capped),
        cmocka_unit_test(jsonscan_counts),
        cmocka_unit_test(jsonscan_finds_a_path),
        cmocka_unit_test(frame_hands_over_a_member_as_text),
        cmocka_unit_test(frame_tree_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
