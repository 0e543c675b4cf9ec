// SPDX-License-Identifier: MIT
/*
 * status — where an error's kind (util/error.h) becomes an HTTP status: the one place below
 * which no module chooses one. The HTTP layer keeps the statuses of its own protocol errors
 * (400 for a bad request line, 408, 413, 431, ...).
 */
#ifndef SANDBOXD_API_STATUS_H
#define SANDBOXD_API_STATUS_H

#include "http/server.h"
#include "util/error.h"

/* NONE 200 (the request was answered), INVALID 400, NOT_FOUND 404, GONE 410, TOO_LARGE 413, LIMIT
 * 429, UNAVAILABLE 503, UPSTREAM 502, INTERNAL (and anything else) 500. */
int api_status_of(enum sbx_errkind kind);
/* Answer e as an error response ({"error": {code, message, field}}) with its status, and
 * Retry-After: 1 when the server is full or shutting down (UNAVAILABLE); clears e. */
void api_reply_sbx_error(struct http_reply *reply, struct sbx_error *e);
/* Answer body (stolen) with status; a NULL body (one that could not be built: out of memory)
 * is answered 500 INTERNAL instead, never as an empty success. */
void api_reply_json(struct http_reply *reply, int status, json_t *body);

#endif
