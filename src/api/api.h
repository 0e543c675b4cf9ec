// SPDX-License-Identifier: MIT
/*
 * api — the HTTP routes of `sandboxd serve` (CONTRACT §3): /execute,
 * /healthz, /_framework/load_code, /metrics, and the route table that sends
 * /v1/sessions and /mcp to their modules. Checks what HTTP itself decides
 * (method, Content-Type, Accept, JSON syntax) and leaves the rest to app/.
 */
#ifndef SANDBOXD_API_API_H
#define SANDBOXD_API_API_H

#include "app/app.h"
#include "http/server.h"

struct api {
    struct app *app;
    struct sessions *sessions;      /* NULL: sessions disabled */
    struct mcp_http *mcp;           /* NULL: /mcp disabled */
    struct workspace_store *wstore; /* NULL: /v1/workspaces disabled */
};

/* The http_route_fn of the server; userdata is a struct api. */
void api_route(void *userdata, const struct http_request *req, struct http_reply *reply);
/* Content-Type is application/json (parameters allowed). */
bool api_is_json_type(const char *content_type);
/* An Accept header admits application/json (absent header: yes). */
bool api_accepts(const char *accept, const char *type);

#endif
