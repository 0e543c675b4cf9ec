// SPDX-License-Identifier: MIT
/*
 * app — everything a request needs, assembled once by `sandboxd serve`
 * (jail config, framework client, definition cache, execution manager, warm
 * pool, metrics), and the handlers that turn a validated /execute request
 * into a response: JIT and EXECUTOR (handlers/execute.c), LLM
 * (handlers/template.c) and WORKFLOW (handlers/workflow.c).
 *
 * app_run_job() is the single path from a job to a verdict: admission by the
 * manager, a cell from the pool (or a cold one), limits, execution, release.
 */
#ifndef SANDBOXD_HANDLERS_APP_H
#define SANDBOXD_HANDLERS_APP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"
#include "handlers/request.h"
#include "framework/defs.h"
#include "metrics/metrics.h"
#include "response/response.h"
#include "egress/proxy.h"
#include "exec/manager.h"
#include "exec/run.h"
#include "jail/jail.h"
#include "framework/framework.h"

struct flow_cache;
struct pool;
struct profiles;
struct reuse;

/* An execution's limits when its request names none: serve's --default-timeout-ms,
 * --default-memory-mb and --output-limit-kb, run's --timeout-ms, --memory-mb and
 * --output-limit-kb (cmd/ spells them in --help: plain literals). */
#define APP_DEFAULT_TIMEOUT_MS 10000
#define APP_DEFAULT_MEMORY_MB  256
#define APP_DEFAULT_OUTPUT_KB  1024

struct app_options {
    int64_t default_timeout_ms;
    int64_t max_timeout_ms;
    uint64_t default_memory_mb;
    uint64_t max_memory_mb;
    size_t output_limit;    /* stdout + stderr bytes per execution */
    size_t max_frame;       /* largest result a sandbox may send */
    int64_t llm_timeout_ms; /* one core.llm.generate call */
    unsigned max_workflow_steps;
    size_t workflow_max_built; /* WORKFLOW_MAX_BUILT_BYTES when 0 */
    uint64_t nproc;
    uint64_t nofile;
    struct artifact_caps artifacts; /* per execution */
};

struct app {
    struct app_options opt;
    struct jail_config *jail;
    struct framework *fw;
    struct defs *defs;
    struct manager *mgr;
    struct pool *pool;          /* NULL: every execution spawns a cold interpreter */
    struct pool *session_pool;  /* sessions' own; NULL: they share pool */
    struct pool *template_pool; /* LLM templates' own; NULL: they share pool */
    struct pool *network_pool;  /* executions with a network policy; NULL: cold cells */
    struct profiles *profiles;  /* --profile and the built-in ones; NULL: none */
    struct metrics *metrics;
    struct flow_cache *wf_cache; /* validated workflows by content; NULL: none */
    json_t *isolation;           /* what the start-up self-test observed */
    int64_t started_us;
    struct egress_proxy *egress; /* NULL: no --egress-allow, no network for anyone */
    struct reuse *reuse;         /* --warm-reuse; NULL: every execution gets a fresh interpreter */
};

struct app_run {
    json_t *job;                  /* borrowed; "limits" is added */
    const char *history_key;      /* adaptive timeouts; NULL: none */
    int64_t requested_timeout_ms; /* 0: not requested */
    int64_t requested_memory_mb;
    const struct exec_hooks *hooks;     /* frames the job sends besides its answer (RPCs) */
    const char *const *raw_path;        /* the result's value passed through as text, or NULL */
    struct pool *pool;                  /* NULL: the app's pool; with egress, the network pool to
                                         * take a cell from (NULL: a cold one) */
    uint64_t default_memory_mb;         /* when none is requested; 0: the server's default */
    const struct egress_policy *egress; /* a network policy: a cell of a network pool (or a
                                         * cold one) with the proxy */
    struct egress_share *egress_share;  /* the tenant's part of the proxy; NULL: none */
    const char *label;                  /* the request id, for the egress log */
    const char *app_id;                 /* with reuse_key: whose interpreter it is */
    const char *reuse_key;              /* reuse_key() of a JIT execution that may run in a kept
                                         * interpreter (pool/reuse.h); NULL: a fresh one */
    struct exec_outcome outcome;        /* filled; release with app_run_done */
    struct response_limits limits;
    int64_t queue_wait_us;
    bool pool_hit;
    const char *timeout_rule;
    bool egress_used;
    struct egress_stats egress_stats; /* with egress: what the proxy counted */
};

/* 0 when the job ran (whatever its verdict), -EBUSY when the queue is full (answer 503),
 * -ETIMEDOUT when it waited in the queue past its timeout, -ESHUTDOWN when the server's
 * shutdown ended it (manager_abort; answer 503), other -errno when no sandbox could be started
 * (answer 500). */
int app_run_job(struct app *a, struct app_run *run);
void app_run_done(struct app_run *run);

/* The /execute handlers fill an app_reply: the response body, and what kind of failure it
 * reports, if the request itself failed (util/error.h; api/ chooses the HTTP status): NONE for
 * an answer (whatever the execution's verdict), UNAVAILABLE when the server is full or shutting
 * down, INTERNAL when no sandbox could be had. A request that asks for what cannot be is
 * refused before it reaches them (request_validate()). */
struct app_reply {
    enum sbx_errkind kind;
    json_t *body;
    unsigned retry_after; /* UNAVAILABLE: seconds */
    /* A result passed through as text (/execute JIT and EXECUTOR): body holds null where it
     * goes; render with response_render(body, raw_kind, &raw). Empty otherwise. */
    struct frame_raw raw;
    enum response_kind raw_kind;
};
/* The JIT and EXECUTOR handlers of a validated request (request_validate());
 * handlers_execute() (handlers/dispatch.h) picks one. */
void app_jit(struct app *a, const struct request_spec *s, struct app_reply *ret);
void app_executor(struct app *a, const struct request_spec *s, struct app_reply *ret);
/* Make *ret an INTERNAL error saying why (a reply that could not be built: out of memory). Its
 * body stays NULL when even that cannot be built; api/ answers 500 for a NULL body. */
void app_reply_internal(struct app_reply *ret, const char *why);
/* The context object handed to user functions: appId, componentId, requestId, traceId,
 * taskDetails (new reference). */
json_t *app_user_context(const struct request_spec *s);
/* Turn the result of app_run_job (r) into a reply: the response object, UNAVAILABLE (OVERLOADED,
 * SHUTTING_DOWN), or INTERNAL. */
void app_reply_from_run(struct app *a, const struct request_spec *s, struct app_run *run, int r,
                        enum response_kind kind, const struct framework_stats *fst,
                        struct app_reply *ret);
/* Call function of the app's script (fetched through the framework) with request_data and
 * context (borrowed), as JIT does; workflows use it for their jit steps. fst accumulates the
 * framework calls made. */
void app_jit_call(struct app *a, const struct request_spec *s, const char *script,
                  const char *function, json_t *request_data, json_t *context,
                  struct framework_stats *fst, struct app_reply *ret);
/* metrics/log bookkeeping shared by every handler */
void app_finish(struct app *a, const struct request_spec *s, struct app_reply *reply,
                int64_t start_us);

#endif
