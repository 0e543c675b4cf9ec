// SPDX-License-Identifier: MIT
/*
 * randid — see randid.h. sodium_init() is idempotent and thread-safe, so every call makes
 * sure libsodium is ready; randombytes_buf() itself cannot fail once it is.
 */
#include "util/randid.h"

#include <errno.h>
#include <sodium.h>

#define RANDID_MAX_BYTES 64

int randid_hex(char *out, size_t out_size, size_t nbytes)
{
    if (out_size)
        out[0] = '\0';
    if (nbytes == 0 || nbytes > RANDID_MAX_BYTES || out_size < 2 * nbytes + 1)
        return -EINVAL;
    if (sodium_init() < 0)
        return -EIO;
    unsigned char raw[RANDID_MAX_BYTES];
    randombytes_buf(raw, nbytes);
    sodium_bin2hex(out, out_size, raw, nbytes);
    sodium_memzero(raw, sizeof(raw));
    return 0;
}
