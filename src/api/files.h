// SPDX-License-Identifier: MIT
/*
 * files (api) — HTTP routes of a session's files; see files.c.
 */
#ifndef SANDBOXD_API_FILES_H
#define SANDBOXD_API_FILES_H

#include "api/api.h"

/* tail: the path after "/v1/sessions/{id}/files" ("" or "/PATH"). The caller (api/sessions.c)
 * has checked that session id is visible to the request's tenant (sessions_visible()). */
void api_session_files_route(struct api *api, const char *id, const char *tail,
                             const struct http_request *req, struct http_reply *reply);

#endif
