// SPDX-License-Identifier: MIT
/*
 * workspaces (api) — what an operator may see and remove of a workspace,
 * over HTTP; see workspaces.c.
 */
#ifndef SANDBOXD_API_WORKSPACES_H
#define SANDBOXD_API_WORKSPACES_H

#include "api/api.h"

struct tenant;

/* rest: the path after "/v1/workspaces" ("/NAME/tools", "/NAME/memories/KEY", ...). tenant:
 * the caller's (NULL: the operator); NAME is that tenant's workspace of the name, another
 * tenant's are never reached. */
void api_workspaces_route(struct api *api, const struct http_request *req, const char *rest,
                          const struct tenant *tenant, struct http_reply *reply);

#endif
