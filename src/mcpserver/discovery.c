// SPDX-License-Identifier: MIT
/*
 * discovery — the MCP server's tools for finding tools without loading
 * every schema: list_servers (the configured MCP servers the sandboxed code
 * may call, optionally with their tools) and search_tool_docs (tools ranked
 * by the words of a query, each with the Python call that reaches it).
 * Neither starts a server on its own: they read the tools of servers that
 * are running already, and of those the call names in `servers` — looking
 * around must not run every configured program.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcpclient/alias.h"
#include "mcpclient/registry.h"
#include "mcpserver/server_int.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/jdump.h"
#include "util/log.h"

#define SRV_MAX_QUERY   1000 /* bytes of a search_tool_docs query */
#define SRV_NOT_STARTED "not running; name it in `servers` to start it and read its tools"

/* The `servers` argument: NULL with *ret_named an array (new reference, [] when absent), or a
 * tool error naming what is wrong. */
static json_t *srv_named(struct mcp_server_conn *c, const char *tool, json_t *args,
                         json_t **ret_named)
{
    json_t *v = json_object_get(args, "servers");
    *ret_named = NULL;
    if (!v || json_is_null(v)) {
        *ret_named = json_array();
        return NULL;
    }
    if (!json_is_array(v))
        return srv_tool_error(c, "%s: servers: an array of server names", tool);
    char *unknown = mcp_registry_check_names(c->srv->registry, v);
    if (unknown) {
        json_t *e = srv_tool_error(c, "%s: %s", tool, unknown);
        free(unknown);
        return e;
    }
    *ret_named = json_incref(v);
    return NULL;
}

