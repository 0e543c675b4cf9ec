// SPDX-License-Identifier: MIT
/*
 * b64 — standard base64 (RFC 4648, with padding) through libsodium, for the
 * bytes that travel inside JSON: artifacts, files, definitions. Never logs.
 */
#ifndef SANDBOXD_UTIL_B64_H
#define SANDBOXD_UTIL_B64_H

#include <stddef.h>

/* The encoding of len bytes, NUL-terminated (caller frees); NULL when out of memory. */
char *b64_encode(const void *data, size_t len);
/* Decode text (len bytes; the characters in ignore, e.g. " \r\n\t", are skipped, NULL for
 * none) into *ret (NUL-terminated, caller frees) and *ret_len (may be NULL). -EBADMSG when it
 * is not base64, -ENOMEM. */
int b64_decode_ignoring(const char *text, size_t len, const char *ignore, char **ret,
                        size_t *ret_len);
/* The same with nothing to skip. */
int b64_decode(const char *text, size_t len, char **ret, size_t *ret_len);

#endif
