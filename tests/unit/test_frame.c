// SPDX-License-Identifier: MIT
/* Unit tests: proto/frame, the incremental reader of (untrusted) runtime frames. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/frame.h"

static void frame_roundtrip_byte_by_byte(void **state)
{
    json_t *msg = json_pack("{s:s, s:i}", "type", "result", "n", 7);
    char *data;
    size_t len;
    assert_int_equal(frame_encode(msg, &data, &len), 0);
    struct frame_reader fr;
    frame_reader_init(&fr, 1024);
    json_t *out = NULL;
    const char *why;
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(frame_reader_next(&fr, &out, &why), 0);
        assert_int_equal(frame_reader_feed(&fr, data + i, 1), 0);
    }
    assert_int_equal(frame_reader_next(&fr, &out, &why), 1);
    assert_true(json_equal(out, msg));
    json_t *none = NULL;
    assert_int_equal(frame_reader_next(&fr, &none, &why), 0);
    assert_null(none);
    json_decref(out);
    json_decref(msg);
    free(data);
    frame_reader_done(&fr);
}

/* Found by fuzz_request: a frame holding U+0000 ("\u0000", valid JSON, which /execute accepts in
 * a request) was refused, so a function could not give back what it was given. */
static void frame_holding_nul_reads_back(void **state)
{
    json_t *msg = json_pack("{s:s, s:s%}", "type", "result", "data", "a\0b", (size_t)3);
    char *data;
    size_t len;
    assert_int_equal(frame_encode(msg, &data, &len), 0);
    struct frame_reader fr;
    frame_reader_init(&fr, 1024);
    assert_int_equal(frame_reader_feed(&fr, data, len), 0);
    json_t *out = NULL;
    const char *why = NULL;
    assert_int_equal(frame_reader_next(&fr, &out, &why), 1);
    assert_true(json_equal(out, msg));
    json_decref(out);
    json_decref(msg);
    free(data);
    frame_reader_done(&fr);
}

static void frame_several_in_one_chunk(void **state)
{
    struct frame_reader fr;
    frame_reader_init(&fr, 1024);
    char buf[512];
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        json_t *m = json_pack("{s:i}", "i", i);
        char *d;
        size_t l;
        assert_int_equal(frame_encode(m, &d, &l), 0);
        memcpy(buf + n, d, l);
        n += l;
        free(d);
        json_decref(m);
    }
    assert_int_equal(frame_reader_feed(&fr, buf, n), 0);
    for (int i = 0; i < 3; i++) {
        json_t *out;
        const char *why;
        assert_int_equal(frame_reader_next(&fr, &out, &why), 1);
        assert_int_equal(json_integer_value(json_object_get(out, "i")), i);
        json_decref(out);
    }
    frame_reader_done(&fr);
}

static void frame_oversized_is_refused_before_buffering(void **state)
{
    struct frame_reader fr;
    frame_reader_init(&fr, 100);
    unsigned char hdr[4] = {0x7f, 0xff, 0xff, 0xff};
    assert_int_equal(frame_reader_feed(&fr, hdr, 4), -EMSGSIZE);
    assert_true(fr.in.len <= 4);
    frame_reader_done(&fr);
}

static void frame_garbage_and_non_objects(void **state)
{
    struct frame_reader fr;
    frame_reader_init(&fr, 100);
    const char bad[] = "\x00\x00\x00\x05{oops";
    assert_int_equal(frame_reader_feed(&fr, bad, sizeof(bad) - 1), 0);
    json_t *out;
    const char *why = NULL;
    assert_int_equal(frame_reader_next(&fr, &out, &why), -EBADMSG);
    assert_non_null(why);
    const char arr[] = "\x00\x00\x00\x02[]";
    assert_int_equal(frame_reader_feed(&fr, arr, sizeof(arr) - 1), 0);
    assert_int_equal(frame_reader_next(&fr, &out, &why), -EBADMSG);
    frame_reader_done(&fr);
}

static void frame_write_to_pipe(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    json_t *m = json_pack("{s:s}", "type", "ready");
    assert_int_equal(frame_write(p[1], m, 0), 0);
    char buf[64];
    ssize_t n = read(p[0], buf, sizeof(buf));
    assert_true(n > 4);
    struct frame_reader fr;
    frame_reader_init(&fr, 64);
    assert_int_equal(frame_reader_feed(&fr, buf, (size_t)n), 0);
    json_t *out;
    const char *why;
    assert_int_equal(frame_reader_next(&fr, &out, &why), 1);
    assert_string_equal(json_string_value(json_object_get(out, "type")), "ready");
    json_decref(out);
    json_decref(m);
    frame_reader_done(&fr);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frame_roundtrip_byte_by_byte),
        cmocka_unit_test(frame_holding_nul_reads_back),
        cmocka_unit_test(frame_several_in_one_chunk),
        cmocka_unit_test(frame_oversized_is_refused_before_buffering),
        cmocka_unit_test(frame_garbage_and_non_objects),
        cmocka_unit_test(frame_write_to_pipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
