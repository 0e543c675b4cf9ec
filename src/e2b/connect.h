// SPDX-License-Identifier: MIT
/*
 * connect — the Connect RPC protocol (connectrpc.com/docs/protocol) in its JSON encoding, as
 * E2B's SDKs speak it to envd over HTTP/1.1 (@connectrpc/connect-web with useBinaryFormat
 * false): unary calls are a JSON body in and out (application/json), server-streaming calls an
 * enveloped request and a stream of envelopes (application/connect+json): one byte of flags
 * (0x01 compressed, 0x02 end of stream), a 4-byte big-endian length, then the JSON; the last
 * envelope is the end-of-stream message {"error"?: {code, message}}. Errors name one of the
 * sixteen Connect codes. Pure functions over bytes: no I/O, no allocation beyond the results.
 * The envelope reader takes untrusted input (fuzz/fuzz_e2b.c).
 */
#ifndef SANDBOXD_E2B_CONNECT_H
#define SANDBOXD_E2B_CONNECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define CONNECT_FLAG_COMPRESSED 0x01u
#define CONNECT_FLAG_END_STREAM 0x02u
#define CONNECT_ENVELOPE_HEADER 5
#define CONNECT_MESSAGE_MAX     (4u << 20) /* a request message, at most */

/* The Connect code named name ("not_found", ...): its sandboxd error kind and the HTTP status a
 * unary error answer has. False for a name that is not a Connect code. */
bool connect_code_lookup(const char *name, enum sbx_errkind *ret_kind, int *ret_status);
/* The static name of the Connect code name (as the table spells it), or NULL for another
 * string. */
const char *connect_code_name(const char *name);
/* The code name for an error: e->code when it is a Connect code name, else the closest code to
 * its kind (static). */
const char *connect_code_of(const struct sbx_error *e);
/* The HTTP status of a unary error answer carrying e. */
int connect_status_of(const struct sbx_error *e);
/* text (NUL-terminated) as a JSON string, every byte that is not UTF-8 replaced by U+FFFD (new
 * reference; NULL when out of memory). */
json_t *connect_text(const char *text);
/* The error body {"code", "message"} of e (new reference). */
json_t *connect_error_json(const struct sbx_error *e);

/* The one message of a server-streaming request: body[0..len) must be exactly one uncompressed
 * envelope that is not an end-of-stream one, holding a JSON object of at most
 * CONNECT_MESSAGE_MAX bytes. 0 and *ret (new reference); -EINVAL with *ret_why (static). */
int connect_read_envelope(const void *body, size_t len, json_t **ret, const char **ret_why);
/* Parse a unary request body: a JSON object (an empty body counts as {}). Same contract. */
int connect_read_unary(const void *body, size_t len, json_t **ret, const char **ret_why);
/* One envelope of msg (flags: 0 or CONNECT_FLAG_END_STREAM) appended to a new buffer (caller
 * frees) of *ret_len bytes; NULL when out of memory or msg cannot be encoded. */
char *connect_envelope(unsigned flags, const json_t *msg, size_t *ret_len);
/* The end-of-stream envelope: {} for success (e NULL), {"error": {...}} otherwise. */
char *connect_end_stream(const struct sbx_error *e, size_t *ret_len);

#endif
