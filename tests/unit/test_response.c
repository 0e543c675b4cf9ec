// SPDX-License-Identifier: MIT
/* Unit tests: response/response (captured output as JSON text, message caps) and util/utf8. Run
 * under ASan and valgrind by tests/run.sh, so a leak in these paths fails the suite. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "response/response.h"
#include "util/buf.h"
#include "util/utf8.h"

static json_t *text_of(const char *data, size_t len)
{
    struct buf b;
    buf_init(&b, 1u << 24);
    assert_int_equal(buf_append(&b, data, len), 0);
    json_t *s = response_text(&b);
    buf_free(&b);
    assert_non_null(s);
    return s;
}

static void response_text_keeps_valid_utf8(void **state)
{
    json_t *s = text_of("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 nul:\0.", 22);
    assert_int_equal(json_string_length(s), 22);
    assert_memory_equal(json_string_value(s), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 nul:\0.",
                        22);
    json_decref(s);
}

static void response_text_replaces_invalid_bytes(void **state)
{
    static const struct {
        const char *in;
        size_t len;
        const char *out;
    } cases[] = {
        {"a\xff"
         "b",
         3,
         "a\xef\xbf\xbd"
         "b"},
        {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},                 /* overlong '/' */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
        {"\xf4\x90\x80\x80", 4,
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* above U+10FFFF */
        {"ok\xe2\x82", 4, "ok\xef\xbf\xbd\xef\xbf\xbd"},      /* cut short */
        {"\xe2\x82\xac\x80", 4, "\xe2\x82\xac\xef\xbf\xbd"},  /* stray continuation */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *s = text_of(cases[i].in, cases[i].len);
        assert_string_equal(json_string_value(s), cases[i].out);
        json_decref(s);
    }
}

static void response_text_large_invalid_output(void **state)
{
    /* The shape of the leak report: one invalid byte, then a megabyte of text. Each call must
     * free everything it allocated (ASan and valgrind check). */
    size_t len = 1u << 20;
    char *data = malloc(len);
    assert_non_null(data);
    memset(data, 'x', len);
    data[0] = (char)0xff;
    for (int round = 0; round < 3; round++) {
        json_t *s = text_of(data, len);
        assert_int_equal(json_string_length(s), len + 2); /* one byte became three */
        assert_memory_equal(json_string_value(s), "\xef\xbf\xbdxxx", 6);
        json_decref(s);
    }
    free(data);
}

/* A chunk of output that ends inside a character holds back its first bytes, and only those. */
static void utf8_incomplete_tail_holds_back_split_characters(void **state)
{
    (void)state;
    const unsigned char *euro = (const unsigned char *)"a\xe2\x82\xac"; /* a + U+20AC */
    assert_int_equal(utf8_incomplete_tail(euro, 4), 0);
    assert_int_equal(utf8_incomplete_tail(euro, 3), 2);
    assert_int_equal(utf8_incomplete_tail(euro, 2), 1);
    assert_int_equal(utf8_incomplete_tail(euro, 1), 0);
    assert_int_equal(utf8_incomplete_tail(euro, 0), 0);
    const unsigned char *emoji = (const unsigned char *)"\xf0\x9f\x98\x80"; /* U+1F600 */
    assert_int_equal(utf8_incomplete_tail(emoji, 4), 0);
    assert_int_equal(utf8_incomplete_tail(emoji, 3), 3);
    assert_int_equal(utf8_incomplete_tail((const unsigned char *)"\xc3\xa9", 1), 1);
    /* a stray continuation byte starts nothing to wait for */
    assert_int_equal(utf8_incomplete_tail((const unsigned char *)"ab\x80", 3), 0);
}

static void utf8_cut_keeps_characters_whole(void **state)
{
    const char *s = "a\xe2\x82\xac"
                    "b"; /* a, euro sign (3 bytes), b */
    assert_int_equal(utf8_cut(s, 5, 10), 5);
    assert_int_equal(utf8_cut(s, 5, 4), 4);
    assert_int_equal(utf8_cut(s, 5, 3), 1);
    assert_int_equal(utf8_cut(s, 5, 2), 1);
    assert_int_equal(utf8_cut(s, 5, 1), 1);
    assert_int_equal(utf8_cut(s, 5, 0), 0);
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xc1\xbf", 2), 0);
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xf0\x90\x80\x80", 4), 4);
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xf0\x90\x80", 3), 0);
}

static void response_caps_long_messages(void **state)
{
    bool cut = false;
    json_t *s = response_capped_string("short", 5, 64, &cut);
    assert_string_equal(json_string_value(s), "short");
    assert_false(cut);
    json_decref(s);
    /* 100 euro signs (300 bytes) into 64: whole characters, then the marker, <= 64 bytes */
    char text[301];
    for (int i = 0; i < 100; i++)
        memcpy(text + 3 * i, "\xe2\x82\xac", 3);
    text[300] = '\0';
    s = response_capped_string(text, 300, 64, &cut);
    assert_true(cut);
    const char *v = json_string_value(s);
    assert_true(json_string_length(s) <= 64);
    const char *marker = strstr(v, "\n[... truncated: 300 bytes in all]");
    assert_non_null(marker);
    assert_int_equal((marker - v) % 3, 0);
    json_decref(s);

    json_t *tree = json_pack("{s:s, s:[s, {s:s}], s:i}", "a", text, "b", "ok", "c", text, "n", 7);
    assert_true(response_cap_strings(tree, 64));
    assert_true(json_string_length(json_object_get(tree, "a")) <= 64);
    json_t *inner = json_object_get(json_array_get(json_object_get(tree, "b"), 1), "c");
    assert_true(json_string_length(inner) <= 64);
    assert_string_equal(json_string_value(json_array_get(json_object_get(tree, "b"), 0)), "ok");
    assert_false(response_cap_strings(tree, 64)); /* already within */
    json_decref(tree);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(response_text_keeps_valid_utf8),
        cmocka_unit_test(response_text_replaces_invalid_bytes),
        cmocka_unit_test(response_text_large_invalid_output),
        cmocka_unit_test(utf8_cut_keeps_characters_whole),
        cmocka_unit_test(utf8_incomplete_tail_holds_back_split_characters),
        cmocka_unit_test(response_caps_long_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
