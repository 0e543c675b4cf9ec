// SPDX-License-Identifier: MIT
/*
 * utf8 — checks and repairs of UTF-8 text from outside (what a sandbox
 * prints, what it sends as a message): which byte sequences are well formed
 * (Unicode table 3-7: no overlong forms, no surrogates, nothing above
 * U+10FFFF — the same rule jansson applies to strings), replacing the rest,
 * and cutting text without splitting a character.
 */
#ifndef SANDBOXD_UTIL_UTF8_H
#define SANDBOXD_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1-4) of the well-formed sequence that starts at p (n bytes available), or 0. */
size_t utf8_seq_len(const unsigned char *p, size_t n);
/* The text with every byte that starts no well-formed sequence replaced by U+FFFD (caller
 * frees, NUL-terminated, *ret_len may be NULL); NULL when out of memory. */
char *utf8_sanitize(const char *data, size_t len, size_t *ret_len);
/* s[0..len) is well-formed UTF-8 without a NUL byte: what a JSON string takes as it is. */
bool utf8_valid(const char *s, size_t len);
/* The text with every byte that starts no well-formed sequence (and NUL) written as \xHH and
 * every backslash doubled, so that the bytes can be read back from it (caller frees,
 * NUL-terminated, *ret_len may be NULL); NULL when out of memory. For logs: they show what
 * came, where utf8_sanitize would replace it. */
char *utf8_escape(const char *data, size_t len, size_t *ret_len);
/* The largest length <= max at which valid UTF-8 text s (len bytes) can be cut without
 * splitting a character. */
size_t utf8_cut(const char *s, size_t len, size_t max);
/* How many bytes at the end of p[0..len) start a UTF-8 sequence that is not complete yet
 * (0-3): what a stream of output chunks holds back until the next chunk. */
size_t utf8_incomplete_tail(const unsigned char *p, size_t len);
/* s (NUL-terminated) holds nothing but ASCII whitespace (space, \t, \n, \v, \f, \r): blank
 * code, which sandboxd refuses to run. */
bool utf8_blank(const char *s);

#endif
