// SPDX-License-Identifier: MIT
/*
 * error — every error answer of /e2b, in the shape each of E2B's surfaces has, made here and
 * nowhere else:
 *   E2B_SURFACE_API      the control plane (api.e2b.app): {"code": <HTTP status>, "message"}
 *   E2B_SURFACE_ENVD     envd's REST routes (/files, /health): the same shape
 *   E2B_SURFACE_CONNECT  envd's unary Connect RPCs: {"code": "not_found", "message"} with the
 *                        status of that code (connect.h); streams end with it instead
 *   E2B_SURFACE_INTERP   the code interpreter (/execute, /contexts): the message as text/plain
 * The SDKs turn these into their own classes (NotFoundError, AuthenticationError,
 * RateLimitError, TimeoutError, ...): docs/internals/e2b.md has the table. Errors arrive as
 * util/error.h's kinds (or a Connect code name in `code`); the status comes from e2b_status_of.
 */
#ifndef SANDBOXD_E2B_ERROR_H
#define SANDBOXD_E2B_ERROR_H

#include "http/server.h"
#include "util/error.h"

enum e2b_surface { E2B_SURFACE_API, E2B_SURFACE_ENVD, E2B_SURFACE_CONNECT, E2B_SURFACE_INTERP };

/* The HTTP status of e on a surface other than CONNECT: the kind's (400, 404 for NOT_FOUND and
 * GONE, 413, 429, 503, 502, 500), or the status of the Connect code e->code names. */
int e2b_status_of(const struct sbx_error *e);
/* Fill reply with e in the shape of surface; consumes e (sbx_error_clear). LIMIT and
 * UNAVAILABLE carry Retry-After: 1 (the SDKs retry a 429 that has it). */
void e2b_reply_error(struct http_reply *reply, enum e2b_surface surface, struct sbx_error *e);
/* The same for an error made here: kind, code (static: a Connect code name, or sandboxd's) and
 * a message. */
void e2b_reply_fail(struct http_reply *reply, enum e2b_surface surface, enum sbx_errkind kind,
                    const char *code, const char *fmt, ...) _printf_(5, 6);
/* An answer with an explicit status (the policy's 401 and 403, 405, 415): {"code", "message"}
 * on API and ENVD, the Connect code of the status on CONNECT, text on INTERP. */
void e2b_reply_status(struct http_reply *reply, enum e2b_surface surface, int status,
                      const char *message);

#endif
