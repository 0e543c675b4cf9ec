// SPDX-License-Identifier: MIT
/* Unit tests: mcpclient/sse — the Server-Sent Events reader of MCP Streamable HTTP answers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcpclient/sse.h"

struct seen {
    char text[256]; /* the events' data, each followed by '|' */
    unsigned n;
};

static bool on_event(void *userdata, const char *data, size_t len)
{
    struct seen *s = userdata;
    strncat(s->text, data, len);
    strcat(s->text, "|");
    s->n++;
    return false;
}

/* Read stream one byte at a time, so that every split (a CRLF too) is exercised. */
static void read_bytewise(struct sse_reader *r, const char *stream, struct seen *s)
{
    for (size_t i = 0; stream[i]; i++)
        assert_int_equal(sse_reader_feed(r, stream + i, 1, on_event, s), 0);
}

static void events_and_fields(void **state)
{
    struct sse_reader r;
    struct seen s = {0};
    sse_reader_init(&r, 1024);
    read_bytewise(&r,
                  ": comment\r\nid: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n"
                  "event: ping\ndata: skipped\n\n"
                  "event: message\ndata:x\rdata:  y\r\r"
                  "data: unfinished",
                  &s);
    assert_string_equal(s.text, "{\"a\":\n1}|x\n y|");
    assert_string_equal(r.last_id, "7");
    assert_int_equal(r.retry_ms, -1);
    sse_reader_rewind(&r);
    assert_string_equal(r.last_id, "7"); /* kept for Last-Event-ID */
    sse_reader_done(&r);
}

/* Found by fuzz_sse: a type that starts with "message" and a NUL is another type (it was cut at
 * the NUL and taken for "message"). */
static void event_type_is_compared_whole(void **state)
{
    struct sse_reader r;
    struct seen s = {0};
    sse_reader_init(&r, 1024);
    static const char stream[] = "event: message\0x\ndata: other\n\nevent:\ndata: plain\n\n";
    assert_int_equal(sse_reader_feed(&r, stream, sizeof(stream) - 1, on_event, &s), 0);
    assert_string_equal(s.text, "plain|");
    sse_reader_done(&r);
}

/* Found by fuzz_sse: any number of digits sets the retry time, cut to the cap (seven digits or
 * more were ignored); anything but digits leaves it alone. */
static void retry_times(void **state)
{
    static const struct {
        const char *line;
        long want;
    } cases[] = {
        {"retry: 1500\n", 1500},   {"retry: 99999999\n", SSE_MAX_RETRY_MS},
        {"retry: 60001\n", 60000}, {"retry: 0\n", 0},
        {"retry: 12a\n", -1},      {"retry:\n", -1},
        {"retry: -5\n", -1},       {"retry: 00000000000000000000012\n", 12},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sse_reader r;
        struct seen s = {0};
        sse_reader_init(&r, 1024);
        read_bytewise(&r, cases[i].line, &s);
        if (r.retry_ms != cases[i].want)
            fail_msg("%s gave %ld, want %ld", cases[i].line, r.retry_ms, cases[i].want);
        sse_reader_done(&r);
    }
}

static bool stop_at_first(void *userdata, const char *data, size_t len)
{
    on_event(userdata, data, len);
    return true;
}

static void stop_and_caps(void **state)
{
    struct sse_reader r;
    struct seen s = {0};
    sse_reader_init(&r, 12);
    const char two[] = "data: a\n\ndata: b\n\n";
    assert_int_equal(sse_reader_feed(&r, two, sizeof(two) - 1, stop_at_first, &s), 1);
    assert_string_equal(s.text, "a|");
    sse_reader_rewind(&r);
    const char long_line[] = "data: 123456789\n\n";
    assert_int_equal(sse_reader_feed(&r, long_line, sizeof(long_line) - 1, on_event, &s), -E2BIG);
    sse_reader_rewind(&r);
    const char long_event[] = "data:12345\ndata:12345\ndata:12345\n\n"; /* lines fit, not all */
    assert_int_equal(sse_reader_feed(&r, long_event, sizeof(long_event) - 1, on_event, &s), -E2BIG);
    sse_reader_done(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(events_and_fields),
        cmocka_unit_test(event_type_is_compared_whole),
        cmocka_unit_test(retry_times),
        cmocka_unit_test(stop_and_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
