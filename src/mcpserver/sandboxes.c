// SPDX-License-Identifier: MIT
/*
 * sandboxes — the sandbox sessions of an MCP server connection that
 * run_python runs in (tools.c): the automatic ones and the named ones, found
 * or created with the MCP servers a call asks for, loaded into them when
 * they lack some, forgotten when they end; and the notes that tell the
 * client what happened to them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mcpserver/server_int.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/fmt.h"
#include "util/log.h"

/* ---- the sandbox sessions of a connection -------------------------------------------------- */

/* run_python without session_id uses the connection's automatic session ("default"; one more
 * per network allow list); with session_id, a named session of this connection (created on
 * first use). A call naming servers its session lacks loads them into it (the variables
 * stay). A session that ended (idle, killed) is replaced on the next call, and the answer
 * says so. */

void srv_sandbox_free(struct srv_sandbox *b)
{
    if (!b)
        return;
    free(b->name);
    free(b->label);
    json_decref(b->servers);
    json_decref(b->network);
    free(b);
}

/* Every name of want (sorted) is in have (sorted). */
static bool srv_subset(json_t *want, json_t *have)
{
    size_t i, j = 0;
    json_t *w;
    json_array_foreach(want, i, w)
    {
        while (j < json_array_size(have) &&
               strcmp(json_string_value(json_array_get(have, j)), json_string_value(w)) < 0)
            j++;
        if (j == json_array_size(have) ||
            strcmp(json_string_value(json_array_get(have, j)), json_string_value(w)) != 0)
            return false;
    }
    return true;
}

/* "a, b" or "none" (caller frees). */
char *srv_names_text(json_t *names)
{
    struct buf b;
    buf_init(&b, 1u << 16);
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        (void)buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(v));
    }
    if (!b.len)
        (void)buf_appends(&b, "none");
    return buf_take(&b, NULL);
}

void srv_note(json_t *notes, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = fmt_va(fmt, ap);
    va_end(ap);
    if (msg)
        json_array_append_new(notes, json_string(msg));
    free(msg);
}

void srv_note_ended(json_t *notes, const char *label)
{
    srv_note(notes,
             "session '%s' had ended (idle for too long, reset, or its interpreter died): a new "
             "one was started and earlier variables are gone",
             label);
}

/* Unlink b (lock held). */
void srv_sandbox_unlink(struct mcp_server_conn *c, struct srv_sandbox *b)
{
    for (struct srv_sandbox **pp = &c->sandboxes; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            c->n_sandboxes--;
            return;
        }
}

/* Forget the sandbox session id (it ended); create_lock held. */
void srv_sandbox_forget(struct mcp_server_conn *c, const char *id)
{
    pthread_mutex_lock(&c->lock);
    struct srv_sandbox *b = c->sandboxes;
    while (b && strcmp(b->id, id) != 0)
        b = b->next;
    if (b)
        srv_sandbox_unlink(c, b);
    pthread_mutex_unlock(&c->lock);
    srv_sandbox_free(b);
}

/* The names of a and b (both sorted), sorted, once each (new reference; NULL: no memory). */
static json_t *srv_union(json_t *a, json_t *b)
{
    json_t *u = json_array();
    size_t i = 0, j = 0, na = json_array_size(a), nb = json_array_size(b);
    while (u && (i < na || j < nb)) {
        json_t *x = i < na ? json_array_get(a, i) : NULL, *y = j < nb ? json_array_get(b, j) : NULL;
        int cmp = !x ? 1 : !y ? -1 : strcmp(json_string_value(x), json_string_value(y));
        if (json_array_append(u, cmp <= 0 ? x : y) < 0) {
            json_decref(u);
            return NULL;
        }
        i += cmp <= 0;
        j += cmp >= 0;
    }
    return u;
}

/* Load the servers b lacks into its live session, so that a call naming more servers keeps
 * the variables (c->lock and create_lock held; c->lock is let go meanwhile: connecting a
 * server may take its time, and b stays because create_lock keeps it from being reset —
 * a closing connection takes the list, so b is found again by id). 0, or <0 with
 * *ret_error. */
