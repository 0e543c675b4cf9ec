// SPDX-License-Identifier: MIT
/*
 * policy — see policy.h. Immutable after policy_new(), so every request
 * thread reads it without a lock.
 */
#include "api/policy.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/status.h"
#include "tenant/tenant.h"
#include "proto/jsonrpc.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/url.h"

struct policy {
    char *hosts[POLICY_MAX_ALLOWED + 2]; /* the allowed ones and the bind address; NULL-ended */
    char *origins[POLICY_MAX_ALLOWED + 1];
    bool check_host;
    bool has_token;
    unsigned char token_hash[TENANT_HASH_LEN];
    struct tenants *tenants;
};

/* Split "name[:port]" or "[v6][:port]"; false when malformed. */
static bool policy_split_host(const char *host, size_t len, size_t *ret_name_len)
{
    size_t n;
    if (len && host[0] == '[') {
        const char *close = memchr(host, ']', len);
        if (!close)
            return false;
        n = (size_t)(close - host) + 1;
    } else {
        const char *colon = memchr(host, ':', len);
        n = colon ? (size_t)(colon - host) : len;
    }
    if (n == 0 || n >= 256)
        return false;
    if (n < len) {
        if (host[n] != ':' || n + 1 == len || len - n > 6)
            return false;
        for (size_t i = n + 1; i < len; i++)
            if (host[i] < '0' || host[i] > '9')
                return false;
    }
    *ret_name_len = n;
    return true;
}

/* host[0..len) ("name[:port]") names us: a loopback host, the bind address or an allowed
 * host (an entry with a port matches that port only). */
static bool policy_host_ok(const struct policy *p, const char *host, size_t len)
{
    size_t n;
    if (!policy_split_host(host, len, &n))
        return false;
    char name[256];
    memcpy(name, host, n);
    name[n] = '\0';
    if (url_host_is_loopback(name))
        return true;
    for (size_t i = 0; p->hosts[i]; i++) {
        const char *a = p->hosts[i];
        size_t al = strlen(a);
        bool with_port = a[0] == '[' ? strstr(a, "]:") != NULL : strchr(a, ':') != NULL;
        if (with_port ? al == len && strncasecmp(host, a, len) == 0
                      : al == n && strncasecmp(host, a, n) == 0)
            return true;
    }
    return false;
}

static bool policy_origin_ok(const struct policy *p, const char *origin)
{
    for (size_t i = 0; p->origins[i]; i++)
        if (strcasecmp(origin, p->origins[i]) == 0)
            return true;
    const char *rest = NULL;
    if (strncasecmp(origin, "http://", 7) == 0)
        rest = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        rest = origin + 8;
    /* "null" (sandboxed frames, file://) and anything with a path fail here. */
    return rest && !strchr(rest, '/') && policy_host_ok(p, rest, strlen(rest));
}

/* The paths a load balancer or an orchestrator probes without credentials, and the files of
 * the console and the OpenAPI document (compiled in, the same for everyone: they hold no data,
 * and the console asks for the token the API needs). */
static bool policy_open_path(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0 ||
           strcmp(path, "/readyz") == 0 || strcmp(path, "/openapi.json") == 0 ||
           (strncmp(path, "/ui", 3) == 0 && (path[3] == '\0' || path[3] == '/'));
}

/* A key as sent (tok, NULL: none): the operator's (*ret_op), a tenant's (*ret_tenant), or a
 * refusal. */
static enum policy_verdict policy_key(const struct policy *p, const char *tok, bool *ret_op,
                                      struct tenant **ret_tenant)
{
    if (!tok)
        return POLICY_NO_TOKEN;
    size_t len = strnlen(tok, TENANT_MAX_TOKEN + 1);
    if (len == 0 || len > TENANT_MAX_TOKEN)
        return POLICY_BAD_TOKEN;
    unsigned char h[TENANT_HASH_LEN];
    tenant_token_hash(tok, len, h);
    /* Both comparisons always run: the time does not tell an operator from a tenant. */
    bool op = p->has_token && sodium_memcmp(h, p->token_hash, sizeof(h)) == 0;
    struct tenant *t = tenants_find(p->tenants, h);
    if (!op && !t)
        return POLICY_BAD_TOKEN;
    *ret_op = op;
    *ret_tenant = op ? NULL : t;
    return POLICY_OK;
}

