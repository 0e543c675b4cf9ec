// SPDX-License-Identifier: MIT
/*
 * routes — the table of every path and method `sandboxd serve` answers, in
 * OpenAPI's path syntax. api_route() looks each request up here before any
 * route runs: a path not in the table is 404 and a method not listed for it
 * 405 (with Allow), so nothing can be served that the table does not name.
 * The unit tests compare the table with the OpenAPI document served at
 * /openapi.json (docs/openapi.yaml) in both directions, and the e2e suite
 * sends every documented operation, so the document, the table and the
 * routes cannot drift apart. A new route: a row here, its paths in
 * docs/openapi.yaml, its code in api_route().
 */
#ifndef SANDBOXD_API_ROUTES_H
#define SANDBOXD_API_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

enum {
    API_GET = 1u << 0,
    API_POST = 1u << 1,
    API_PUT = 1u << 2,
    API_DELETE = 1u << 3,
};

enum {
    /* The last {parameter} may hold '/' (a file path, a memory key): it takes the rest. */
    API_ROUTE_TAIL = 1u << 0,
    /* The same path with one '/' at its end is this route too. */
    API_ROUTE_SLASH = 1u << 1,
};

struct api_route_def {
    const char *path; /* "/v1/sessions/{id}/files/{path}": literal segments and {parameters} */
    unsigned methods; /* API_GET | ... */
    unsigned flags;   /* API_ROUTE_* */
};

extern const struct api_route_def api_routes[];
extern const size_t api_routes_count;

/* The row whose template matches path (a parameter matches one non-empty segment, or with
 * API_ROUTE_TAIL the non-empty rest), or NULL. */
const struct api_route_def *api_route_lookup(const char *path);
/* API_GET... for an HTTP method, 0 for any other (HEAD, OPTIONS, ...). */
unsigned api_method_bit(const char *method);
/* The methods of bits, "GET, POST", for Allow (at most 32 bytes); ret has room for them. */
void api_methods_format(unsigned bits, char ret[static 32]);

#endif
