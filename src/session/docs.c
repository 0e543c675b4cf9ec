// SPDX-License-Identifier: MIT
/*
 * docs — the docs of MCP tools as the session runtime renders them (the text of
 * the typed stubs: runtime/sandboxd_runtime/stubs.py), for those that show
 * tools outside a session: sandboxd mcp's search_tool_docs. The schemas are
 * the servers', so they are rendered where everything a server sends is
 * handled, in a sandbox: one job in a warm (else cold) interpreter, which
 * answers and exits. One renderer, the same text wherever a tool is shown.
 */
#include <errno.h>
#include <string.h>

#include "exec/run.h"
#include "pool/pool.h"
#include "session/session_int.h"
#include "util/clock.h"

#define DOCS_TIMEOUT_US (10 * 1000000) /* rendering 1,000 tools takes about 150 ms */

int sessions_tool_docs(struct sessions *ss, json_t *servers, const char *detail, json_t **ret_docs,
                       struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    json_t *job = json_pack("{s:s, s:O, s:s}", "type", "tool_docs", "servers", servers, "detail",
                            detail && strcmp(detail, "full") == 0 ? "full" : "summary");
    if (!job) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return -ENOMEM;
    }
    json_object_set_new(job, "limits", json_pack("{s:I}", "outputBytes", (json_int_t)65536));
    struct jail_limits lim = jail_limits_default(ss->jail);
    lim.memory = ss->opt.default_memory_mb << 20;
    lim.nproc = ss->opt.nproc;
    struct cell *cell = NULL;
    bool hit = false;
    int r = ss->pool ? pool_acquire(ss->pool, &lim, clock_mono_us() + DOCS_TIMEOUT_US, &cell, &hit)
                     : cell_spawn_cold(ss->jail, &lim, ss->opt.max_frame, &cell);
    if (r < 0) {
        json_decref(job);
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL,
                      "no sandbox could be started to render the docs: %s", strerror(-r));
        return r;
    }
    struct exec_request req = {
        .job = job,
        .timeout_us = DOCS_TIMEOUT_US,
        .output_limit = 65536,
        .final_type = "result",
    };
    struct exec_outcome o = {0};
    r = exec_run(cell, &req, &o);
    json_decref(job);
    json_t *docs = json_object_get(o.final, "docs");
    if (r == 0 && json_is_object(docs)) {
        *ret_docs = json_incref(docs);
    } else {
        const char *m = json_string_value(json_object_get(o.final, "message"));
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "the docs could not be rendered: %s",
                      m            ? m
                      : o.internal ? o.internal
                                   : verdict_status_name(o.verdict.status));
        r = r < 0 ? r : -EIO;
    }
    exec_outcome_done(&o);
    cell_free(cell);
    return r;
}
