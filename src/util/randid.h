// SPDX-License-Identifier: MIT
/*
 * randid — random identifiers (request ids, session ids, MCP session ids,
 * temporary file names) from libsodium's randombytes_buf(), written as hex
 * with sodium_bin2hex(). Fails closed: when libsodium cannot start, callers
 * get an error and must not invent an id of their own (no zeros, no clock).
 */
#ifndef SANDBOXD_UTIL_RANDID_H
#define SANDBOXD_UTIL_RANDID_H

#include <stddef.h>

/* Write 2 * nbytes lowercase hex digits and a NUL to out (out_size >= 2 * nbytes + 1).
 * 0, -EINVAL when out is too small, -EIO when libsodium cannot be initialised (out is then
 * the empty string). */
int randid_hex(char *out, size_t out_size, size_t nbytes);

#endif