static int srv_sandbox_load(struct mcp_server_conn *c, struct srv_sandbox *b, json_t *servers,
                            json_t *notes, char **ret_error)
{
    char id[sizeof(b->id)];
    memcpy(id, b->id, sizeof(id));
    char *label = strdup(b->label);
    json_t *missing = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(servers, i, v)
    {
        json_t *one = json_pack("[O]", v);
        if (one && !srv_subset(one, b->servers))
            json_array_append(missing, v);
        json_decref(one);
    }
    pthread_mutex_unlock(&c->lock);
    struct sbx_error err = {0};
    int r = label ? sessions_add_servers(c->srv->sessions, id, missing, &err) : -ENOMEM;
    pthread_mutex_lock(&c->lock);
    char *names = srv_names_text(missing);
    if (r < 0) {
        *ret_error =
            fmt_str("could not load the MCP servers %s into session '%s': %s", names ? names : "?",
                    label ? label : "?", err.message ? err.message : strerror(-r));
    } else {
        struct srv_sandbox *k = c->sandboxes;
        while (k && strcmp(k->id, id) != 0)
            k = k->next;
        json_t *both = k ? srv_union(k->servers, missing) : NULL;
        if (!k) {
            *ret_error = strdup("the MCP connection is closed"); /* b was freed with it */
            r = -ESHUTDOWN;
        } else if (both) {
            json_decref(k->servers);
            k->servers = both;
        }
    }
    if (r == 0)
        srv_note(notes, "loaded the MCP servers %s into session '%s' (its variables stay)",
                 names ? names : "?", label);
    sbx_error_clear(&err);
    free(names);
    free(label);
    json_decref(missing);
    return r;
}

/* The session started ahead (mcp_server_conn_prepare) as the one the connection makes now:
 * true with *ret_info ({"sessionId"}) when it still lives, the new session asks for no network
 * policy (it has none; one is fixed at creation) and the servers asked for could be loaded into
 * it. Otherwise it is ended: a connection never holds it next to a session of its own. */
static bool srv_spare_take(struct mcp_server_conn *c, json_t *network, json_t *servers,
                           json_t **ret_info)
{
    struct mcp_server *s = c->srv;
    char id[sizeof(c->spare)];
    pthread_mutex_lock(&c->lock);
    memcpy(id, c->spare, sizeof(id));
    c->spare[0] = '\0';
    pthread_mutex_unlock(&c->lock);
    if (!*id)
        return false;
    bool taken = !network && sessions_exists(s->sessions, id);
    if (taken && json_array_size(servers)) {
        struct sbx_error err = {0};
        taken = sessions_add_servers(s->sessions, id, servers, &err) == 0;
        sbx_error_clear(&err); /* a session made afresh with them says what is wrong */
    }
    if (taken && (*ret_info = json_pack("{s:s}", "sessionId", id)))
        return true;
    (void)sessions_end(s->sessions, id, "not needed: the connection made another session");
    return false;
}

int mcp_server_conn_prepare(struct mcp_server_conn *c)
{
    struct mcp_server *s = c->srv;
    pthread_mutex_lock(&c->create_lock);
    pthread_mutex_lock(&c->lock);
    bool needed = !c->closed && !c->sandboxes && !*c->spare;
    pthread_mutex_unlock(&c->lock);
    int r = 0;
    json_t *none = json_array(), *info = NULL;
    struct sbx_error err = {0};
    if (needed) {
        struct session_create sc = {.servers = none,
                                    .workspace = s->workspace,
                                    .tenant = c->tenant,
                                    .profile = s->opt.profile,
                                    .compat = s->opt.compat ? "code-execution-mode" : NULL};
        r = none ? sessions_create(s->sessions, &sc, &info, &err) : -ENOMEM;
    }
    const char *id = json_string_value(json_object_get(info, "sessionId"));
    if (r < 0)
        log_info("mcp: no session started ahead (%s); the first run_python starts one",
                 err.message ? err.message : strerror(-r));
    else if (id) {
        pthread_mutex_lock(&c->lock);
        bool closed = c->closed;
        if (!closed)
            snprintf(c->spare, sizeof(c->spare), "%s", id);
        pthread_mutex_unlock(&c->lock);
        if (closed)
            (void)sessions_delete(s->sessions, id);
    }
    sbx_error_clear(&err);
    json_decref(info);
    json_decref(none);
    pthread_mutex_unlock(&c->create_lock);
    return r;
}

