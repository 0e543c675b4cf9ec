// SPDX-License-Identifier: MIT
/*
 * routes — see routes.h.
 */
#include "api/routes.h"

#include <stdio.h>
#include <string.h>

#include "util/macros.h"

/* Every path `sandboxd serve` answers; docs/openapi.yaml documents each (tests/unit/
 * test_routes.c holds them together). */
const struct api_route_def api_routes[] = {
    {"/execute", API_POST, 0},
    {"/healthz", API_GET, 0},
    {"/livez", API_GET, 0},
    {"/readyz", API_GET, 0},
    {"/metrics", API_GET, 0},
    {"/_framework/load_code", API_POST, 0},
    {"/v1/sessions", API_GET | API_POST, API_ROUTE_SLASH},
    {"/v1/sessions/{id}", API_GET | API_DELETE, 0},
    {"/v1/sessions/{id}/execute", API_POST, 0},
    {"/v1/sessions/{id}/files", API_GET, 0},
    {"/v1/sessions/{id}/files/{path}", API_GET | API_PUT | API_DELETE, API_ROUTE_TAIL},
    {"/v1/sessions/{id}/approvals", API_GET, 0},
    {"/v1/sessions/{id}/approvals/{approvalId}", API_POST, 0},
    {"/v1/approvals", API_GET, 0},
    {"/v1/session-options", API_GET, 0},
    {"/v1/workspaces/{name}/tools", API_GET, 0},
    {"/v1/workspaces/{name}/tools/{tool}", API_DELETE, API_ROUTE_TAIL},
    {"/v1/workspaces/{name}/memories", API_GET, 0},
    {"/v1/workspaces/{name}/memories/{key}", API_DELETE, API_ROUTE_TAIL},
    {"/mcp", API_POST | API_DELETE, 0},
    /* E2B's API (docs/E2B.md): its own protocol's paths, routed by e2b/ */
    {"/e2b/{path}", API_GET | API_POST | API_PUT | API_DELETE, API_ROUTE_TAIL},
    {"/ui", API_GET, API_ROUTE_SLASH},
    {"/ui/{asset}", API_GET, 0},
    {"/openapi.json", API_GET, 0},
};
const size_t api_routes_count = ARRAY_SIZE(api_routes);

/* Does path match the template t? */
static bool api_route_matches(const struct api_route_def *t, const char *path)
{
    const char *p = t->path, *q = path;
    while (*p) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            bool last = close && close[1] == '\0';
            size_t n = strcspn(q, "/");
            if (!close || n == 0)
                return false;
            if (last && (t->flags & API_ROUTE_TAIL))
                return true; /* q is non-empty: the parameter takes the rest */
            p = close + 1;
            q += n;
            continue;
        }
        if (*p++ != *q++)
            return false;
    }
    return *q == '\0' || ((t->flags & API_ROUTE_SLASH) && strcmp(q, "/") == 0);
}

const struct api_route_def *api_route_lookup(const char *path)
{
    for (size_t i = 0; i < api_routes_count; i++)
        if (api_route_matches(&api_routes[i], path))
            return &api_routes[i];
    return NULL;
}

static const char *const api_method_names[] = {"GET", "POST", "PUT", "DELETE"};

unsigned api_method_bit(const char *method)
{
    for (size_t i = 0; i < ARRAY_SIZE(api_method_names); i++)
        if (strcmp(method, api_method_names[i]) == 0)
            return 1u << i;
    return 0;
}

void api_methods_format(unsigned bits, char ret[static 32])
{
    size_t n = 0;
    ret[0] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(api_method_names); i++)
        if (bits & (1u << i))
            n += (size_t)snprintf(ret + n, 32 - n, "%s%s", n ? ", " : "", api_method_names[i]);
}
