// SPDX-License-Identifier: MIT
/*
 * b64 — see b64.h.
 */
#include "util/b64.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>

char *b64_encode(const void *data, size_t len)
{
    size_t n = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
    char *out = malloc(n);
    if (out)
        sodium_bin2base64(out, n, data, len, sodium_base64_VARIANT_ORIGINAL);
    return out;
}

int b64_decode_ignoring(const char *text, size_t len, const char *ignore, char **ret,
                        size_t *ret_len)
{
    size_t cap = len / 4 * 3 + 3;
    unsigned char *out = malloc(cap + 1);
    if (!out)
        return -ENOMEM;
    size_t n = 0;
    const char *end = NULL;
    if (sodium_base642bin(out, cap, text, len, ignore, &n, &end, sodium_base64_VARIANT_ORIGINAL) !=
            0 ||
        end != text + len) {
        free(out);
        return -EBADMSG;
    }
    out[n] = '\0';
    *ret = (char *)out;
    if (ret_len)
        *ret_len = n;
    return 0;
}

int b64_decode(const char *text, size_t len, char **ret, size_t *ret_len)
{
    return b64_decode_ignoring(text, len, NULL, ret, ret_len);
}