/* May this call read the tools of server d (from mcp_registry_describe)? */
static bool srv_may_read(json_t *d, json_t *named)
{
    if (json_is_true(json_object_get(d, "connected")))
        return true;
    const char *name = json_string_value(json_object_get(d, "name"));
    size_t i;
    json_t *v;
    json_array_foreach(named, i, v)
    {
        if (name && strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

json_t *srv_list_servers(struct mcp_server_conn *c, json_t *args, json_t *token,
                         const struct mcp_server_out *out, struct srv_call *call)
{
    (void)token, (void)out;
    struct mcp_server *s = c->srv;
    static const char *const allowed[] = {"tools", "servers", NULL};
    json_t *want = json_object_get(args, "tools");
    json_t *bad = srv_check_args(c, srv_call_tool(call), args, allowed);
    if (bad)
        return bad;
    if (want && !json_is_boolean(want) && !json_is_null(want))
        return srv_tool_error(c, "%s: tools: true or false", srv_call_tool(call));
    json_t *named = NULL;
    if ((bad = srv_named(c, srv_call_tool(call), args, &named)))
        return bad;
    json_t *servers = mcp_registry_describe(s->registry);
    mcp_alias_tools(servers); /* the aliases a session gives them */
    struct buf b;
    buf_init(&b, 4u << 20);
    size_t i;
    json_t *d;
    json_array_foreach(servers, i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        const char *desc = json_string_value(json_object_get(d, "description"));
        (void)buf_printf(&b, "%s (%s%s) — Python: mcp_%s%s%s\n", name,
                         json_string_value(json_object_get(d, "transport")),
                         json_is_true(json_object_get(d, "connected")) ? ", running" : "",
                         json_string_value(json_object_get(d, "alias")) ?: "",
                         desc && *desc ? "; " : "", desc ? desc : "");
        if (!json_is_true(want))
            continue;
        if (!srv_may_read(d, named)) {
            (void)buf_printf(&b, "  tools: %s\n", SRV_NOT_STARTED);
            json_object_set_new(d, "notStarted", json_true());
            continue;
        }
        json_t *tools = NULL;
        struct sbx_error me = {0};
        if (mcp_registry_tools(s->registry, name, s->opt.lookup_timeout_ms, &tools, &me) < 0) {
            (void)buf_printf(&b, "  unavailable: %s\n", me.message ? me.message : "failed");
            json_object_set_new(d, "error", json_string(me.message ? me.message : "failed"));
            sbx_error_clear(&me);
            continue;
        }
        json_t *names = json_array();
        size_t k;
        json_t *t;
        json_array_foreach(tools, k, t)
        {
            json_t *tn = json_object_get(t, "name");
            if (json_is_string(tn))
                json_array_append(names, tn);
        }
        char *list = srv_names_text(names);
        (void)buf_printf(&b, "  tools: %s\n", list ? list : "?");
        free(list);
        json_object_set_new(d, "tools", names);
        json_decref(tools);
    }
    if (!json_array_size(servers))
        (void)buf_appends(&b, "No MCP servers are configured: start sandboxd with --mcp-config "
                              "FILE (Claude Desktop format).");
    else
        (void)buf_appends(&b, "Pass names in run_python's `servers` to use them from code; "
                              "search_tool_docs finds their tools.");
    json_t *st = json_pack("{s:o}", "servers", servers);
    if (!st) {
        buf_free(&b);
        json_decref(named);
        return srv_tool_error(c, "out of memory");
    }
    char *text = s->opt.output_json ? jdump(st, JSON_COMPACT, NULL) : buf_take(&b, NULL);
    json_t *r = srv_tool_result(c, text ? text : "", st, false);
    free(text);
    buf_free(&b);
    json_decref(named);
    return r;
}

/* How often the words of the query occur in a tool, name matches weighing more (the same
 * scoring as the session runtime's search_tool_docs). */
static long srv_score(json_t *words, const char *name, const char *desc)
{
    long score = 0;
    size_t i;
    json_t *w;
    json_array_foreach(words, i, w)
    {
        const char *word = json_string_value(w);
        for (int pass = 0; pass < 2; pass++) {
            const char *hay = pass ? desc : name;
            for (const char *p = hay; p && (p = strcasestr(p, word)); p += strlen(word))
                score++;
        }
        if (strcasestr(name, word))
            score += 3;
    }
    return score;
}

struct srv_hit {
    long score;
    const char *server;
    json_t *tool; /* borrowed from the server's tools */
};

static int srv_cmp_hit(const void *a, const void *b)
{
    const struct srv_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    int r = strcmp(x->server, y->server);
    return r ? r
             : strcmp(json_string_value(json_object_get(x->tool, "name")),
                      json_string_value(json_object_get(y->tool, "name")));
}

/* "a: number (required) — desc; b: ..." and "a=..., b=..." for one input schema. */
static void srv_params_text(json_t *schema, struct buf *params, struct buf *call)
{
    json_t *props = json_object_get(schema, "properties");
    json_t *req = json_object_get(schema, "required");
    const char *key;
    json_t *p;
    unsigned n = 0;
    json_object_foreach(props, key, p)
    {
        if (n++ >= 32) {
            (void)buf_appends(params, "; ...");
            break;
        }
        bool required = false;
        size_t i;
        json_t *r;
        json_array_foreach(req, i, r)
        {
            required |= json_is_string(r) && strcmp(json_string_value(r), key) == 0;
        }
        json_t *type = json_object_get(p, "type");
        char *types = json_is_array(type) ? srv_names_text(type) : NULL;
        const char *tname = json_is_string(type) ? json_string_value(type) : types;
        const char *desc = json_string_value(json_object_get(p, "description"));
        (void)buf_printf(params, "%s%s: %s%s%s%.200s", n > 1 ? "; " : "", key,
                         tname ? tname : "any", required ? ", required" : "",
                         desc && *desc ? " — " : "", desc ? desc : "");
        free(types);
        (void)buf_printf(call, "%s%s=...", n > 1 ? ", " : "", key);
    }
}

/* The docs of the first n hits as the sandbox renders them ({server: {tool: text}}, new
 * reference), or NULL when they cannot be rendered (the search answers without them). */
static json_t *srv_hit_docs(struct mcp_server_conn *c, json_t *described,
                            const struct srv_hit *hits, size_t n)
{
    if (!n)
        return NULL;
    json_t *by_server = json_object();
    for (size_t h = 0; h < n; h++) {
        json_t *info = json_object_get(by_server, hits[h].server);
        if (!info) {
            const char *alias = mcp_alias_of(described, hits[h].server);
            info = json_pack("{s:s, s:s, s:[]}", "name", hits[h].server, "alias",
                             alias ? alias : hits[h].server, "tools");
            json_object_set_new(by_server, hits[h].server, info);
        }
        json_array_append(json_object_get(info, "tools"), hits[h].tool);
    }
    json_t *servers = json_array(), *docs = NULL;
    const char *key;
    json_t *info;
    json_object_foreach(by_server, key, info)
    {
        json_array_append(servers, info);
    }
    struct sbx_error err;
    if (sessions_tool_docs(c->srv->sessions, servers, "summary", &docs, &err) < 0) {
        log_warn("mcp: search_tool_docs answers without docs: %s",
                 err.message ? err.message : "failed");
        sbx_error_clear(&err);
        docs = NULL;
    }
    json_decref(servers);
    json_decref(by_server);
    return docs;
}

/* The query's words: runs of letters, digits and '_' (bytes of UTF-8 characters count as
 * letters), at most 32. */
static json_t *srv_query_words(const char *p)
{
    json_t *words = json_array();
    while (*p && json_array_size(words) < 32) {
        while (*p && !(isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80))
            p++;
        const char *start = p;
        while (*p && (isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80))
            p++;
        if (p > start)
            json_array_append_new(words, json_stringn(start, (size_t)(p - start)));
    }
    return words;
}

/* What a search found, server by server. */
struct srv_hits {
    struct srv_hit *hits; /* unsorted */
    size_t n, cap;
    json_t *all;         /* server -> tools, keeps them alive while hits point in */
    json_t *unavailable; /* [{server, error}] */
    json_t *not_started; /* names */
};

/* Score the tools of every server of described that may be read (running, or in named). */
static void srv_search_servers(struct mcp_server_conn *c, json_t *described, json_t *named,
                               json_t *words, struct srv_hits *h)
{
    struct mcp_server *s = c->srv;
    size_t i;
    json_t *nv;
    json_array_foreach(described, i, nv)
    {
        const char *server = json_string_value(json_object_get(nv, "name"));
        if (!srv_may_read(nv, named)) {
            json_array_append_new(h->not_started, json_string(server));
            continue;
        }
        json_t *tools = NULL;
        struct sbx_error me = {0};
        if (mcp_registry_tools(s->registry, server, s->opt.lookup_timeout_ms, &tools, &me) < 0) {
            if (json_array_append_new(h->unavailable,
                                      json_pack("{s:s, s:o}", "server", server, "error",
                                                log_str(me.message ? me.message : "failed"))) < 0)
                log_warn("mcp: search_tool_docs: server %s is unavailable (%s), and the answer "
                         "cannot say so (out of memory)",
                         server, me.message ? me.message : "failed");
            sbx_error_clear(&me);
            continue;
        }
        mcp_alias_tools(tools);
        json_object_set_new(h->all, server, tools);
        size_t k;
        json_t *t;
        json_array_foreach(tools, k, t)
        {
            const char *tn = json_string_value(json_object_get(t, "name"));
            long score =
                tn && json_array_size(words)
                    ? srv_score(words, tn, json_string_value(json_object_get(t, "description")))
                    : 0;
            if (score <= 0)
                continue;
            if (h->n == h->cap) {
                size_t ncap = h->cap ? h->cap * 2 : 32;
                struct srv_hit *nh = realloc(h->hits, ncap * sizeof(*nh));
                if (!nh)
                    break;
                h->hits = nh;
                h->cap = ncap;
            }
            h->hits[h->n++] = (struct srv_hit){.score = score, .server = server, .tool = t};
        }
    }
}

/* One hit as structuredContent's result (appended to results) and as text (to b). */
static void srv_hit_answer(json_t *described, json_t *docs, const struct srv_hit *hit,
                           json_t *results, struct buf *b)
{
    json_t *t = hit->tool;
    const char *tn = json_string_value(json_object_get(t, "name"));
    const char *desc = json_string_value(json_object_get(t, "description"));
    struct buf alias, params, args_text;
    buf_init(&alias, 1024);
    buf_init(&params, 64u << 10);
    buf_init(&args_text, 16u << 10);
    (void)buf_printf(&alias, "await mcp_%s.%s", mcp_alias_of(described, hit->server) ?: hit->server,
                     json_string_value(json_object_get(t, "alias")) ?: tn);
    srv_params_text(json_object_get(t, "inputSchema"), &params, &args_text);
    (void)buf_printf(&alias, "(%s)", args_text.data ? args_text.data : "");
    const char *doc = json_string_value(json_object_get(json_object_get(docs, hit->server), tn));
    if (json_array_append_new(results,
                              json_pack("{s:s, s:s, s:s, s:s, s:s?, s:O*}", "server", hit->server,
                                        "tool", tn, "python", alias.data ? alias.data : "",
                                        "description", desc ? desc : "", "doc", doc, "inputSchema",
                                        json_object_get(t, "inputSchema"))) < 0)
        log_warn("mcp: search_tool_docs: %s.%s is missing from structuredContent (out of "
                 "memory)",
                 hit->server, tn);
    if (doc) {
        /* The text help() shows in the sandbox: one renderer (session/docs.c). */
        (void)buf_printf(b, "%s.%s   (run_python with servers=[\"%s\"])\n%s\n", hit->server, tn,
                         hit->server, doc);
    } else {
        (void)buf_printf(b, "%s.%s — %.300s\n  python: %s   (run_python with servers=[\"%s\"])\n",
                         hit->server, tn, desc ? desc : "", alias.data ? alias.data : "",
                         hit->server);
        if (params.len)
            (void)buf_printf(b, "  parameters: %s\n", params.data);
    }
    buf_free(&alias);
    buf_free(&params);
    buf_free(&args_text);
}

json_t *srv_search(struct mcp_server_conn *c, json_t *args, json_t *token,
                   const struct mcp_server_out *out, struct srv_call *call)
{
    (void)token, (void)out;
    struct mcp_server *s = c->srv;
    static const char *const allowed[] = {"query", "limit", "servers", NULL};
    json_t *bad = srv_check_args(c, srv_call_tool(call), args, allowed);
    if (bad)
        return bad;
    json_t *q = json_object_get(args, "query");
    json_t *lim = json_object_get(args, "limit");
    if (!json_is_string(q) || json_string_length(q) > SRV_MAX_QUERY)
        return srv_tool_error(c,
                              "%s: query: required, a string of at most %d "
                              "bytes",
                              srv_call_tool(call), SRV_MAX_QUERY);
    if (lim && !json_is_null(lim) &&
        (!json_is_integer(lim) || json_integer_value(lim) < 1 || json_integer_value(lim) > 50))
        return srv_tool_error(c, "%s: limit: an integer from 1 to 50", srv_call_tool(call));
    size_t limit = json_is_integer(lim) ? (size_t)json_integer_value(lim) : 5;
    json_t *named = NULL;
    if ((bad = srv_named(c, srv_call_tool(call), args, &named)))
        return bad;
    json_t *words = srv_query_words(json_string_value(q));
    json_t *described = mcp_registry_describe(s->registry);
    mcp_alias_tools(described); /* the aliases a session gives them */
    struct srv_hits h = {
        .all = json_object(), .unavailable = json_array(), .not_started = json_array()};
    srv_search_servers(c, described, named, words, &h);
    struct srv_hit *hits = h.hits;
    size_t n_hits = h.n;
    json_t *unavailable = h.unavailable, *not_started = h.not_started;
    size_t i;
    json_t *nv;
    if (n_hits)
        qsort(hits, n_hits, sizeof(*hits), srv_cmp_hit);
    json_t *results = json_array();
    struct buf b;
    buf_init(&b, 4u << 20);
    json_t *docs = srv_hit_docs(c, described, hits, n_hits < limit ? n_hits : limit);
    for (size_t k = 0; k < n_hits && k < limit; k++)
        srv_hit_answer(described, docs, &hits[k], results, &b);
    if (!json_array_size(results))
        (void)buf_printf(&b, "No tool matches '%.200s'%s\n", json_string_value(q),
                         json_array_size(described) ? "" : " (no MCP servers are configured)");
    if (json_array_size(not_started)) {
        char *list = srv_names_text(not_started);
        (void)buf_printf(&b,
                         "[note] not running, so not searched: %s (name them in `servers` "
                         "to start and search them)\n",
                         list ? list : "?");
        free(list);
    }
    json_array_foreach(unavailable, i, nv)
    {
        (void)buf_printf(&b, "[note] server '%s' is unavailable: %s\n",
                         json_string_value(json_object_get(nv, "server")),
                         json_string_value(json_object_get(nv, "error")));
    }
    if (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    json_t *st = json_pack("{s:o, s:o, s:o}", "results", results, "unavailable", unavailable,
                           "notStarted", not_started);
    char *text = !st                  ? NULL
                 : s->opt.output_json ? jdump(st, JSON_COMPACT, NULL)
                                      : buf_take(&b, NULL);
    json_t *r =
        st ? srv_tool_result(c, text ? text : "", st, false) : srv_tool_error(c, "out of memory");
    free(text);
    buf_free(&b);
    free(hits);
    json_decref(docs);
    json_decref(h.all);
    json_decref(described);
    json_decref(named);
    json_decref(words);
    return r;
}
