// SPDX-License-Identifier: MIT
/* Unit tests: api/routes (the table of what `sandboxd serve` answers, and its matcher), held
 * against the OpenAPI document compiled into the binary (web/, /openapi.json): a route
 * served but not documented, or documented but not in the table, fails here. Also the
 * compiled-in files themselves, and api/web's answers (CSP, ETag, 304). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/routes.h"
#include "api/web.h"
#include "web/web.h"

static const char *const methods[] = {"get", "post", "put", "delete"};

static json_t *load_openapi(void)
{
    const struct web_asset *a = web_asset_find("/openapi.json");
    assert_non_null(a);
    json_error_t err;
    json_t *doc = json_loadb((const char *)a->data, a->len, 0, &err);
    if (!doc)
        fail_msg("/openapi.json is not JSON: %s", err.text);
    return doc;
}

/* Is the parameter name of the path item marked x-sandboxd-rest (it takes the rest of the
 * path)? Parameters are declared on the path item or on its operations. */
static bool doc_param_rest(json_t *item, const char *name)
{
    const char *key;
    json_t *v;
    bool rest = false;
    json_object_foreach(item, key, v)
    {
        json_t *params = strcmp(key, "parameters") == 0 ? v : json_object_get(v, "parameters");
        size_t i;
        json_t *p;
        json_array_foreach(params, i, p)
        {
            const char *n = json_string_value(json_object_get(p, "name"));
            if (n && strcmp(n, name) == 0 &&
                strcmp(json_string_value(json_object_get(p, "in")), "path") == 0)
                rest = rest || json_is_true(json_object_get(p, "x-sandboxd-rest"));
        }
    }
    return rest;
}

/* API_ROUTE_TAIL in the table is x-sandboxd-rest on the last parameter in the document. */
static void tails_are_documented(void **state)
{
    json_t *doc = load_openapi();
    for (size_t i = 0; i < api_routes_count; i++) {
        const struct api_route_def *r = &api_routes[i];
        json_t *item = json_object_get(json_object_get(doc, "paths"), r->path);
        const char *open = strrchr(r->path, '{');
        char name[64] = "";
        if (open && r->path[strlen(r->path) - 1] == '}')
            snprintf(name, sizeof(name), "%.*s", (int)(strlen(open) - 2), open + 1);
        bool tail = (r->flags & API_ROUTE_TAIL) != 0;
        if (tail != (name[0] && doc_param_rest(item, name)))
            fail_msg("%s: API_ROUTE_TAIL is %d but x-sandboxd-rest of {%s} says otherwise", r->path,
                     tail, name);
    }
    json_decref(doc);
}

static void every_route_is_documented(void **state)
{
    json_t *doc = load_openapi();
    json_t *paths = json_object_get(doc, "paths");
    assert_true(json_is_object(paths));
    for (size_t i = 0; i < api_routes_count; i++) {
        const struct api_route_def *r = &api_routes[i];
        json_t *item = json_object_get(paths, r->path);
        if (!item)
            fail_msg("%s is served (api/routes.c) but not in docs/openapi.yaml", r->path);
        for (size_t m = 0; m < 4; m++)
            if ((r->methods & (1u << m)) && !json_object_get(item, methods[m]))
                fail_msg("%s %s is served but not documented", methods[m], r->path);
    }
    json_decref(doc);
}

static void every_documented_route_is_served(void **state)
{
    json_t *doc = load_openapi();
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        const struct api_route_def *r = NULL;
        for (size_t i = 0; i < api_routes_count; i++)
            if (strcmp(api_routes[i].path, path) == 0)
                r = &api_routes[i];
        if (!r)
            fail_msg("%s is documented but not in the route table (api/routes.c)", path);
        const char *key;
        json_t *op;
        json_object_foreach(item, key, op)
        {
            if (strcmp(key, "parameters") == 0 || strcmp(key, "summary") == 0 ||
                strcmp(key, "description") == 0)
                continue;
            unsigned bit = 0;
            for (size_t m = 0; m < 4; m++)
                if (strcmp(key, methods[m]) == 0)
                    bit = 1u << m;
            if (!bit || !(r->methods & bit))
                fail_msg("%s %s is documented but not served", key, path);
        }
    }
    json_decref(doc);
}

