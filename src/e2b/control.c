// SPDX-License-Identifier: MIT
/*
 * control — E2B's control plane (spec/openapi.yml of e2b-dev/E2B, and what SDK 2.51's
 * sandbox/sandboxApi.ts sends):
 *   POST   /v2/sandboxes                    create: 201 Sandbox
 *   GET    /v2/sandboxes, /sandboxes        list: ListedSandbox[] (metadata, state, template
 *                                           filters; limit and nextToken pages)
 *   GET    /sandboxes/{id}                  SandboxDetail
 *   DELETE /sandboxes/{id}                  kill: 204
 *   POST   /sandboxes/{id}/timeout          {timeout}: the sandbox ends that many s from now: 204
 *   POST   /v2/sandboxes/{id}/connect       {timeout?}: 200 Sandbox (the timeout only grows)
 *   POST   /sandboxes/{id}/refreshes        {duration?}: the timeout only grows: 204
 *   GET    /sandboxes/{id}/metrics          [] (no samples are kept)
 *   GET    /health                          200
 * Pausing, resuming, snapshots, forks and network updates are refused with 501. Errors are
 * E2B's {"code", "message"}; another tenant's sandbox is an unknown one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/e2b_int.h"
#include "pool/profile.h"
#include "session/session.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/randid.h"

#define E2B_TEMPLATE_BASE "base"
#define E2B_LIST_DEFAULT  100 /* E2B's default page */
#define E2B_LIST_MAX      1000

/* The templates of E2B's code interpreter, served by the code-interpreter profile (the
 * data-science stack and IPython's formatters imported, pool/profile.c). */
static const char *const e2b_interp_templates[] = {"code-interpreter-v1", "code-interpreter",
                                                   "code-interpreter-beta"};

/* A 400 of the control plane. */
#define e2b_bad(reply, ...)                                                                        \
    e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INVALID, NULL, __VA_ARGS__)

/* The warm pool profile serving template (NULL: the sessions' own pool), or false when the
 * template is not served (reply filled with the list of those that are). */
static bool e2b_template_profile(struct e2b *e, const char *template_id, const char **ret,
                                 struct http_reply *reply)
{
    *ret = NULL;
    if (strcmp(template_id, E2B_TEMPLATE_BASE) == 0)
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(e2b_interp_templates); i++)
        if (strcmp(template_id, e2b_interp_templates[i]) == 0) {
            /* The code interpreter's profile when this host has its libraries; else the
             * data-science one; else the sessions' pool (pandas is imported when used). */
            const char *names[] = {PROFILE_CODE_INTERPRETER, PROFILE_DATASCIENCE};
            struct pool *pool;
            uint64_t mb;
            for (size_t k = 0; k < ARRAY_SIZE(names); k++)
                if (profiles_lookup(e->opt.profiles, names[k], &pool, &mb) == 0) {
                    *ret = names[k];
                    break;
                }
            return true;
        }
    struct pool *pool;
    uint64_t mb;
    if (profile_name_ok(template_id) &&
        profiles_lookup(e->opt.profiles, template_id, &pool, &mb) == 0) {
        *ret = template_id; /* an operator's --profile is a template of its own name */
        return true;
    }
    char served[512] = E2B_TEMPLATE_BASE ", code-interpreter-v1 (also code-interpreter)";
    size_t n = strlen(served);
    json_t *profiles = profiles_names(e->opt.profiles), *v;
    size_t i;
    bool cut = false;
    json_array_foreach(profiles, i, v)
    {
        const char *name = json_string_value(v);
        if (strcmp(name, PROFILE_CODE_INTERPRETER) == 0)
            continue;
        if (cut || n + strlen(name) + 8 >= sizeof(served))
            cut = true; /* the rest: ", ..." below, rather than a name cut off */
        else
            n += (size_t)snprintf(served + n, sizeof(served) - n, ", %s", name);
    }
    if (cut)
        snprintf(served + n, sizeof(served) - n, ", ...");
    json_decref(profiles);
    e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INVALID, NULL,
                   "template '%.64s' is not served by sandboxd; its templates are: %s (Python "
                   "with a shell toolbox; docs/E2B.md)",
                   template_id, served);
    return false;
}

