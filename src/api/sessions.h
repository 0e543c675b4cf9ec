// SPDX-License-Identifier: MIT
/*
 * sessions (api) — HTTP routes of persistent sessions; see sessions.c.
 */
#ifndef SANDBOXD_API_SESSIONS_H
#define SANDBOXD_API_SESSIONS_H

#include "api/api.h"
#include "response/response.h"
#include "session/session.h"

/* rest: the path after "/v1/sessions" ("", "/ID", "/ID/execute"). tenant: the caller's (NULL:
 * the operator); another tenant's sessions answer 404 and are not listed. */
void api_sessions_route(struct api *api, const struct http_request *req, const char *rest,
                        struct tenant *tenant, struct http_reply *reply);

/* GET /v1/approvals: the calls waiting for a person in every session tenant sees (its own;
 * NULL: the operator, all of them). */
void api_approvals_route(struct api *api, struct tenant *tenant, struct http_reply *reply);

#endif