static void lookup_matches_templates(void **state)
{
    const struct {
        const char *path;
        const char *route; /* NULL: no route */
    } cases[] = {
        {"/execute", "/execute"},
        {"/execute/", NULL},
        {"/executes", NULL},
        {"/v1/sessions", "/v1/sessions"},
        {"/v1/sessions/", "/v1/sessions"}, /* API_ROUTE_SLASH: as before the table */
        {"/v1/sessions/vm.abc", "/v1/sessions/{id}"},
        {"/v1/sessions/vm.abc/", NULL},
        {"/v1/sessions//execute", NULL}, /* a parameter is never empty */
        {"/v1/sessions/vm.abc/execute", "/v1/sessions/{id}/execute"},
        {"/v1/sessions/vm.abc/files", "/v1/sessions/{id}/files"},
        {"/v1/sessions/vm.abc/files/a.txt", "/v1/sessions/{id}/files/{path}"},
        {"/v1/sessions/vm.abc/files/a/b/c.txt", "/v1/sessions/{id}/files/{path}"},
        {"/v1/sessions/vm.abc/files/", NULL},
        {"/v1/sessions/vm.abc/nothing", NULL},
        {"/v1/workspaces/w1/memories/a/b", "/v1/workspaces/{name}/memories/{key}"},
        {"/v1/workspaces/w1/tools", "/v1/workspaces/{name}/tools"},
        {"/v1/workspaces/w1", NULL},
        {"/v1/session-options", "/v1/session-options"},
        {"/ui", "/ui"},
        {"/ui/", "/ui"},
        {"/ui/app.js", "/ui/{asset}"},
        {"/ui/a/b.js", NULL}, /* {asset} is one segment */
        {"/uix", NULL},
        {"/openapi.json", "/openapi.json"},
        {"/e2b/v2/sandboxes", "/e2b/{path}"}, /* E2B's paths, whatever their depth */
        {"/e2b/process.Process/Start", "/e2b/{path}"},
        {"/e2b/files", "/e2b/{path}"},
        {"/e2b", NULL},
        {"/e2b/", NULL},
        {"/e2bx/files", NULL},
        {"/", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct api_route_def *r = api_route_lookup(cases[i].path);
        if (!cases[i].route && r)
            fail_msg("%s matched %s", cases[i].path, r->path);
        if (cases[i].route && (!r || strcmp(r->path, cases[i].route) != 0))
            fail_msg("%s: expected %s, got %s", cases[i].path, cases[i].route,
                     r ? r->path : "no route");
    }
}

static void methods_and_allow(void **state)
{
    assert_int_equal(api_method_bit("GET"), API_GET);
    assert_int_equal(api_method_bit("DELETE"), API_DELETE);
    assert_int_equal(api_method_bit("HEAD"), 0);
    assert_int_equal(api_method_bit("get"), 0); /* methods are case-sensitive (RFC 9110) */
    char allow[32];
    api_methods_format(API_GET | API_PUT | API_DELETE, allow);
    assert_string_equal(allow, "GET, PUT, DELETE");
    api_methods_format(API_POST | API_DELETE, allow); /* /mcp's, as it always answered */
    assert_string_equal(allow, "POST, DELETE");
    api_methods_format(API_GET | API_POST | API_PUT | API_DELETE, allow);
    assert_string_equal(allow, "GET, POST, PUT, DELETE");
}

static void assets_are_sorted_typed_and_found(void **state)
{
    assert_true(web_assets_count >= 3);
    for (size_t i = 0; i < web_assets_count; i++) {
        const struct web_asset *a = &web_assets[i];
        assert_true(a->len > 0);
        assert_non_null(a->content_type);
        assert_int_equal(a->etag[0], '"');
        if (i)
            assert_true(strcmp(web_assets[i - 1].path, a->path) < 0);
        assert_ptr_equal(web_asset_find(a->path), a);
        /* Every asset is served by a route of the table. */
        const struct api_route_def *r = api_route_lookup(a->path);
        if (!r)
            fail_msg("asset %s has no route", a->path);
    }
    assert_non_null(web_asset_find("/ui"));
    assert_string_equal(web_asset_find("/ui")->content_type, "text/html; charset=utf-8");
    assert_null(web_asset_find("/ui/"));
    assert_null(web_asset_find("/ui/nothing.js"));
    assert_null(web_asset_find("/"));
}

static const char *header(const struct http_reply *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    return NULL;
}

/* api_web_route() with no MHD connection (no request headers: no If-None-Match; the 304 is
 * tests/e2e/test_openapi.py's). */
static void web_route_answers_with_csp(void **state)
{
    struct http_request req = {.method = "GET", .path = "/ui/"};
    struct http_reply r = {0};
    api_web_route(&req, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/html; charset=utf-8");
    assert_int_equal(r.text_len, web_asset_find("/ui")->len);
    assert_string_equal(header(&r, "Content-Security-Policy"), API_WEB_CSP);
    assert_non_null(strstr(API_WEB_CSP, "default-src 'self'"));
    assert_non_null(strstr(API_WEB_CSP, "frame-ancestors 'none'"));
    assert_string_equal(header(&r, "X-Frame-Options"), "DENY");
    assert_string_equal(header(&r, "ETag"), web_asset_find("/ui")->etag);
    http_reply_done(&r);

    struct http_request missing = {.method = "GET", .path = "/ui/nothing.js"};
    struct http_reply r2 = {0};
    api_web_route(&missing, &r2);
    assert_int_equal(r2.status, 404);
    assert_null(header(&r2, "Content-Security-Policy"));
    http_reply_done(&r2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_route_is_documented),
        cmocka_unit_test(every_documented_route_is_served),
        cmocka_unit_test(tails_are_documented),
        cmocka_unit_test(lookup_matches_templates),
        cmocka_unit_test(methods_and_allow),
        cmocka_unit_test(assets_are_sorted_typed_and_found),
        cmocka_unit_test(web_route_answers_with_csp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
