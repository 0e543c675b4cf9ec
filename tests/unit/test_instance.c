// SPDX-License-Identifier: MIT
/* Unit tests: util/instance (the instance id of --instance-id and its default from the host
 * name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/instance.h"

static void check_accepts_dns_labels_only(void **state)
{
    const char *good[] = {"i1",
                          "a",
                          "node-7",
                          "sandboxd-5d8f7c9b4-x2x4k",
                          "10-1-2-3",
                          "Web01",
                          "abcdefghijklmnopqrstuvwxyz01234"};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
        assert_null(instance_id_check(good[i]));
    /* empty, 32 characters, the separator itself, a path or header breaker, dashes at the
     * ends, non-ASCII */
    const char *bad[] = {"",       "abcdefghijklmnopqrstuvwxyz012345",
                         "a.b",    "a/b",
                         "a b",    "a\r\nX-Evil: 1",
                         "-a",     "a-",
                         "a_b",    "caf\xc3\xa9",
                         "%2e%2e", "*"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_non_null(instance_id_check(bad[i]));
}

static void host_names_that_are_ids_stay_as_they_are(void **state)
{
    char id[INSTANCE_ID_MAX + 1];
    instance_id_from_host("vm", id);
    assert_string_equal(id, "vm");
    instance_id_from_host("web01.prod.example.com", id);
    assert_string_equal(id, "web01");
    instance_id_from_host("sandboxd-5d8f7c9b4-x2x4k", id);
    assert_string_equal(id, "sandboxd-5d8f7c9b4-x2x4k");
}

static void other_host_names_become_valid_distinct_ids(void **state)
{
    char a[INSTANCE_ID_MAX + 1], b[INSTANCE_ID_MAX + 1], c[INSTANCE_ID_MAX + 1];
    /* Long names that differ only at their end must not collapse into one id. */
    instance_id_from_host("my-very-long-deployment-name-7d9f8b6c5d-x2x4k", a);
    instance_id_from_host("my-very-long-deployment-name-7d9f8b6c5d-q8z7m", b);
    assert_null(instance_id_check(a));
    assert_null(instance_id_check(b));
    assert_string_not_equal(a, b);
    assert_memory_equal(a, "my-very-long-deployme", 21); /* readable: the name's beginning */
    /* Characters outside the set, leading dashes, nothing usable at all. */
    instance_id_from_host("_build_box_", c);
    assert_null(instance_id_check(c));
    assert_memory_equal(c, "build-box-", 10);
    instance_id_from_host("", a);
    assert_null(instance_id_check(a));
    instance_id_from_host(".", b);
    assert_null(instance_id_check(b));
    instance_id_from_host("\xff\xfe", c);
    assert_null(instance_id_check(c));
    /* The same name gives the same id: a restarted instance keeps its name. */
    instance_id_from_host("_build_box_", a);
    instance_id_from_host("_build_box_", b);
    assert_string_equal(a, b);
}

static void default_is_valid(void **state)
{
    char id[INSTANCE_ID_MAX + 1];
    assert_int_equal(instance_id_default(id), 0);
    assert_null(instance_id_check(id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_accepts_dns_labels_only),
        cmocka_unit_test(host_names_that_are_ids_stay_as_they_are),
        cmocka_unit_test(other_host_names_become_valid_distinct_ids),
        cmocka_unit_test(default_is_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