/* The connection's session named name (or an automatic one: NULL) with the network asked for
 * (c->lock and create_lock held); sessions found ended are dropped, a note says so. 0 with *ret
 * (NULL: none, make one), *want (the servers a new one gets: a named session keeps those it
 * had) and *automatic_left (an automatic session of another network is kept); <0 with
 * *ret_error. */
static int srv_sandbox_find(struct mcp_server_conn *c, const char *name, json_t *servers,
                            json_t *network, json_t *notes, json_t **want, bool *automatic_left,
                            struct srv_sandbox **ret, char **ret_error)
{
    struct srv_sandbox *b = c->sandboxes, *next;
    *automatic_left = false;
    for (; b; b = next) {
        next = b->next;
        if (name ? !b->name || strcmp(b->name, name) != 0 : b->name != NULL)
            continue;
        /* A session's network policy is fixed at creation, like its servers. */
        bool same_net = network ? b->network && json_equal(network, b->network) : !b->network;
        if (name && !same_net) {
            char *have = b->network ? srv_names_text(b->network) : strdup("none");
            char *asked = network ? srv_names_text(network) : strdup("none");
            *ret_error = fmt_str("session '%s' was created with the network allow list %s; it "
                                 "cannot get %s. Use another session_id, or reset_session it "
                                 "first.",
                                 name, have ? have : "?", asked ? asked : "?");
            free(have);
            free(asked);
            return -EINVAL;
        }
        if (!name && !same_net) {
            *automatic_left = true;
            continue;
        }
        if (sessions_exists(c->srv->sessions, b->id))
            break;
        srv_note_ended(notes, b->label);
        if (name) {
            json_t *both = srv_union(b->servers, servers); /* a named session keeps its servers */
            if (!both)
                return -ENOMEM;
            json_decref(*want);
            *want = both;
        }
        srv_sandbox_unlink(c, b);
        srv_sandbox_free(b);
    }
    for (struct srv_sandbox *k = c->sandboxes; k && !*automatic_left; k = k->next)
        *automatic_left = k->name == NULL;
    *ret = b;
    return 0;
}

/* A new entry for a session named name (NULL: automatic) with the servers want and network,
 * labelled for the answers; NULL when out of memory. */
static struct srv_sandbox *srv_sandbox_entry(const char *name, json_t *want, json_t *network,
                                             bool automatic_left)
{
    struct srv_sandbox *nb = calloc(1, sizeof(*nb));
    char *names = srv_names_text(want);
    int lr = -1;
    char *nets = network ? srv_names_text(network) : NULL;
    if (nb && names && (!network || nets)) {
        nb->servers = json_incref(want);
        nb->network = json_incref(network);
        nb->name = name ? strdup(name) : NULL;
        lr = name              ? asprintf(&nb->label, "%s", name)
             : !automatic_left ? asprintf(&nb->label, "default")
                               : asprintf(&nb->label, "servers:%s%s%s", names,
                                          nets ? " network:" : "", nets ? nets : "");
    }
    free(nets);
    free(names);
    if (lr < 0 || (name && !nb->name)) {
        if (nb)
            nb->label = lr < 0 ? NULL : nb->label;
        srv_sandbox_free(nb);
        return NULL;
    }
    return nb;
}

/* Start the sandbox session of entry nb and list it (create_lock held, c->lock not); 0 with
 * ret_id and *ret_label (caller frees), or <0 with *ret_error (nb freed). */
