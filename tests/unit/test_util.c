// SPDX-License-Identifier: MIT
/* Unit tests: util/buf (bounded buffer), util/path (request path checks) and util/jdump (JSON
 * text with shortest round-trip reals), util/randid (random hex ids). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/jdump.h"
#include "util/path.h"
#include "util/randid.h"

static void buf_caps_and_never_truncates_silently(void **state)
{
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "12345", 5), 0);
    assert_int_equal(buf_append(&b, "6789", 4), -E2BIG); /* would exceed: refused whole */
    assert_int_equal(b.len, 5);
    assert_string_equal(b.data, "12345");
    bool full = false;
    assert_int_equal(buf_append_capped(&b, "6789", 4, &full), 3);
    assert_true(full);
    assert_string_equal(b.data, "12345678");
    buf_consume(&b, 3);
    assert_string_equal(b.data, "45678");
    size_t n;
    char *s = buf_take(&b, &n);
    assert_int_equal(n, 5);
    assert_string_equal(s, "45678");
    assert_null(b.data);
    free(s);
    buf_free(&b);
}

static void buf_printf_and_empty_take(void **state)
{
    struct buf b;
    buf_init(&b, 1024);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0);
    assert_string_equal(b.data, "42-x");
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    buf_free(&b);
    buf_init(&b, 16);
    char *s = buf_take(&b, NULL);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
    buf_init(&b, 4);
    assert_int_equal(buf_printf(&b, "%s", "too long"), -E2BIG);
    buf_free(&b);
}

static void path_relative_checks(void **state)
{
    assert_null(path_check_relative("handlers/add.py", 15));
    assert_null(path_check_relative("a/./b.py", 8));
    assert_null(path_check_relative("..x/y..", 7)); /* dots inside names are fine */
    assert_non_null(path_check_relative("", 0));
    assert_non_null(path_check_relative("/etc/passwd", 11));
    assert_non_null(path_check_relative("..", 2));
    assert_non_null(path_check_relative("a/../b", 6));
    assert_non_null(path_check_relative("a/..", 4));
    assert_non_null(path_check_relative("dir/", 4));
    assert_non_null(path_check_relative("a\0b", 3));
    char long_path[PATH_REQUEST_MAX + 2];
    memset(long_path, 'a', sizeof(long_path));
    assert_non_null(path_check_relative(long_path, sizeof(long_path)));
}

static void path_component_checks(void **state)
{
    assert_null(path_check_component("demo", 4));
    assert_non_null(path_check_component(".", 1));
    assert_non_null(path_check_component("..", 2));
    assert_non_null(path_check_component("a/b", 3));
    assert_non_null(path_check_component("", 0));
}

static void jdump_reals_are_shortest(void **state)
{
    /* Expected texts are Python's repr() (the shortest round-trip form), exponents written
     * the JSON way. */
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {1234567890.123456, "1234567890.123456"},
        {3.141592653589793, "3.141592653589793"},
        {1.0, "1.0"},
        {-0.0, "-0.0"},
        {1e22, "1e22"},
        {1e-7, "1e-7"},
        {-2.5e-300, "-2.5e-300"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e308"},
        {0.30000000000000004, "0.30000000000000004"},
        {123456789012345680.0, "1.2345678901234568e17"},
        {100.0, "100.0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[32];
        size_t n = jdump_real(cases[i].v, out);
        assert_int_equal(n, strlen(out));
        assert_string_equal(out, cases[i].text);
    }
}

static void jdump_reals_round_trip(void **state)
{
    /* Seeded random bit patterns: every finite double reads back exactly and in no more than
     * 17 significant digits. */
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 50000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d;
        memcpy(&d, &x, sizeof(d));
        if (d != d || d - d != 0)
            continue; /* NaN and infinities are not JSON */
        char out[32];
        jdump_real(d, out);
        if (strtod(out, NULL) != d)
            fail_msg("%.17g printed as %s does not read back", d, out);
        json_error_t e;
        json_t *back = json_loads(out, JSON_DECODE_ANY, &e);
        assert_true(json_is_real(back));
        assert_true(json_real_value(back) == d);
        json_decref(back);
    }
}

static void jdump_layout_matches_jansson(void **state)
{
    json_t *v = json_pack("{s:s, s:[i, b, n, {}, []], s:{s:s, s:I}, s:s}", "text",
                          "quote \" slash / tab \t é \xe2\x82\xac", "list", 1, 1, "nested", "k",
                          "v", "big", (json_int_t)INT64_MAX, "empty", "");
    size_t flags[] = {0,
                      JSON_COMPACT,
                      JSON_INDENT(2),
                      JSON_INDENT(4) | JSON_COMPACT,
                      JSON_COMPACT | JSON_ENSURE_ASCII,
                      JSON_ESCAPE_SLASH};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        char *ours = jdump(v, flags[i], NULL);
        char *theirs = json_dumps(v, flags[i]);
        assert_non_null(ours);
        assert_string_equal(ours, theirs);
        free(ours);
        free(theirs);
    }
    json_decref(v);
    json_t *r = json_pack("{s:f, s:[f, f]}", "pi", 3.141592653589793, "l", 0.1, 2.0);
    char *text = jdump(r, JSON_COMPACT, NULL);
    assert_string_equal(text, "{\"pi\":3.141592653589793,\"l\":[0.1,2.0]}");
    free(text);
    json_decref(r);
    json_t *s = json_string("scalar");
    text = jdump(s, JSON_COMPACT, NULL);
    assert_string_equal(text, "\"scalar\"");
    free(text);
    json_decref(s);
}

static void jdump_caps(void **state)
{
    json_t *root = json_array(), *cur = root;
    for (int i = 0; i < JDUMP_MAX_DEPTH + 1; i++) {
        json_t *next = json_array();
        json_array_append_new(cur, next);
        cur = next;
    }
    assert_null(jdump(root, JSON_COMPACT, NULL));
    json_decref(root);
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "ab", 2), 0);
    json_t *long_string = json_string("more than eight bytes");
    assert_int_equal(jdump_buf(long_string, 0, &b), -E2BIG);
    assert_string_equal(b.data, "ab"); /* left as it was */
    json_decref(long_string);
    buf_free(&b);
}

static void randid_hex_ids(void **state)
{
    char a[33], b[33];
    assert_int_equal(randid_hex(a, sizeof(a), 16), 0);
    assert_int_equal(randid_hex(b, sizeof(b), 16), 0);
    assert_int_equal(strlen(a), 32);
    assert_int_equal(strspn(a, "0123456789abcdef"), 32);
    assert_string_not_equal(a, b);
    char small[32];
    assert_int_equal(randid_hex(small, sizeof(small), 16), -EINVAL); /* no room for the NUL */
    assert_string_equal(small, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_caps_and_never_truncates_silently),
        cmocka_unit_test(buf_printf_and_empty_take),
        cmocka_unit_test(path_relative_checks),
        cmocka_unit_test(path_component_checks),
        cmocka_unit_test(jdump_reals_are_shortest),
        cmocka_unit_test(jdump_reals_round_trip),
        cmocka_unit_test(jdump_layout_matches_jansson),
        cmocka_unit_test(jdump_caps),
        cmocka_unit_test(randid_hex_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
