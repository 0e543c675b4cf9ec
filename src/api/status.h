// SPDX-License-Identifier: MIT
/*
 * status — where an answer of api/ gets its HTTP status: an error's kind (util/error.h) or a
 * route's success. The one place in api/ that writes a status (tests/http_statuses.py holds
 * it so), and below which no module chooses one. What keeps statuses of its own: the HTTP
 * layer for its protocol errors (a bad request line, 408, 413, 431, ...; http/server.c), the
 * egress proxy, which speaks HTTP to the sandbox (egress/), and the clients that read an
 * upstream's status (framework/, mcpclient/).
 */
#ifndef SANDBOXD_API_STATUS_H
#define SANDBOXD_API_STATUS_H

#include "http/server.h"
#include "util/error.h"

/* What a route answers when it succeeds. */
enum api_ok {
    API_OK,           /* 200 */
    API_CREATED,      /* 201 */
    API_ACCEPTED,     /* 202: taken, nothing to answer (an MCP notification) */
    API_NO_CONTENT,   /* 204 */
    API_NOT_MODIFIED, /* 304: the client's copy (If-None-Match) is the one we have */
};

/* NONE 200 (the request was answered), INVALID 400, UNAUTHORIZED 401, FORBIDDEN 403, NOT_FOUND
 * 404, METHOD 405, NOT_ACCEPTABLE 406, CONFLICT 409, GONE 410, TOO_LARGE 413, MEDIA_TYPE 415,
 * LIMIT 429, UPSTREAM 502, UNAVAILABLE 503, INTERNAL (and anything else) 500. */
int api_status_of(enum sbx_errkind kind);
/* 200, 201, 202, 204, 304. */
int api_status_ok(enum api_ok ok);
/* Answer an error ({"error": {code, message, field}}) of kind, with Retry-After: 1 when the
 * server is full or shutting down (UNAVAILABLE). */
void api_reply_error(struct http_reply *reply, enum sbx_errkind kind, const char *code,
                     const char *field, const char *fmt, ...) _printf_(5, 6);
/* Answer e as api_reply_error() does; clears e. */
void api_reply_sbx_error(struct http_reply *reply, struct sbx_error *e);
/* Answer a JSON-RPC error response without id ({jsonrpc, id: null, error: {code, message,
 * data}}; data borrowed, may be NULL) with the status of kind: the errors of the MCP endpoint
 * that come before any message was handled (api/mcp_http.c, and a refusal of the policy). */
void api_reply_jsonrpc(struct http_reply *reply, enum sbx_errkind kind, int code,
                       const char *message, json_t *data);
/* Answer 405 METHOD_NOT_ALLOWED ("use ALLOW") with an Allow header. */
void api_reply_method(struct http_reply *reply, const char *allow);
/* Answer body (stolen) with the status of ok; a NULL body (one that could not be built: out
 * of memory) is answered 500 INTERNAL instead, never as an empty success. */
void api_reply_json(struct http_reply *reply, enum api_ok ok, json_t *body);
/* Give the reply the status of ok, its body set otherwise (text, a file, a stream) or none. */
void api_reply_ok(struct http_reply *reply, enum api_ok ok);

#endif
