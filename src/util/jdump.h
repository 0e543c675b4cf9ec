// SPDX-License-Identifier: MIT
/*
 * jdump — JSON text from jansson values, with every real written as the
 * shortest decimal that parses back to the same double (0.1 is "0.1",
 * 1234567890.123456 keeps its digits). jansson 2.14 can only print reals
 * with a fixed precision: 17 digits round-trip but print 0.1 as
 * 0.10000000000000001, fewer digits lose information. This is the one
 * place sandboxd turns a value into JSON text: responses, logs, frames to
 * the sandbox, MCP messages and files. Strings and keys are still escaped
 * by jansson itself.
 */
#ifndef SANDBOXD_UTIL_JDUMP_H
#define SANDBOXD_UTIL_JDUMP_H

#include <jansson.h>
#include <stddef.h>

#include "util/buf.h"

/* Containers nested deeper than this are refused (jansson's parser stops at 2048). */
#define JDUMP_MAX_DEPTH 4096

/* jansson's dump flags: JSON_COMPACT, JSON_INDENT(n), JSON_ENSURE_ASCII, JSON_ESCAPE_SLASH are
 * honoured; any value may be dumped (JSON_ENCODE_ANY is implied); JSON_REAL_PRECISION and
 * JSON_SORT_KEYS are ignored (reals are always shortest, keys keep their insertion order).
 * Appends to out (its cap applies): 0, -E2BIG over the cap or JDUMP_MAX_DEPTH, -ENOMEM. */
int jdump_buf(const json_t *json, size_t flags, struct buf *out);
/* The text (caller frees, NUL-terminated; *ret_len may be NULL), or NULL when out of memory
 * or nested too deeply. */
char *jdump(const json_t *json, size_t flags, size_t *ret_len);
/* The shortest text of a finite double that strtod() reads back exactly, with a '.' or an
 * exponent so that it stays a real ("1.0", "1e22", "0.1"); out needs 32 bytes. Returns its
 * length. */
size_t jdump_real(double value, char out[32]);

#endif
