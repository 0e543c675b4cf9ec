// SPDX-License-Identifier: MIT
/*
 * fuzz_jdump — the JSON writer (util/jdump.c) by its round-trip property:
 * any JSON text jansson reads, written by jdump in every layout, reads back
 * as an equal value, and writing that again gives the same text. Reals get
 * a property of their own: eight input bytes as a double come back from
 * jdump_real() exactly, in the shortest form, as a JSON real. A capped
 * buffer either takes the whole text or is left as it was.
 *
 * Input: one byte of choices, eight bytes of a double, then JSON text.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util/jdump.h"

static const size_t layouts[] = {
    JSON_COMPACT,
    0,
    JSON_INDENT(2),
    JSON_INDENT(1) | JSON_COMPACT,
    JSON_COMPACT | JSON_ENSURE_ASCII,
    JSON_INDENT(4) | JSON_ESCAPE_SLASH | JSON_ENSURE_ASCII,
};

static void check_real(double d)
{
    if (!isfinite(d))
        return;
    char text[32];
    size_t n = jdump_real(d, text);
    FUZZ_CHECK(n > 0 && n < 32 && strlen(text) == n);
    FUZZ_CHECK(strchr(text, '.') || strchr(text, 'e'));
    char *end;
    double back = strtod(text, &end);
    FUZZ_CHECK(*end == '\0' && back == d && signbit(back) == signbit(d));
    /* Shortest: the nearest decimal with one significant digit fewer does not read back. */
    char mantissa[32];
    size_t m = 0;
    for (const char *p = text; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && (m || *p != '0'))
            mantissa[m++] = *p;
    while (m > 0 && mantissa[m - 1] == '0')
        m--;
    if (m > 1 && fabs(d) >= DBL_MIN) {
        char fewer[40];
        snprintf(fewer, sizeof(fewer), "%.*e", (int)m - 2, d);
        FUZZ_CHECK(strtod(fewer, NULL) != d);
    }
    /* jansson, which reads every frame and message, takes it as the same real. */
    json_t *v = json_loadb(text, n, JSON_DECODE_ANY, NULL);
    FUZZ_CHECK(json_is_real(v) && json_real_value(v) == d);
    json_decref(v);
}

static void check_capped(const json_t *v, const char *full, size_t full_len, size_t cap)
{
    struct buf b;
    buf_init(&b, cap + 2);
    FUZZ_CHECK(buf_append(&b, "[,", 2) == 0); /* what was there before must stay */
    int r = jdump_buf(v, JSON_COMPACT, &b);
    if (r == 0) {
        FUZZ_CHECK(b.len == 2 + full_len && memcmp(b.data + 2, full, full_len) == 0);
    } else {
        FUZZ_CHECK(r == -E2BIG && full_len > cap);
        FUZZ_CHECK(b.len == 2 && memcmp(b.data, "[,", 3) == 0);
    }
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t choice = fuzz_byte(&in);
    if (in.len >= sizeof(double)) {
        double d;
        memcpy(&d, in.data, sizeof(d));
        in.data += sizeof(d);
        in.len -= sizeof(d);
        check_real(d);
    }
    size_t flags = JSON_DECODE_ANY | (choice & 1 ? JSON_ALLOW_NUL : 0);
    json_t *v = json_loadb((const char *)in.data, in.len, flags, NULL);
    if (!v)
        return 0;
    size_t full_len = 0;
    char *full = jdump(v, JSON_COMPACT, &full_len);
    FUZZ_CHECK(full && strlen(full) <= full_len);
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        size_t len;
        char *text = jdump(v, layouts[i], &len);
        FUZZ_CHECK(text != NULL);
        json_t *back = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        FUZZ_CHECK(fuzz_json_equal(v, back));
        if (layouts[i] & JSON_ENSURE_ASCII)
            for (size_t k = 0; k < len; k++)
                FUZZ_CHECK((unsigned char)text[k] < 0x80);
        size_t again_len;
        char *again = jdump(back, layouts[i], &again_len);
        FUZZ_CHECK(again && again_len == len && memcmp(again, text, len) == 0);
        free(again);
        json_decref(back);
        free(text);
    }
    check_capped(v, full, full_len, (full_len + 8) * choice / 255);
    free(full);
    json_decref(v);
    return 0;
}
