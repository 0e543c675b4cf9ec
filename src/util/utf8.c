// SPDX-License-Identifier: MIT
/*
 * utf8 — see utf8.h. One pass, no allocation per character: repaired or
 * escaped text is written once into a buffer of the most it can need.
 */
#include "util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t utf8_seq_len(const unsigned char *p, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else
        return 0; /* a continuation byte, an overlong 2-byte lead, or not UTF-8 at all */
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* The text with what is not well formed rewritten: as U+FFFD (sanitize), or as \xHH with
 * backslashes (and NUL) escaped too (escape). One pass into a buffer of the largest size a
 * rewrite may need: 3 bytes a byte for U+FFFD, 4 for \xHH. */
static char *utf8_rewrite(const char *data, size_t len, bool escape, size_t *ret_len)
{
    size_t per_byte = escape ? 4 : 3;
    if (len > (SIZE_MAX - 1) / per_byte)
        return NULL;
    char *out = malloc(len * per_byte + 1);
    if (!out)
        return NULL;
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)data;
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len(p + i, len - i);
        if (n && !(escape && (p[i] == '\\' || p[i] == 0))) {
            memcpy(out + k, p + i, n);
            k += n;
            i += n;
        } else if (!escape) {
            memcpy(out + k, "\xEF\xBF\xBD", 3); /* U+FFFD */
            k += 3;
            i++;
        } else if (p[i] == '\\') {
            memcpy(out + k, "\\\\", 2); /* doubled: "\\x41" stays apart from an escaped byte */
            k += 2;
            i++;
        } else {
            out[k++] = '\\';
            out[k++] = 'x';
            out[k++] = hex[p[i] >> 4];
            out[k++] = hex[p[i] & 15];
            i++;
        }
    }
    out[k] = '\0';
    if (ret_len)
        *ret_len = k;
    return out;
}

char *utf8_sanitize(const char *data, size_t len, size_t *ret_len)
{
    return utf8_rewrite(data, len, false, ret_len);
}

char *utf8_escape(const char *data, size_t len, size_t *ret_len)
{
    return utf8_rewrite(data, len, true, ret_len);
}

bool utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0, n; i < len; i += n)
        if (!(n = utf8_seq_len(p + i, len - i)) || (n == 1 && p[i] == 0))
            return false;
    return true;
}

size_t utf8_incomplete_tail(const unsigned char *p, size_t len)
{
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = p[len - back];
        if ((c & 0xC0) == 0x80)
            continue; /* continuation byte: look further back */
        size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t k = max;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--; /* s[k] is a continuation byte: the character started earlier */
    return k;
}

bool utf8_blank(const char *s)
{
    return s[strspn(s, " \t\n\v\f\r")] == '\0';
}
