// SPDX-License-Identifier: MIT
/*
 * e2b — E2B's API on sandboxd's own port (CONTRACT §15, docs/E2B.md), so that E2B's SDKs run
 * unchanged with E2B_API_URL=E2B_SANDBOX_URL=http://HOST:PORT/e2b. api/ routes the /e2b prefix
 * here once its policy let the request in (Host, Origin, and the key of the control plane) and
 * its route table names the method (the row /e2b/{path}). Every reply counts against the
 * caller's share of the reply budget (http_reply_admit()).
 *
 * An E2B sandbox is a sandboxd session (session/): the same jail, limits, tenant, workspace
 * and egress policy, with its /home/user the session's working directory. It is an agent
 * session whose interpreter runs runtime/sandboxd_runtime/e2b.py, the sandbox side of envd and
 * of the code interpreter; this module is the host side: the control plane (create, connect,
 * timeout, kill, get, list), envd (/health, /files, the Connect RPCs of filesystem.Filesystem
 * and process.Process) and the code interpreter (/execute, /contexts). It never runs anything
 * on the host: commands, files and code go to the sandbox (files through session/files.c).
 *
 * Requests for a sandbox (the data plane) name it in E2b-Sandbox-Id and the service in
 * E2b-Sandbox-Port (49983 envd, 49999 the code interpreter), and prove access with the
 * sandbox's own token (X-Access-Token or E2B-Traffic-Access-Token, given out at create and
 * connect), or with its owner's key. Anything else about a sandbox answers "not found".
 * Thread-safe.
 */
#ifndef SANDBOXD_E2B_E2B_H
#define SANDBOXD_E2B_E2B_H

#include <stdbool.h>
#include <stdint.h>

#include "http/server.h"
#include "util/error.h"

struct sessions;
struct profiles;
struct tenant;
struct e2b;

#define E2B_ENVD_PORT   49983
#define E2B_INTERP_PORT 49999

#define E2B_TIMEOUT_DEFAULT_S     300  /* a sandbox created without "timeout" (E2B's docs) */
#define E2B_MAX_TIMEOUT_DEFAULT_S 3600 /* the longest timeout (serve's --e2b-max-timeout-s) */

struct e2b_options {
    struct sessions *sessions; /* borrowed; must outlive e2b_free() */
    struct profiles *profiles; /* borrowed, may be NULL: the templates that are profiles */
    int64_t default_timeout_s; /* a sandbox created without "timeout" (E2B_TIMEOUT_DEFAULT_S) */
    int64_t max_timeout_s;     /* the longest timeout a sandbox may get */
    int64_t idle_s;            /* a sandbox nobody used this long ends (sessions' idle time) */
    uint64_t file_max;         /* largest file /files reads (the sandbox's /tmp size) */
    unsigned max_sandboxes;    /* sandboxes alive at once at most (--max-sessions) */
};

int e2b_new(const struct e2b_options *opt, struct e2b **ret);
/* No new sandbox from now on (503); the timeout reaper stops. The sandboxes themselves end with
 * their sessions (sessions_shutdown()). Idempotent, NULL-safe. */
void e2b_shutdown(struct e2b *e);
/* After sessions_shutdown() and http_server_stop(): waits for every sandbox's worker, frees.
 * NULL-safe. */
void e2b_free(struct e2b *e);

/* Does the request name a sandbox (E2b-Sandbox-Id): the data plane, which the sandbox's token
 * authorizes rather than an API key. */
bool e2b_is_data_plane(const struct http_request *req);
/* Answer a request under /e2b; path is what follows the prefix ("/v2/sandboxes"). tenant: the
 * caller api/ authenticated (NULL: the operator); keyed: whether a key proved it (always on the
 * control plane; on the data plane only when one was sent, else the sandbox's token must). */
void e2b_route(struct e2b *e, const struct http_request *req, const char *path,
               struct tenant *tenant, bool keyed, struct http_reply *reply);
/* api/'s refusal (UNAUTHORIZED a wrong or missing key, FORBIDDEN Host or Origin, METHOD and
 * NOT_FOUND of the route table, UNAVAILABLE while draining) with E2B's status for the kind, in
 * the shape of the surface the request was for. */
void e2b_refuse(const struct http_request *req, enum sbx_errkind kind, const char *message,
                struct http_reply *reply);

#endif
