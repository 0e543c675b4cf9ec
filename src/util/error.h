// SPDX-License-Identifier: MIT
/*
 * error — the one error type that crosses module boundaries. A module says what kind of failure
 * it was (the request was wrong, a thing is missing, a limit was hit, the server is full, ...),
 * a stable code from the documented list (SESSION_NOT_FOUND, TENANT_LIMIT, ...), the field of
 * the request at fault and a message; it never chooses an HTTP status. The front ends do:
 * api/ maps a kind to an HTTP status in one function (api_status_of(), api/status.h), the MCP
 * server to a tool error. A failed call to another server (an MCP server, the Core Framework,
 * an LLM endpoint) is kind UPSTREAM and says, besides, how the call failed, the HTTP status that
 * server answered and the error code it gave (sbx_error_upstream()). No allocation but the
 * message and that code; out of memory leaves them NULL.
 */
#ifndef SANDBOXD_UTIL_ERROR_H
#define SANDBOXD_UTIL_ERROR_H

#include <jansson.h>

#include "util/macros.h"

/* X(NAME, "name", what it means): the kinds, in one table (the enum and sbx_errkind_name() are
 * expanded from it; api/status.c gives each its HTTP status). */
#define SBX_ERRKINDS(X)                                                                            \
    X(NONE, "none", "no failure: the request was answered (its outcome is in the body)")           \
    X(INVALID, "invalid", "the request asks for what cannot be: fix it and retry")                 \
    X(NOT_FOUND, "not_found", "no such thing (or not the caller's)")                               \
    X(GONE, "gone", "it existed and has ended")                                                    \
    X(TOO_LARGE, "too_large", "the request is bigger than this server takes")                      \
    X(LIMIT, "limit", "the caller is over one of its own limits: retry later")                     \
    X(UNAVAILABLE, "unavailable", "the server is full or shutting down: retry later, elsewhere")   \
    X(UPSTREAM, "upstream", "a server this one depends on failed")                                 \
    X(INTERNAL, "internal", "this server failed")                                                  \
    X(FORBIDDEN, "forbidden", "the caller may not do this (not a matter of who it is)")            \
    X(CONFLICT, "conflict", "the thing is not in a state that allows this")                        \
    /* The last four are about an HTTP request's credentials and form: the front ends' own */      \
    X(UNAUTHORIZED, "unauthorized", "the caller did not say who it is, or said it wrongly")        \
    X(METHOD, "method", "the thing exists, but not for this request method")                       \
    X(MEDIA_TYPE, "media_type", "the body is of a type this does not read")                        \
    X(NOT_ACCEPTABLE, "not_acceptable", "the caller accepts no type this can answer in")

enum sbx_errkind {
#define SBX_ERRKIND_ENUM_(name, text, why) SBX_ERR_##name,
    SBX_ERRKINDS(SBX_ERRKIND_ENUM_)
#undef SBX_ERRKIND_ENUM_
        SBX_ERR_KIND_COUNT_,
};

/* How a call to another server failed (kind UPSTREAM; NONE for every other kind). */
enum sbx_upstream {
    SBX_UP_NONE,
    SBX_UP_TRANSPORT, /* could not connect / the connection broke */
    SBX_UP_TIMEOUT,
    SBX_UP_HTTP,     /* it answered a non-2xx status */
    SBX_UP_PROTOCOL, /* the answer is not what the protocol says */
    SBX_UP_TOOL,     /* the tool (the method) answered with an error */
    SBX_UP_COUNT_,
};

struct sbx_error {
    enum sbx_errkind kind;
    const char *code;  /* static: the documented error code */
    const char *field; /* static or NULL: the request member at fault */
    char *message;     /* owned; NULL when out of memory */
    /* A failed call to another server: how it failed, the HTTP status that server answered (0:
     * none; read, never chosen here) and the error code it gave (owned; NULL: none). */
    enum sbx_upstream upstream;
    long upstream_status;
    char *upstream_code;
};

/* Fill *e (a message it held is freed; the upstream part is cleared). */
void sbx_error_set(struct sbx_error *e, enum sbx_errkind kind, const char *code, const char *field,
                   const char *fmt, ...) _printf_(5, 6);
/* sbx_error_set(), then return -err: `return sbx_error_errno(e, EINVAL, SBX_ERR_INVALID, ...)`. */
int sbx_error_errno(struct sbx_error *e, int err, enum sbx_errkind kind, const char *code,
                    const char *field, const char *fmt, ...) _printf_(6, 7);
/* Fill *e as a failed call to another server: kind UPSTREAM, code MCP_ERROR (the documented
 * code of a failed framework or MCP call; a caller may name it otherwise), upstream how, and
 * upstream_code a copy of code (NULL: none). What e held is freed; upstream_status is 0 (the
 * caller sets it when the server answered one). */
void sbx_error_upstream(struct sbx_error *e, enum sbx_upstream how, const char *code,
                        const char *fmt, ...) _printf_(4, 5);
/* Free the message and zero *e; safe on a zeroed one. */
void sbx_error_clear(struct sbx_error *e);
/* "invalid", "not_found", ...: for logs and tests (static). */
const char *sbx_errkind_name(enum sbx_errkind kind);
/* "transport", "timeout", "http", "protocol", "tool" ("none" for NONE): what the sandbox's
 * runtime and the API's error details call it (static). */
const char *sbx_upstream_name(enum sbx_upstream how);
/* The details of a failed call, for an error body: {kind (sbx_upstream_name), message, tool
 * (when given), httpStatus (when the server answered one), code (when it gave one)}; a new
 * reference, NULL when out of memory. */
json_t *sbx_error_details(const struct sbx_error *e, const char *tool);

#define _cleanup_sbx_error_ _cleanup_(sbx_error_clear)

#endif
