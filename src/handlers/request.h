// SPDX-License-Identifier: MIT
/*
 * request — validation of the /execute body (CONTRACT §3-5, 8), in this one
 * place: its form (request_parse()), then what this server can give it
 * (request_validate(): the framework endpoint, the network policy, the
 * profile, the files). Everything is checked before anything runs, and the
 * handlers trust the spec: a missing or mistyped field is reported by its
 * dotted path ("context.taskDetails.script") so the client can fix it.
 * Borrowed pointers only (but the network policy, request_done()): the spec
 * lives as long as the parsed body.
 */
#ifndef SANDBOXD_HANDLERS_REQUEST_H
#define SANDBOXD_HANDLERS_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/handlers.h"
#include "util/error.h"

struct app;
struct egress_policy;
struct pool;

/* The handler types of /execute (HANDLER_TYPES, proto/handlers.h): context.handlerType is the
 * name, HANDLER_<name> the value; handlers_execute() (dispatch.c) does not build without a case
 * for each. */
enum handler_type {
#define HANDLER_ENUM(name) HANDLER_##name,
    HANDLER_TYPES(HANDLER_ENUM)
#undef HANDLER_ENUM
};
#define HANDLER_ONE(name) +1
enum { HANDLER_COUNT = 0 HANDLER_TYPES(HANDLER_ONE) };
#undef HANDLER_ONE

struct request_spec {
    const char *request_id;
    json_t *request_data;
    json_t *context;
    json_t *task;         /* taskDetails, may be NULL for WORKFLOW */
    const char *endpoint; /* context.mcp_endpoint */
    enum handler_type handler;
    const char *handler_name;
    const char *app_id; /* NULL when absent (EXECUTOR) */
    const char *component_id;
    const char *trace_id;
    /* JIT */
    const char *script;
    const char *function;
    /* EXECUTOR */
    const char *code;
    const char *class_name;
    const char *method_name;
    const char *function_name;
    json_t *method_params;
    /* LLM */
    const char *prompt_template;
    json_t *overrides;
    /* WORKFLOW */
    const char *workflow_id;
    const char *step_id;
    const char *run_id; /* at most 256 bytes */
    json_t *workflow_state;
    /* limits; 0 = not requested */
    int64_t timeout_ms;
    int64_t memory_mb;
    /* data work, JIT and EXECUTOR (CONTRACT §12) */
    const char *profile; /* NULL: the default pool */
    json_t *files;       /* {relative path: base64}, checked; NULL when absent */
    size_t files_bytes;  /* their decoded size */
    json_t *collect;     /* [glob], checked; NULL when absent */
    /* request_validate(): the profile's pool (NULL: the default one) and the memory an
     * execution of it gets when the request names none (0: the server's default). With a
     * network policy, the pool of network cells it takes one from, the profile's or the
     * server's (NULL: a fresh cell). */
    struct pool *pool;
    uint64_t profile_memory_mb;
    /* JIT and EXECUTOR: taskDetails.network, an object; NULL: no network. request_validate()
     * checks it against the server's ceiling into egress (owned: request_done()). */
    json_t *network;
    struct egress_policy *egress;
    /* the caller's tenant name (NULL: the operator), set by the API after parsing: whose
     * executions may share a kept interpreter (CONTRACT §14) */
    const char *tenant;
    struct egress_share *egress_share; /* the tenant's part of the proxy (borrowed); NULL: none */
};

#define REQUEST_MAX_ID      256
#define REQUEST_MAX_FILES   1000 /* entries of taskDetails.files */
#define REQUEST_MAX_COLLECT 64   /* globs of taskDetails.collect */

/* The form of body. 0, or -EINVAL with *err: INVALID, code INVALID_REQUEST, naming the field (""
 * when the body itself is wrong), the message "FIELD: what is wrong". */
int request_parse(json_t *body, struct request_spec *ret, struct sbx_error *err);
/* request_parse(), then what server a can give it: the endpoint in the framework allowlist
 * (FORBIDDEN FRAMEWORK_NOT_ALLOWED, before any connection), the network policy within the
 * --egress-allow ceiling (INVALID NETWORK_NOT_ALLOWED), a profile that exists (INVALID), files
 * that fit in a sandbox's /tmp (TOO_LARGE FILES_TOO_LARGE). 0 with *ret, which the handlers
 * take as it is; <0 with *err. Call request_done() either way. */
int request_validate(struct app *a, json_t *body, struct request_spec *ret, struct sbx_error *err);
/* Free what a validated spec owns (its network policy); safe on a zeroed or failed one. */
void request_done(struct request_spec *s);
/* "JIT", ...: the name of h. */
const char *handler_name(enum handler_type h);

#endif
