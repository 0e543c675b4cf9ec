// SPDX-License-Identifier: MIT
/*
 * tenant — who owns what on a shared sandboxd (`serve --tenants FILE`).
 * Each tenant is a name, a bearer token and optional limits on its live
 * sessions and running executions. Sessions, MCP sessions and workspaces
 * (with their memories, saved tools and files) carry their tenant, and no
 * other tenant ever sees them. Loaded once at start-up and validated
 * strictly: any problem refuses the start with a message naming it.
 *
 * Tokens are kept as BLAKE2b hashes and compared in constant time, every
 * tenant every time. A NULL tenant is the operator (no tenants configured,
 * or the --api-token): no limits of its own. Thread-safe: the set never
 * changes after loading; the counters are atomic.
 */
#ifndef SANDBOXD_TENANT_TENANT_H
#define SANDBOXD_TENANT_TENANT_H

#include <stdbool.h>
#include <stddef.h>

#define TENANT_MAX       1024       /* tenants in one file */
#define TENANT_MAX_FILE  (1u << 20) /* bytes of the file */
#define TENANT_MAX_TOKEN 4096
#define TENANT_HASH_LEN  32
#define TENANT_MAX_LIMIT (1u << 20) /* the largest count or MiB a limit may name */
/* The largest maxWorkspaces: the store reads that many of a tenant's workspace directories
 * when it first counts what the tenant stores (session/workspace.h). */
#define TENANT_MAX_WORKSPACES 4096

struct buf;
struct tenant;
struct tenants;

/* The file's format: {"tenants": {"NAME": {"token": "...", "maxSessions": n, "maxRunning": n,
 * "maxMcpSessions": n, "quotaMb": n, "maxWorkspaces": n, "egressConnections": n}}}. NAME as a
 * workspace name ([A-Za-z0-9._-], 1-64, not starting with '.'); token 1 to TENANT_MAX_TOKEN
 * printable ASCII characters without spaces, unique; the limits optional integers from 1 to
 * 1048576 (maxWorkspaces: to TENANT_MAX_WORKSPACES). Unknown keys, duplicate names or tokens, a
 * file anyone but us (or root) could write: -EINVAL, logged with what is wrong. 0 and *ret
 * (caller frees). */
int tenants_load(const char *path, struct tenants **ret);
void tenants_free(struct tenants *t);
size_t tenants_count(const struct tenants *t);

/* The hash tokens are compared by. */
void tenant_token_hash(const char *token, size_t len, unsigned char out[TENANT_HASH_LEN]);
/* Is token (up to TENANT_MAX_TOKEN bytes, else no) the one whose hash is `hash`? Constant
 * time. */
bool tenant_token_matches(const char *token, const unsigned char hash[TENANT_HASH_LEN]);
/* The tenant holding the token with this hash, or NULL; constant time over all tenants. */
struct tenant *tenants_find(const struct tenants *t, const unsigned char hash[TENANT_HASH_LEN]);

/* NULL-safe (NULL: the operator). */
const char *tenant_name(const struct tenant *t);

/* Claim a running execution of handler (JIT, EXECUTOR, LLM, WORKFLOW, session), false at the
 * tenant's maxRunning (counted as a refusal); release it with tenant_run_end(). Claim a live
 * session the same way. NULL tenant: always true, and the ends do nothing. */
bool tenant_run_begin(struct tenant *t, const char *handler);
void tenant_run_end(struct tenant *t);
bool tenant_session_claim(struct tenant *t);
void tenant_session_release(struct tenant *t);
/* The same for an MCP session of /mcp (a protocol session, counted apart from the sandbox
 * sessions its run_python makes, which claim live sessions): at most maxMcpSessions, which
 * defaults to maxSessions. */
bool tenant_mcp_session_claim(struct tenant *t);
void tenant_mcp_session_release(struct tenant *t);
/* The tenant's part of the egress proxy (egressConnections in the file); NULL for the
 * operator. */
struct egress_share *tenant_egress_share(struct tenant *t);
/* The limits, for messages (0: none). */
unsigned tenant_max_running(const struct tenant *t);
unsigned tenant_max_sessions(const struct tenant *t);
unsigned tenant_max_mcp_sessions(const struct tenant *t);
/* The tenant's share of the workspace store: quotaMb and maxWorkspaces as the file sets them
 * (0: not set, the server's --tenant-quota-mb and the store's default apply). */
unsigned tenant_quota_mb(const struct tenant *t);
unsigned tenant_max_workspaces(const struct tenant *t);

/* Prometheus families with a tenant label: executions by handler, refusals by limit, running
 * executions, live sessions and MCP sessions; only tenant `only`'s series when it is not NULL. 0 or
 * -E2BIG (out is full). */
int tenants_metrics(const struct tenants *t, const struct tenant *only, struct buf *out);

#endif