/* An object whose members are all strings (envVars, metadata), or absent. */
static bool e2b_string_map(json_t *v)
{
    if (!v || json_is_null(v))
        return true;
    if (!json_is_object(v))
        return false;
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        if (!json_is_string(x) || !*k || strchr(k, '=') || strlen(k) > 256)
            return false;
    }
    return true;
}

/* sandboxd's network policy ({"allow": [...]}) for E2B's fields, or NULL for none. E2B lets a
 * sandbox out by default; sandboxd does not: only allow_internet_access (all that the
 * operator's --egress-allow permits) or network.allowOut (those hosts) open it. */
static json_t *e2b_network(struct e2b *e, json_t *body, struct http_reply *reply, bool *ret_bad)
{
    *ret_bad = false;
    json_t *internet = json_object_get(body, "allow_internet_access");
    json_t *net = json_object_get(body, "network");
    json_t *allow = json_object_get(net, "allowOut");
    if ((internet && !json_is_boolean(internet) && !json_is_null(internet)) ||
        (net && !json_is_object(net) && !json_is_null(net)) ||
        (allow && !json_is_array(allow) && !json_is_null(allow))) {
        e2b_bad(reply,
                "%s: allow_internet_access is a boolean, network an object and "
                "network.allowOut an array of hosts",
                "network");
        *ret_bad = true;
        return NULL;
    }
    /* E2B's ALL_TRAFFIC ("0.0.0.0/0") in allowOut is all that is allowed here. */
    bool all = false;
    size_t i;
    json_t *v;
    json_array_foreach(allow, i, v)
    {
        if (strcmp(json_string_value(v) ?: "", "0.0.0.0/0") == 0)
            all = true;
    }
    json_t *policy;
    if (json_array_size(allow) && !all) {
        policy = json_pack("{s:O}", "allow", allow);
    } else if (!json_is_true(internet) && !all) {
        return NULL;
    } else {
        json_t *ceiling = sessions_network_ceiling(e->opt.sessions);
        if (ceiling && !json_array_size(ceiling)) {
            json_decref(ceiling);
            e2b_bad(reply,
                    "%s: this sandboxd lets sandboxes reach nothing (its operator's "
                    "--egress-allow is empty); sandboxes have no network",
                    "allow_internet_access");
            *ret_bad = true;
            return NULL;
        }
        policy = json_pack("{s:o}", "allow", ceiling);
    }
    if (!policy) { /* out of memory: never a sandbox without the network it asked for */
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INTERNAL, NULL, "out of memory");
        *ret_bad = true;
    }
    return policy;
}

/* What sandboxd does not do, refused by name rather than ignored. */
static const char *e2b_unsupported(json_t *body)
{
    if (json_is_true(json_object_get(body, "autoPause")))
        return "autoPause: sandboxd does not pause sandboxes; they end at their timeout";
    if (json_object_size(json_object_get(body, "mcp")))
        return "mcp: sandboxd does not run E2B's MCP gateway in sandboxes (it is an MCP client "
               "and server itself: docs/MCP.md)";
    if (json_array_size(json_object_get(body, "volumeMounts")))
        return "volumeMounts: sandboxd mounts no volumes into sandboxes";
    if (json_is_true(json_object_get(json_object_get(body, "autoResume"), "enabled")))
        return "autoResume: sandboxd does not pause sandboxes";
    return NULL;
}

