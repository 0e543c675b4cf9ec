// SPDX-License-Identifier: MIT
/*
 * dispatch — /execute's one entry: hand the request, validated already
 * (request_validate(), handlers/request.c), to its handler (JIT and EXECUTOR in
 * handlers/execute.c, LLM in handlers/template.c, WORKFLOW in
 * handlers/workflow.c), and do the metrics and log
 * bookkeeping every handler shares.
 */
#include "handlers/dispatch.h"
#include "handlers/template.h"
#include "handlers/workflow.h"
#include "util/clock.h"
#include "util/log.h"

void handlers_execute(struct app *a, const struct request_spec *s, struct app_reply *ret)
{
    *ret = (struct app_reply){0};
    int64_t start = clock_mono_us();
    log_context_set(s->request_id, s->app_id);
    switch (s->handler) {
    case HANDLER_JIT:
        app_jit(a, s, ret);
        break;
    case HANDLER_EXECUTOR:
        app_executor(a, s, ret);
        break;
    case HANDLER_LLM:
        flow_llm_execute(a, s, ret);
        break;
    case HANDLER_WORKFLOW:
        flow_workflow_execute(a, s, ret);
        break;
    }
    /* Every handler's reply is built with json_pack: one that came back without a body could
     * not be built (out of memory), and is answered as that rather than as an empty 200. */
    if (!ret->body && !ret->raw.text)
        app_reply_internal(ret, "out of memory: the reply could not be built");
    app_finish(a, s, ret, start);
    log_context_clear();
}