/* The bearer token of req: the operator's (*ret_op), a tenant's (*ret_tenant), or a refusal. */
static enum policy_verdict policy_token(const struct policy *p, const struct http_request *req,
                                        bool *ret_op, struct tenant **ret_tenant)
{
    const char *auth = http_header(req, "Authorization");
    if (!auth)
        return POLICY_NO_TOKEN;
    if (strncasecmp(auth, "Bearer ", 7) != 0)
        return POLICY_BAD_TOKEN;
    return policy_key(p, auth + 7, ret_op, ret_tenant);
}

enum policy_verdict policy_check_source(const struct policy *p, const struct http_request *req)
{
    const char *host = http_header(req, "Host");
    const char *origin = http_header(req, "Origin");
    if (p->check_host && (!host || !policy_host_ok(p, host, strlen(host)))) {
        log_warn("refused Host '%.100s' on %.100s (DNS-rebinding protection; see --allowed-host)",
                 host ? host : "", req->path);
        return POLICY_BAD_HOST;
    }
    if (origin && !policy_origin_ok(p, origin)) {
        log_warn("refused Origin '%.100s' on %.100s (see --allowed-origin)", origin, req->path);
        return POLICY_BAD_ORIGIN;
    }
    return POLICY_OK;
}

bool policy_requires_key(const struct policy *p)
{
    return p->has_token || p->tenants;
}

enum policy_verdict policy_check_key(const struct policy *p, const char *tok,
                                     struct tenant **ret_tenant)
{
    *ret_tenant = NULL;
    if (!policy_requires_key(p))
        return POLICY_OK;
    bool op;
    return policy_key(p, tok, &op, ret_tenant);
}

enum policy_verdict policy_check(const struct policy *p, const struct http_request *req,
                                 struct tenant **ret_tenant)
{
    *ret_tenant = NULL;
    enum policy_verdict v = policy_check_source(p, req);
    if (v != POLICY_OK || !policy_requires_key(p) || policy_open_path(req->path))
        return v;
    bool op;
    return policy_token(p, req, &op, ret_tenant);
}

bool policy_operator(const struct policy *p, const struct http_request *req)
{
    if (!policy_requires_key(p))
        return true; /* nobody authenticates: every caller is the operator */
    bool op = false;
    struct tenant *t;
    return policy_token(p, req, &op, &t) == POLICY_OK && op;
}

enum sbx_errkind policy_kind(enum policy_verdict v)
{
    return v == POLICY_OK                                   ? SBX_ERR_NONE
           : v == POLICY_BAD_HOST || v == POLICY_BAD_ORIGIN ? SBX_ERR_FORBIDDEN
                                                            : SBX_ERR_UNAUTHORIZED;
}

const char *policy_message(enum policy_verdict v)
{
    return v == POLICY_BAD_HOST     ? "Forbidden: Host not allowed (DNS-rebinding protection; see "
                                      "--allowed-host)"
           : v == POLICY_BAD_ORIGIN ? "Forbidden: Origin not allowed (see --allowed-origin)"
           : v == POLICY_NO_TOKEN   ? "Unauthorized: bearer token required"
                                    : "Unauthorized: invalid bearer token";
}

void policy_refuse(enum policy_verdict v, bool jsonrpc, struct http_reply *reply)
{
    enum sbx_errkind kind = policy_kind(v);
    const char *msg = policy_message(v);
    if (jsonrpc)
        api_reply_jsonrpc(reply, kind, JSONRPC_INVALID_REQUEST, msg, NULL);
    else
        api_reply_error(reply, kind, kind == SBX_ERR_FORBIDDEN ? "FORBIDDEN" : "UNAUTHORIZED", NULL,
                        "%s", msg);
    if (kind == SBX_ERR_UNAUTHORIZED)
        http_reply_header(reply, "WWW-Authenticate",
                          v == POLICY_BAD_TOKEN
                              ? "Bearer realm=\"sandboxd\", error=\"invalid_token\""
                              : "Bearer realm=\"sandboxd\"");
}

