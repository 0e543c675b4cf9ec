// SPDX-License-Identifier: MIT
/*
 * api — the HTTP routes of `sandboxd serve` (CONTRACT §3): /execute,
 * /healthz, /livez, /readyz, /_framework/load_code, /metrics,
 * /v1/session-options, and the branches that send /v1/sessions,
 * /v1/workspaces, /mcp, /e2b and the console's files (/ui, /openapi.json) to
 * their modules. Every request passes the policy (api/policy.h: Host, Origin,
 * token, tenant), then the route table (api/routes.h: 404, 405), before any
 * route sees it. Checks what HTTP itself decides (method, Content-Type,
 * Accept, JSON syntax) and the framework allowlist, and leaves the rest to
 * handlers/. While the server drains (SIGTERM) new work is refused with 503
 * SHUTTING_DOWN; what runs already goes on.
 */
#ifndef SANDBOXD_API_API_H
#define SANDBOXD_API_API_H

#include <stdatomic.h>

#include "handlers/app.h"
#include "http/server.h"

struct api {
    struct app *app;
    struct policy *policy;          /* who may call: required */
    struct sessions *sessions;      /* NULL: sessions disabled */
    struct mcp_http *mcp;           /* NULL: /mcp disabled */
    struct workspace_store *wstore; /* NULL: /v1/workspaces disabled */
    struct store *store;            /* the state store (readiness, /healthz); NULL: none */
    struct mcp_registry *registry;  /* the MCP servers sessions may name; NULL: none */
    struct e2b *e2b;                /* NULL: /e2b (E2B's API, docs/E2B.md) disabled */
    /* set once the server runs (for /healthz and /metrics); NULL before */
    _Atomic(struct http_server *) http;
    atomic_bool draining; /* api_drain() was called */
    atomic_bool started;  /* /readyz saw the server ready once (a latch) */
};

/* The http_route_fn of the server; userdata is a struct api. */
void api_route(void *userdata, const struct http_request *req, struct http_reply *reply);
/* The http_inline_fn: the probes and /metrics answer on the I/O thread. */
bool api_route_inline(void *userdata, const char *method, const char *path);
/* Refuse new work from now on (503 SHUTTING_DOWN, Retry-After); /readyz and /healthz say
 * "draining". */
void api_drain(struct api *api);
/* Content-Type is application/json (parameters allowed). */
bool api_is_json_type(const char *content_type);
/* An Accept header admits application/json (absent header: yes). */
bool api_accepts(const char *accept, const char *type);

#endif
