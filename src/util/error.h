// SPDX-License-Identifier: MIT
/*
 * error — the one error type that crosses module boundaries. A module says what kind of failure
 * it was (the request was wrong, a thing is missing, a limit was hit, the server is full, ...),
 * a stable code from the documented list (SESSION_NOT_FOUND, TENANT_LIMIT, ...), the field of
 * the request at fault and a message; it never chooses an HTTP status. The front ends do:
 * api/ maps a kind to an HTTP status in one function (api_status_of(), api/status.h), the MCP
 * server to a tool error. No allocation but the message; out of memory leaves it NULL.
 */
#ifndef SANDBOXD_UTIL_ERROR_H
#define SANDBOXD_UTIL_ERROR_H

#include "util/macros.h"

enum sbx_errkind {
    SBX_ERR_NONE = 0,    /* no failure: the request was answered (its outcome is in the body) */
    SBX_ERR_INVALID,     /* the request asks for what cannot be: fix it and retry */
    SBX_ERR_NOT_FOUND,   /* no such thing (or not the caller's) */
    SBX_ERR_GONE,        /* it existed and has ended */
    SBX_ERR_TOO_LARGE,   /* the request is bigger than this server takes */
    SBX_ERR_LIMIT,       /* the caller is over one of its own limits: retry later */
    SBX_ERR_UNAVAILABLE, /* the server is full or shutting down: retry later, elsewhere */
    SBX_ERR_UPSTREAM,    /* a server this one depends on failed */
    SBX_ERR_INTERNAL,    /* this server failed */
    SBX_ERR_KIND_COUNT_,
};

struct sbx_error {
    enum sbx_errkind kind;
    const char *code;  /* static: the documented error code */
    const char *field; /* static or NULL: the request member at fault */
    char *message;     /* owned; NULL when out of memory */
};

/* Fill *e (a message it held is freed). */
void sbx_error_set(struct sbx_error *e, enum sbx_errkind kind, const char *code, const char *field,
                   const char *fmt, ...) _printf_(5, 6);
/* Free the message and zero *e; safe on a zeroed one. */
void sbx_error_clear(struct sbx_error *e);
/* "invalid", "not_found", ...: for logs and tests (static). */
const char *sbx_errkind_name(enum sbx_errkind kind);

#define _cleanup_sbx_error_ _cleanup_(sbx_error_clear)

#endif