static int srv_sandbox_start(struct mcp_server_conn *c, struct srv_sandbox *nb, json_t *notes,
                             char ret_id[SESSION_ID_MAX + 1], char **ret_label, char **ret_error)
{
    struct mcp_server *s = c->srv;
    /* A session without the network it asked for would be a quiet failure: one more reason to
     * stop here. */
    json_t *net = nb->network ? json_pack("{s:O}", "allow", nb->network) : NULL;
    char *names = srv_names_text(nb->servers);
    if ((nb->network && !net) || !names) {
        json_decref(net);
        free(names);
        srv_sandbox_free(nb);
        *ret_error = strdup("out of memory");
        return -ENOMEM;
    }
    struct session_create sc = {.servers = nb->servers,
                                .workspace = s->workspace,
                                .tenant = c->tenant,
                                .profile = s->opt.profile,
                                .network = net,
                                .compat = s->opt.compat ? "code-execution-mode" : NULL};
    json_t *info = NULL;
    struct sbx_error err;
    int r = srv_spare_take(c, nb->network, nb->servers, &info)
                ? 0
                : sessions_create(s->sessions, &sc, &info, &err);
    json_decref(net);
    if (r < 0) {
        if (asprintf(ret_error, "could not start a Python session: %s",
                     err.message ? err.message : "failed") < 0)
            *ret_error = NULL;
        sbx_error_clear(&err);
        srv_sandbox_free(nb);
        free(names);
        return r;
    }
    snprintf(nb->id, sizeof(nb->id), "%s", json_string_value(json_object_get(info, "sessionId")));
    json_decref(info);
    pthread_mutex_lock(&c->lock);
    if (c->closed) {
        pthread_mutex_unlock(&c->lock);
        (void)sessions_delete(s->sessions, nb->id);
        srv_sandbox_free(nb);
        free(names);
        *ret_error = strdup("the MCP connection is closed");
        return -ESHUTDOWN;
    }
    struct srv_sandbox **tail = &c->sandboxes;
    while (*tail)
        tail = &(*tail)->next;
    *tail = nb;
    c->n_sandboxes++;
    srv_note(notes, "started session '%s' (servers: %s)", nb->label, names);
    /* Read while listed: a closing connection frees its list under c->lock. */
    memcpy(ret_id, nb->id, sizeof(nb->id));
    *ret_label = strdup(nb->label);
    pthread_mutex_unlock(&c->lock);
    free(names);
    return *ret_label ? 0 : -ENOMEM;
}

/* The sandbox session run_python uses: named (name) or automatic (NULL) with at least the
 * servers asked for (sorted), created when needed. 0 with ret_id and *ret_label (caller frees),
 * or -errno with *ret_error (caller frees). create_lock is held across the creation, so two
 * first calls of a connection make one default session, not two. */
int srv_sandbox_get(struct mcp_server_conn *c, const char *name, json_t *servers, json_t *network,
                    json_t *notes, char ret_id[SESSION_ID_MAX + 1], char **ret_label,
                    char **ret_error)
{
    pthread_mutex_lock(&c->create_lock);
    pthread_mutex_lock(&c->lock);
    json_t *want = json_incref(servers);
    struct srv_sandbox *b = NULL;
    bool automatic_left = false;
    int r =
        srv_sandbox_find(c, name, servers, network, notes, &want, &automatic_left, &b, ret_error);
    if (r == 0 && b && !srv_subset(servers, b->servers))
        r = srv_sandbox_load(c, b, servers, notes, ret_error);
    if (r < 0 || b) {
        if (r == 0) {
            memcpy(ret_id, b->id, sizeof(b->id));
            *ret_label = strdup(b->label);
            r = *ret_label ? 0 : -ENOMEM;
        }
    } else if (c->closed) {
        *ret_error = strdup("the MCP connection is closed");
        r = -ESHUTDOWN;
    } else if (c->n_sandboxes >= MCP_SERVER_MAX_SANDBOXES) {
        *ret_error = fmt_str("this connection holds %d sessions, the most it may; end one with "
                             "reset_session",
                             MCP_SERVER_MAX_SANDBOXES);
        r = -EBUSY;
    } else {
        pthread_mutex_unlock(&c->lock);
        struct srv_sandbox *nb = srv_sandbox_entry(name, want, network, automatic_left);
        r = nb ? srv_sandbox_start(c, nb, notes, ret_id, ret_label, ret_error) : -ENOMEM;
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&c->create_lock);
    json_decref(want);
    if (r < 0 && !*ret_error)
        *ret_error = strdup("out of memory");
    return r;
}
