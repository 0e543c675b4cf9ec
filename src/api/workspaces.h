// SPDX-License-Identifier: MIT
/*
 * workspaces (api) — what an operator may see and remove of a workspace,
 * over HTTP; see workspaces.c.
 */
#ifndef SANDBOXD_API_WORKSPACES_H
#define SANDBOXD_API_WORKSPACES_H

#include "api/api.h"

/* rest: the path after "/v1/workspaces" ("/NAME/tools", "/NAME/memories/KEY", ...). */
void api_workspaces_route(struct api *api, const struct http_request *req, const char *rest,
                          struct http_reply *reply);

#endif