static void e2b_create(struct e2b *e, const struct http_request *req, struct tenant *tenant,
                       struct http_reply *reply)
{
    json_t *body = e2b_json_body(req, E2B_SURFACE_API, reply);
    if (!body)
        return;
    const char *template_id = json_string_value(json_object_get(body, "templateID"));
    json_t *timeout = json_object_get(body, "timeout");
    json_t *envs = json_object_get(body, "envVars");
    json_t *metadata = json_object_get(body, "metadata");
    const char *unsupported = e2b_unsupported(body);
    const char *profile = NULL;
    json_t *network = NULL, *info = NULL, *init = NULL;
    struct e2b_sandbox *sb = NULL;
    bool bad = false;
    if (!template_id || !*template_id || strlen(template_id) > 128) {
        e2b_bad(reply, "%s: is required (a template name or ID)", "templateID");
        goto out;
    }
    if (timeout && !json_is_null(timeout) &&
        (!json_is_integer(timeout) || json_integer_value(timeout) < 0)) {
        e2b_bad(reply, "%s: seconds, an integer of at least 0", "timeout");
        goto out;
    }
    int64_t seconds =
        json_integer_value(timeout) > 0 ? json_integer_value(timeout) : e->opt.default_timeout_s;
    if (seconds > e->opt.max_timeout_s) {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INVALID, NULL,
                       "Timeout cannot be greater than %lld seconds on this sandboxd",
                       (long long)e->opt.max_timeout_s);
        goto out;
    }
    if (!e2b_string_map(envs) || !e2b_string_map(metadata)) {
        e2b_bad(reply, "%s: envVars and metadata are objects of strings", "envVars");
        goto out;
    }
    if (unsupported) {
        e2b_bad(reply, "%s", unsupported);
        goto out;
    }
    if (!e2b_template_profile(e, template_id, &profile, reply))
        goto out;
    network = e2b_network(e, body, reply, &bad);
    if (bad)
        goto out;
    if (e2b_stopping(e)) {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_UNAVAILABLE, NULL,
                       "sandboxd is shutting down and takes no new sandboxes; retry");
        goto out;
    }
    init =
        json_pack("{s:o, s:s}", "envVars", json_is_object(envs) ? json_incref(envs) : json_object(),
                  "templateID", template_id);
    if (!init) {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INTERNAL, NULL, "out of memory");
        goto out;
    }
    struct session_create c = {
        .tenant = tenant,
        .profile = profile,
        .network = network,
        .agent = "e2b",
        .agent_init = init,
    };
    struct sbx_error err = {0};
    if (sessions_create(e->opt.sessions, &c, &info, &err) < 0) {
        e2b_reply_error(reply, E2B_SURFACE_API, &err);
        goto out;
    }
    const char *id = json_string_value(json_object_get(info, "sessionId"));
    sb = calloc(1, sizeof(*sb));
    if (!sb || !id || strlen(id) > E2B_ID_MAX || !(sb->template_id = strdup(template_id)) ||
        randid_hex(sb->token, sizeof(sb->token), E2B_TOKEN_BYTES) < 0) {
        if (id)
            (void)sessions_end(e->opt.sessions, id, "its sandbox could not be set up");
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INTERNAL, NULL, "out of resources");
        goto out;
    }
    snprintf(sb->id, sizeof(sb->id), "%s", id);
    sb->e = e;
    sb->tenant = tenant;
    tenant_token_hash(sb->token, strlen(sb->token), sb->token_hash);
    sb->metadata = json_is_object(metadata) ? json_incref(metadata) : json_object();
    if (network)
        sb->network = json_pack("{s:O}", "allowOut", json_object_get(network, "allow"));
    if (!sb->metadata || (network && !sb->network)) {
        (void)sessions_end(e->opt.sessions, id, "its sandbox could not be set up");
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INTERNAL, NULL, "out of memory");
        goto out;
    }
    sb->memory_mb = (uint64_t)json_integer_value(json_object_get(info, "memoryMb"));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    sb->started_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    sb->end_us = clock_mono_us() + seconds * 1000000;
    int r = e2b_sandbox_start(e, sb);
    if (r < 0) {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INTERNAL, NULL,
                       "the sandbox could not start: %s", strerror(-r));
        goto out;
    }
    e2b_reply_json(reply, E2B_SURFACE_API, 201, e2b_sandbox_json(sb));
    log_info("e2b sandbox %s created (template %s, timeout %lld s, ready in %.1f ms, %s)", sb->id,
             template_id, (long long)seconds, json_real_value(json_object_get(info, "startMs")),
             json_is_true(json_object_get(info, "poolHit")) ? "a warm interpreter"
                                                            : "a fresh interpreter");
    sb = NULL; /* the table's now */
out:
    e2b_sandbox_free(sb);
    json_decref(info);
    json_decref(init);
    json_decref(network);
    json_decref(body);
}

/* ---- one sandbox --------------------------------------------------------------------------- */

static void e2b_missing(struct e2b *e, const char *id, struct http_reply *reply)
{
    struct sbx_error err = {0};
    e2b_not_found(e, id, &err);
    e2b_reply_error(reply, E2B_SURFACE_API, &err);
}

/* The "timeout" (or "duration") member of body: seconds >= 0 into *ret; false with reply
 * filled when it is malformed; *ret = -1 when absent. */
