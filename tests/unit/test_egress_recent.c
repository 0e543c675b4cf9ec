// SPDX-License-Identifier: MIT
/* Unit tests: egress/recent (the proxy's last decisions for /healthz): newest first, bounded,
 * and every text valid UTF-8 within its cap whatever bytes came. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "egress/recent.h"
#include "util/utf8.h"

static struct egress_decision decision(const char *label, bool denied)
{
    return (struct egress_decision){
        .time_ms = 1767225600123, /* 2026-01-01T00:00:00.123Z */
        .duration_ms = 1.5,
        .label = label,
        .tenant = "a",
        .denied = denied,
        .method = "CONNECT",
        .host = "api.example.com",
        .port = 443,
        .reason = denied ? "not in the allow list" : NULL,
        .bytes_up = 10,
        .bytes_down = 20,
    };
}

static const char *str(json_t *entry, const char *key)
{
    return json_string_value(json_object_get(entry, key));
}

static void empty_then_newest_first(void **state)
{
    (void)state;
    struct egress_recent *r = egress_recent_new();
    assert_non_null(r);
    json_t *list = egress_recent_json(r);
    assert_true(json_is_array(list) && json_array_size(list) == 0);
    json_decref(list);
    struct egress_decision a = decision("r-1", false), b = decision("r-2", true);
    egress_recent_add(r, &a);
    egress_recent_add(r, &b);
    list = egress_recent_json(r);
    assert_int_equal(json_array_size(list), 2);
    json_t *first = json_array_get(list, 0), *second = json_array_get(list, 1);
    assert_string_equal(str(first, "execution"), "r-2");
    assert_string_equal(str(first, "decision"), "denied");
    assert_string_equal(str(first, "reason"), "not in the allow list");
    assert_string_equal(str(second, "execution"), "r-1");
    assert_string_equal(str(second, "decision"), "allowed");
    assert_true(json_is_null(json_object_get(second, "reason")));
    assert_string_equal(str(second, "time"), "2026-01-01T00:00:00.123Z");
    assert_string_equal(str(second, "tenant"), "a");
    assert_string_equal(str(second, "method"), "CONNECT");
    assert_string_equal(str(second, "host"), "api.example.com");
    assert_int_equal(json_integer_value(json_object_get(second, "port")), 443);
    assert_int_equal(json_integer_value(json_object_get(second, "bytesUp")), 10);
    assert_int_equal(json_integer_value(json_object_get(second, "bytesDown")), 20);
    assert_true(json_real_value(json_object_get(second, "durationMs")) == 1.5);
    json_decref(list);
    egress_recent_free(r);
    egress_recent_free(NULL);
}

static void keeps_the_last_64(void **state)
{
    (void)state;
    struct egress_recent *r = egress_recent_new();
    char label[32];
    for (int i = 0; i < EGRESS_RECENT_MAX + 6; i++) {
        snprintf(label, sizeof(label), "r-%d", i);
        struct egress_decision d = decision(label, i % 2);
        egress_recent_add(r, &d);
    }
    json_t *list = egress_recent_json(r);
    assert_int_equal(json_array_size(list), EGRESS_RECENT_MAX);
    for (int i = 0; i < EGRESS_RECENT_MAX; i++) {
        snprintf(label, sizeof(label), "r-%d", EGRESS_RECENT_MAX + 5 - i);
        assert_string_equal(str(json_array_get(list, (size_t)i), "execution"), label);
    }
    json_decref(list);
    egress_recent_free(r);
}

/* A text of the entry is valid UTF-8 of at most max bytes. */
static void assert_text(json_t *entry, const char *key, size_t max)
{
    const char *s = str(entry, key);
    assert_non_null(s);
    assert_true(strlen(s) <= max);
    assert_true(utf8_valid(s, strlen(s)));
}

static void untrusted_texts_are_utf8_and_capped(void **state)
{
    (void)state;
    struct egress_recent *r = egress_recent_new();
    /* Bytes that are not UTF-8 are escaped as the log writes them. */
    struct egress_decision d = decision("bad\xff\xfe<b>", true);
    d.reason = "half a character: \xc3";
    egress_recent_add(r, &d);
    /* 200 two-byte characters: cut at one, never inside, and marked as cut. */
    char longer[401];
    for (int i = 0; i < 200; i++)
        memcpy(longer + 2 * i, "\xc3\xa9", 2);
    longer[400] = '\0';
    d = decision(longer, true);
    d.tenant = longer;
    d.host = longer;
    d.reason = longer;
    d.method = "\xff\xff\xff\xff\xff\xff\xff\xff"; /* escaped: 32 bytes, cut to 15 */
    egress_recent_add(r, &d);
    /* None: null, not "". */
    d = decision("r", false);
    d.tenant = NULL;
    d.host = "";
    d.port = 0;
    egress_recent_add(r, &d);
    json_t *list = egress_recent_json(r);
    assert_int_equal(json_array_size(list), 3);
    json_t *none = json_array_get(list, 0), *cut = json_array_get(list, 1),
           *bad = json_array_get(list, 2);
    assert_true(json_is_null(json_object_get(none, "tenant")));
    assert_true(json_is_null(json_object_get(none, "host")));
    assert_true(json_is_null(json_object_get(none, "port")));
    assert_string_equal(str(bad, "execution"), "bad\\xff\\xfe<b>");
    assert_string_equal(str(bad, "reason"), "half a character: \\xc3");
    assert_text(cut, "execution", EGRESS_RECENT_LABEL_MAX);
    assert_text(cut, "tenant", EGRESS_RECENT_TENANT_MAX);
    assert_text(cut, "host", EGRESS_RECENT_HOST_MAX);
    assert_text(cut, "reason", EGRESS_RECENT_REASON_MAX);
    assert_text(cut, "method", 15);
    const char *label = str(cut, "execution");
    size_t n = strlen(label);
    assert_true(n > EGRESS_RECENT_LABEL_MAX - 5);
    assert_memory_equal(label + n - 3, "\xe2\x80\xa6", 3); /* … */
    assert_memory_equal(label, "\xc3\xa9\xc3\xa9", 4);
    json_decref(list);
    egress_recent_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_then_newest_first),
        cmocka_unit_test(keeps_the_last_64),
        cmocka_unit_test(untrusted_texts_are_utf8_and_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
