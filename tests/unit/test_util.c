// SPDX-License-Identifier: MIT
/* Unit tests: util/buf (bounded buffer) and util/path (request path checks). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/path.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_caps_and_never_truncates_silently),
        cmocka_unit_test(buf_printf_and_empty_take),
        cmocka_unit_test(path_relative_checks),
        cmocka_unit_test(path_component_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
