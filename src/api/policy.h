// SPDX-License-Identifier: MIT
/*
 * policy — the boundary of `sandboxd serve`, one rule set for every
 * endpoint, checked by api_route before any route sees a request:
 *   1. Host (DNS-rebinding protection): on a loopback bind, or whenever
 *      --allowed-host is given, the Host header must name a loopback host,
 *      the address we listen on, or an allowed host; else 403.
 *   2. Origin: when present it must be an --allowed-origin, or http(s)://
 *      one of the hosts of rule 1; else 403 ("null" never passes).
 *   3. Token: with --api-token or --tenants, every endpoint but /healthz,
 *      /livez, /readyz and the console's files (/ui, /ui/..., /openapi.json)
 *      needs `Authorization: Bearer TOKEN` naming the operator or a tenant
 *      (hashes compared in constant time); else 401.
 *      Those three answer anyone, but /healthz tells the details of the host
 *      (egress allowlist, cgroup paths, zygote PIDs...) to the operator only
 *      (policy_operator).
 * The answer names the caller: its tenant, or NULL for the operator.
 * Starting on a non-loopback address without a token or tenants is refused
 * unless insecure_no_auth says the operator means it.
 */
#ifndef SANDBOXD_API_POLICY_H
#define SANDBOXD_API_POLICY_H

#include <stdbool.h>

#include "http/server.h"

struct tenant;
struct tenants;

#define POLICY_MAX_ALLOWED 64 /* --allowed-host, --allowed-origin entries each */

struct policy_options {
    const char *bind_host;              /* --host */
    const char *const *allowed_hosts;   /* NULL-terminated, "name" or "name:port"; copied */
    const char *const *allowed_origins; /* NULL-terminated, "scheme://host[:port]"; copied */
    const char *api_token;              /* NULL: none; copied (as a hash) */
    const char *tenants_file;           /* NULL: no tenants */
    bool insecure_no_auth;              /* allow a non-loopback bind without authentication */
};

enum policy_verdict {
    POLICY_OK,
    POLICY_BAD_HOST,   /* 403 */
    POLICY_BAD_ORIGIN, /* 403 */
    POLICY_NO_TOKEN,   /* 401 */
    POLICY_BAD_TOKEN,  /* 401 */
};

struct policy;

/* 0, or -errno after logging why (a bad tenants file, a token that is also a tenant's, an
 * unauthenticated non-loopback bind). */
int policy_new(const struct policy_options *opt, struct policy **ret);
void policy_free(struct policy *p);
/* The tenants (borrowed, NULL when none). */
struct tenants *policy_tenants(const struct policy *p);
/* Judge a request; on POLICY_OK *ret_tenant is the caller's tenant (NULL: the operator). */
enum policy_verdict policy_check(const struct policy *p, const struct http_request *req,
                                 struct tenant **ret_tenant);
/* The two halves of policy_check(), for front ends whose clients send their key otherwise
 * (E2B's SDKs: X-API-Key, e2b/): rules 1 and 2 (Host, Origin) ... */
enum policy_verdict policy_check_source(const struct policy *p, const struct http_request *req);
/* ... and rule 3 for a key given as is (NULL: none sent): POLICY_OK and *ret_tenant when it is
 * the operator's or a tenant's, or when no key is required. */
enum policy_verdict policy_check_key(const struct policy *p, const char *key,
                                     struct tenant **ret_tenant);
/* Whether keys are required at all (--api-token or --tenants). */
bool policy_requires_key(const struct policy *p);
/* The kind of a refusal (FORBIDDEN: Host or Origin; UNAUTHORIZED: the token) and what it says
 * (static). */
enum sbx_errkind policy_kind(enum policy_verdict v);
const char *policy_message(enum policy_verdict v);
/* Does req come from the operator: its --api-token, or anyone when neither a token nor tenants
 * are configured? (A tenant is not the operator.) For the open paths, which policy_check()
 * lets through unauthenticated. */
bool policy_operator(const struct policy *p, const struct http_request *req);
/* Fill reply for a refusal: FORBIDDEN or UNAUTHORIZED (with WWW-Authenticate), the body a JSON-RPC
 * error without id when jsonrpc (for /mcp), else {"error": {code, message}}. */
void policy_refuse(enum policy_verdict v, bool jsonrpc, struct http_reply *reply);

#endif