static int policy_copy_list(char **dst, const char *const *src, size_t room)
{
    size_t n = 0;
    for (; src && src[n]; n++) {
        if (n >= room) {
            log_error("at most %d --allowed-host and --allowed-origin entries each",
                      POLICY_MAX_ALLOWED);
            return -E2BIG;
        }
        if (!(dst[n] = strdup(src[n])))
            return -ENOMEM;
    }
    return 0;
}

/* A Host naming the address we listen on cannot be a rebinding (an address literal resolves to
 * itself), so it is accepted when it is one; a wildcard address is not a name. */
static int policy_add_bind(struct policy *p, const char *b)
{
    size_t nh = 0;
    while (p->hosts[nh])
        nh++;
    if (!b || strcmp(b, "0.0.0.0") == 0 || strcmp(b, "::") == 0 ||
        !(strspn(b, "0123456789.") == strlen(b) || strchr(b, ':')))
        return 0;
    int r;
    if (strchr(b, ':'))
        r = asprintf(&p->hosts[nh], "[%s]", b) < 0 ? -ENOMEM : 0;
    else
        r = (p->hosts[nh] = strdup(b)) ? 0 : -ENOMEM;
    if (r < 0)
        p->hosts[nh] = NULL;
    return r;
}

int policy_new(const struct policy_options *opt, struct policy **ret)
{
    struct policy *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    int r = policy_copy_list(p->hosts, opt->allowed_hosts, POLICY_MAX_ALLOWED);
    if (r == 0)
        r = policy_copy_list(p->origins, opt->allowed_origins, POLICY_MAX_ALLOWED);
    bool loopback = opt->bind_host && url_host_is_loopback(opt->bind_host);
    p->check_host = loopback || (opt->allowed_hosts && opt->allowed_hosts[0]);
    if (r == 0)
        r = policy_add_bind(p, opt->bind_host);
    if (r == 0 && opt->tenants_file)
        r = tenants_load(opt->tenants_file, &p->tenants);
    if (r == 0 && opt->api_token) {
        p->has_token = true;
        tenant_token_hash(opt->api_token, strlen(opt->api_token), p->token_hash);
        if (tenants_find(p->tenants, p->token_hash)) {
            log_error("the --api-token is also the token of tenant '%s'; they must differ",
                      tenant_name(tenants_find(p->tenants, p->token_hash)));
            r = -EINVAL;
        }
    }
    if (r == 0 && !loopback && !p->has_token && !p->tenants) {
        if (!opt->insecure_no_auth) {
            log_error("refusing to listen on %s without authentication: anyone who can reach it "
                      "could run code here. Set --api-token TOKEN (or SANDBOXD_API_TOKEN) or "
                      "--tenants FILE, or pass --insecure-no-auth if another layer "
                      "authenticates",
                      opt->bind_host ? opt->bind_host : "?");
            r = -EPERM;
        } else {
            log_warn("listening on %s without authentication (--insecure-no-auth): anyone who "
                     "can reach it runs code here",
                     opt->bind_host ? opt->bind_host : "?");
        }
    }
    if (r < 0) {
        if (r == -ENOMEM)
            log_error("out of memory while setting up the access policy");
        policy_free(p);
        return r;
    }
    *ret = p;
    return 0;
}

void policy_free(struct policy *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->hosts[i]; i++)
        free(p->hosts[i]);
    for (size_t i = 0; p->origins[i]; i++)
        free(p->origins[i]);
    tenants_free(p->tenants);
    sodium_memzero(p->token_hash, sizeof(p->token_hash));
    free(p);
}

struct tenants *policy_tenants(const struct policy *p)
{
    return p->tenants;
}