static bool e2b_seconds(json_t *body, const char *key, int64_t *ret, struct http_reply *reply)
{
    json_t *v = json_object_get(body, key);
    *ret = -1;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        e2b_bad(reply, "%s: seconds, an integer of at least 0", key);
        return false;
    }
    *ret = json_integer_value(v);
    return true;
}

static void e2b_one(struct e2b *e, const struct http_request *req, const char *id,
                    const char *action, struct tenant *tenant, struct http_reply *reply)
{
    const char *m = req->method;
    bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
    struct e2b_sandbox *sb = e2b_sandbox_get(e, id, true, tenant);
    if (!sb) {
        e2b_missing(e, id, reply);
        return;
    }
    if (!*action && strcmp(m, "DELETE") == 0) {
        e2b_sandbox_end(sb, "it was killed (DELETE /sandboxes/ID)");
        reply->status = 204;
    } else if (!*action && get) {
        e2b_reply_json(reply, E2B_SURFACE_API, 200, e2b_sandbox_detail(sb, false));
    } else if (post && (strcmp(action, "/timeout") == 0 || strcmp(action, "/connect") == 0 ||
                        strcmp(action, "/refreshes") == 0)) {
        json_t *body = e2b_json_body(req, E2B_SURFACE_API, reply);
        int64_t s;
        bool connect = strcmp(action, "/connect") == 0;
        bool timeout = strcmp(action, "/timeout") == 0;
        if (body && e2b_seconds(body, timeout || connect ? "timeout" : "duration", &s, reply)) {
            if (timeout && s < 0)
                e2b_bad(reply, "%s: is required (seconds from now)", "timeout");
            else {
                if (s >= 0)
                    e2b_sandbox_set_timeout(sb, s, !timeout); /* connect only extends */
                if (connect)
                    e2b_reply_json(reply, E2B_SURFACE_API, 200, e2b_sandbox_json(sb));
                else
                    reply->status = 204;
            }
        }
        json_decref(body);
    } else if (get && strcmp(action, "/metrics") == 0) {
        e2b_reply_json(reply, E2B_SURFACE_API, 200, json_array());
    } else if (post && (strcmp(action, "/pause") == 0 || strcmp(action, "/resume") == 0 ||
                        strcmp(action, "/snapshots") == 0 || strcmp(action, "/fork") == 0)) {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INVALID, "unimplemented",
                       "sandboxd does not pause, snapshot or fork sandboxes (%s); a sandbox "
                       "runs until its timeout or kill",
                       action + 1);
    } else if (strcmp(action, "/network") == 0) {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INVALID, "unimplemented",
                       "a sandbox's network is fixed when it is created (sandboxd's egress "
                       "policy, docs/NETWORK.md)");
    } else {
        e2b_reply_status(reply, E2B_SURFACE_API, 404, "no such route");
    }
    e2b_sandbox_put(sb);
}

/* ---- listing ------------------------------------------------------------------------------- */

/* Does sb's metadata hold every pair of query (E2B's "k=v&k2=v2", each part percent-encoded)? */
static bool e2b_metadata_match(const json_t *metadata, const char *query)
{
    if (!query || !*query)
        return true;
    char *copy = strdup(query);
    if (!copy)
        return false;
    bool ok = true;
    char *save = NULL;
    for (char *pair = strtok_r(copy, "&", &save); pair && ok; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq) {
            ok = false;
            break;
        }
        *eq = '\0';
        /* Each side was percent-encoded once more by the SDK: decode it. */
        for (char *s = pair; s; s = s == pair ? eq + 1 : NULL) {
            char *w = s;
            for (const char *r = s; *r; r++) {
                unsigned v;
                if (*r == '%' && r[1] && r[2] && sscanf(r + 1, "%2x", &v) == 1) {
                    *w++ = (char)v;
                    r += 2;
                } else {
                    *w++ = *r == '+' ? ' ' : *r;
                }
            }
            *w = '\0';
        }
        const char *have = json_string_value(json_object_get(metadata, pair));
        ok = have && strcmp(have, eq + 1) == 0;
    }
    free(copy);
    return ok;
}

