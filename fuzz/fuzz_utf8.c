// SPDX-License-Identifier: MIT
/*
 * fuzz_utf8 — what becomes of bytes a sandbox prints (response/response.c,
 * util/utf8.c): response_text() keeps valid UTF-8 as it is and repairs the
 * rest (U+FFFD for every byte that starts no well-formed sequence), the
 * repair is idempotent, a cut never splits a character, and a capped
 * string is valid UTF-8 of bounded length that ends with the marker. JSON
 * values from the input have every string capped the same way. The log's
 * escape (utf8_escape) is valid UTF-8 without NUL, agrees with utf8_valid,
 * and can be read back to the bytes it came from.
 *
 * Input: one byte choosing the cap, then the bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/response.h"
#include "fuzz.h"
#include "util/utf8.h"

static bool valid_utf8(const char *s, size_t len)
{
    json_t *v = json_stringn(s, len); /* jansson's own validation, not ours */
    json_decref(v);
    return v != NULL;
}

static void check_capped(const char *s, size_t len, size_t max)
{
    bool cut = false;
    json_t *c = response_capped_string(s, len, max, &cut);
    FUZZ_CHECK(c != NULL);
    const char *t = json_string_value(c);
    size_t tlen = json_string_length(c);
    FUZZ_CHECK(valid_utf8(t, tlen));
    if (len <= max) {
        FUZZ_CHECK(!cut && tlen == len && memcmp(t, s, len) == 0);
    } else {
        char marker[64];
        int m = snprintf(marker, sizeof(marker), RESPONSE_TRUNCATED_MARKER, len);
        FUZZ_CHECK(cut && m > 0 && tlen >= (size_t)m);
        size_t keep = tlen - (size_t)m;
        FUZZ_CHECK(memcmp(t + keep, marker, (size_t)m) == 0 && memcmp(t, s, keep) == 0);
        FUZZ_CHECK(tlen <= max || keep == 0); /* only a cap shorter than the marker exceeds */
        FUZZ_CHECK(keep + 4 > (max > (size_t)m ? max - (size_t)m : 0)); /* at most a char lost */
    }
    json_decref(c);
}

static bool strings_within(const json_t *v, size_t max)
{
    if (json_is_string(v))
        return json_string_length(v) <= max ||
               memmem(json_string_value(v), json_string_length(v), "[... truncated: ", 16);
    size_t i;
    const char *k;
    json_t *m;
    if (json_is_array(v)) {
        json_array_foreach(v, i, m) if (!strings_within(m, max)) return false;
    } else if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, m) if (!strings_within(m, max)) return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    size_t max = fuzz_byte(&in);
    const char *bytes = (const char *)in.data;
    size_t len = in.len;

    /* What a sandbox printed, as the response carries it. */
    struct buf b;
    buf_init(&b, len);
    FUZZ_CHECK(buf_append(&b, bytes, len) == 0);
    json_t *text = response_text(&b);
    FUZZ_CHECK(text != NULL);
    const char *t = json_string_value(text);
    size_t tlen = json_string_length(text);
    FUZZ_CHECK(valid_utf8(t, tlen));
    bool was_valid = valid_utf8(bytes, len);
    if (was_valid)
        FUZZ_CHECK(tlen == len && memcmp(t, bytes, len) == 0);
    else
        FUZZ_CHECK(tlen > len && memmem(t, tlen, "\xEF\xBF\xBD", 3) != NULL);

    /* The repair is idempotent and agrees with response_text. */
    size_t clean_len;
    char *clean = utf8_sanitize(bytes, len, &clean_len);
    FUZZ_CHECK(clean && clean_len == tlen && memcmp(clean, t, tlen) == 0);
    size_t again_len;
    char *again = utf8_sanitize(clean, clean_len, &again_len);
    FUZZ_CHECK(again && again_len == clean_len && memcmp(again, clean, clean_len) == 0);
    free(again);

    /* The log's escape: valid text that gives the bytes back (\\ and \xHH read back). */
    FUZZ_CHECK(utf8_valid(bytes, len) == (was_valid && !memchr(bytes, 0, len)));
    size_t esc_len;
    char *esc = utf8_escape(bytes, len, &esc_len);
    FUZZ_CHECK(esc && strlen(esc) == esc_len && utf8_valid(esc, esc_len));
    size_t back = 0;
    for (size_t i = 0; i < esc_len; back++) {
        FUZZ_CHECK(back < len);
        if (esc[i] != '\\') {
            FUZZ_CHECK(esc[i] == bytes[back]);
            i++;
        } else if (esc[i + 1] == '\\') {
            FUZZ_CHECK(bytes[back] == '\\');
            i += 2;
        } else {
            unsigned v = 0;
            FUZZ_CHECK(esc[i + 1] == 'x' && sscanf(esc + i + 2, "%2x", &v) == 1);
            FUZZ_CHECK((unsigned char)bytes[back] == v);
            i += 4;
        }
    }
    FUZZ_CHECK(back == len);
    free(esc);

    /* Cuts fall between characters, and lose less than one. */
    for (size_t m = 0; m <= clean_len && m < 64; m += 1 + m / 4) {
        size_t k = utf8_cut(clean, clean_len, m);
        FUZZ_CHECK(k <= m && k + 4 > m && valid_utf8(clean, k));
    }
    FUZZ_CHECK(utf8_cut(clean, clean_len, clean_len + max) == clean_len);
    check_capped(clean, clean_len, max);
    check_capped(clean, clean_len, clean_len > max ? clean_len - max : 0);

    /* The bytes as JSON: every string capped, in place, stays valid. */
    json_t *v = json_loadb(bytes, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v) {
        size_t before = json_string_length(v); /* 0 unless a string */
        bool cut = response_cap_strings(v, max + 32);
        FUZZ_CHECK(fuzz_json_valid_utf8(v) && strings_within(v, max + 32));
        FUZZ_CHECK(!json_is_string(v) || cut == (before > max + 32));
        json_decref(v);
    }
    free(clean);
    json_decref(text);
    buf_free(&b);
    return 0;
}
