// SPDX-License-Identifier: MIT
/*
 * reuse — warm reuse (CONTRACT §14), the FaaS "warm start": after a JIT
 * execution of an app named by --warm-reuse succeeds, its cell (interpreter,
 * jail, cgroup) is kept idle under a key naming (tenant, framework endpoint,
 * appId, script, definition content, profile, memory limit), and the next
 * execution with the same key runs in it, where the script's module is
 * already imported and its globals persist. A cell never serves another key:
 * never another app, never another tenant (its module globals and /tmp are
 * the last caller's), never another endpoint (which decides the code and
 * what the app reaches).
 *
 * The store only keeps and hands out cells; app_run_job decides what may be
 * reused (JIT only, no network policy, no files) and gives a cell back only
 * after a clean result. Idle cells are retired after --reuse-idle-s, when
 * more than --reuse-max-idle are kept (least recently used first), after
 * --reuse-max-executions, and for an app on /_framework/load_code.
 * Thread-safe; cells are freed outside the lock.
 */
#ifndef SANDBOXD_POOL_REUSE_H
#define SANDBOXD_POOL_REUSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "exec/cell.h"

#define REUSE_MAX_APPS 256 /* appIds in --warm-reuse */
#define REUSE_APP_MAX  256 /* bytes of one appId there */

struct reuse_options {
    const char *apps;        /* comma-separated appIds, or "*" (borrowed during reuse_new) */
    unsigned max_executions; /* per interpreter, >= 1 */
    unsigned max_idle;       /* idle interpreters kept, all apps together */
    int64_t idle_us;         /* an idle interpreter retires after this long */
};

struct reuse;

/* Parse the app list and start the sweeper. -EINVAL (with *ret_error, caller frees) for an
 * empty or over-long list or name. */
int reuse_new(const struct reuse_options *opt, struct reuse **ret, char **ret_error);
/* Kill every idle interpreter and free. NULL is a no-op. */
void reuse_free(struct reuse *r);
/* Whether executions of app_id may be reused (NULL r or app_id: no). */
bool reuse_wants(const struct reuse *r, const char *app_id);
/* Whose executions may share an interpreter besides the app's own names: the caller's tenant
 * (NULL: the operator) and the request's mcp_endpoint (borrowed). */
struct reuse_owner {
    const char *tenant;
    const char *endpoint;
};

/* The key of (owner, app, script, definition content, profile) (caller frees; NULL on ENOMEM);
 * the caller appends the memory limit (reuse_key_limits). The content is hashed: a changed
 * definition never meets an old interpreter. */
char *reuse_key(const struct reuse_owner *owner, const char *app_id, const char *script,
                const char *content_b64, const char *profile);
/* key + the execution's memory limit (caller frees; NULL on ENOMEM): an interpreter keeps the
 * limits it was confined with. */
char *reuse_key_limits(const char *key, uint64_t memory_mb);
/* An idle, live interpreter of key (the most recently used), or NULL. The caller owns it;
 * *ret_uses gets how many executions it already served. */
struct cell *reuse_take(struct reuse *r, const char *key, unsigned *ret_uses);
/* Keep c (ownership passes; it served uses executions) for key, or free it when it has served
 * --reuse-max-executions. May retire the least recently used idle interpreter. */
void reuse_put(struct reuse *r, const char *app_id, const char *key, struct cell *c, unsigned uses);
/* Count an interpreter retired after an execution that did not end in a clean result (an
 * error, a timeout, a limit). */
void reuse_note_retired_error(struct reuse *r);
/* Kill the idle interpreters of app_id (/_framework/load_code). Returns how many. */
size_t reuse_retire_app(struct reuse *r, const char *app_id);
/* {"enabled", "apps", "idle", "reused", "misses", "retired": {...}} (new reference). */
json_t *reuse_stats(struct reuse *r);

#endif