static void e2b_list(struct e2b *e, const struct http_request *req, struct tenant *tenant,
                     struct http_reply *reply)
{
    const char *state = http_query(req, "state"), *template_id = http_query(req, "template");
    const char *metadata = http_query(req, "metadata"), *order = http_query(req, "order");
    const char *limit_s = http_query(req, "limit"), *next = http_query(req, "nextToken");
    long limit = limit_s ? strtol(limit_s, NULL, 10) : E2B_LIST_DEFAULT;
    long skip = next ? strtol(next, NULL, 10) : 0;
    if (limit <= 0 || limit > E2B_LIST_MAX || skip < 0) {
        e2b_bad(reply, "%s: limit is 1 to 1000, nextToken what an earlier page gave", "limit");
        return;
    }
    struct e2b_sandbox **v = NULL;
    size_t n = 0;
    if (e2b_sandbox_list(e, tenant, &v, &n) < 0) {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_INTERNAL, NULL, "out of memory");
        return;
    }
    bool ascending = order && strcmp(order, "asc") == 0;
    /* Every sandbox here is running: a filter on states without "running" lists none. */
    bool running = !state || strstr(state, "running");
    json_t *list = json_array();
    long matched = 0;
    for (size_t i = 0; i < n && list; i++) {
        struct e2b_sandbox *sb = v[ascending ? n - 1 - i : i];
        if (running && (!template_id || strcmp(template_id, sb->template_id) == 0) &&
            e2b_metadata_match(sb->metadata, metadata) && matched++ >= skip &&
            (long)json_array_size(list) < limit &&
            json_array_append_new(list, e2b_sandbox_detail(sb, true)) < 0) {
            json_decref(list); /* a listing that leaves a sandbox out would lie */
            list = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        e2b_sandbox_put(v[i]);
    free(v);
    e2b_reply_json(reply, E2B_SURFACE_API, 200, list);
    if (!list)
        return;
    if (matched > skip + limit) {
        char token[24];
        snprintf(token, sizeof(token), "%ld", skip + limit);
        http_reply_header(reply, "X-Next-Token", token);
    }
}

/* The id of "/sandboxes/ID[/action]" into id (E2B_ID_MAX + 1), the rest into *ret_action;
 * false when it cannot be a sandbox id. */
static bool e2b_split_id(const char *rest, char *id, const char **ret_action)
{
    size_t n = strcspn(rest, "/");
    if (n == 0 || n > E2B_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = rest[i];
        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
            c != '.' && c != '-' && c != '_')
            return false;
    }
    memcpy(id, rest, n);
    id[n] = '\0';
    *ret_action = rest + n;
    return true;
}

void e2b_control_route(struct e2b *e, const struct http_request *req, const char *path,
                       struct tenant *tenant, struct http_reply *reply)
{
    const char *m = req->method;
    bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
    char id[E2B_ID_MAX + 1];
    const char *action = NULL;
    if (strcmp(path, "/v2/sandboxes") == 0 || strcmp(path, "/sandboxes") == 0) {
        if (post)
            e2b_create(e, req, tenant, reply);
        else if (get)
            e2b_list(e, req, tenant, reply);
        else
            e2b_reply_status(reply, E2B_SURFACE_API, 405, "use GET or POST");
    } else if (strcmp(path, "/health") == 0 && get) {
        e2b_reply_json(reply, E2B_SURFACE_API, 200, json_pack("{s:s}", "status", "ok"));
    } else if (strncmp(path, "/v2/sandboxes/", 14) == 0 && e2b_split_id(path + 14, id, &action) &&
               strcmp(action, "/connect") == 0) {
        e2b_one(e, req, id, action, tenant, reply);
    } else if (strncmp(path, "/sandboxes/", 11) == 0 && e2b_split_id(path + 11, id, &action)) {
        e2b_one(e, req, id, action, tenant, reply);
    } else if (strncmp(path, "/sandboxes/", 11) == 0 || strncmp(path, "/v2/sandboxes/", 14) == 0) {
        struct sbx_error err = {0};
        sbx_error_set(&err, SBX_ERR_NOT_FOUND, NULL, NULL, "sandbox not found");
        e2b_reply_error(reply, E2B_SURFACE_API, &err);
    } else {
        e2b_reply_fail(reply, E2B_SURFACE_API, SBX_ERR_NOT_FOUND, NULL,
                       "%s %.200s is not part of the E2B API sandboxd serves (docs/E2B.md)", m,
                       path);
    }
}
