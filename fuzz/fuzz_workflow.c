// SPDX-License-Identifier: MIT
/*
 * fuzz_workflow — a WORKFLOW request end to end on the host
 * (handlers/workflow.c, handlers/validate.c, handlers/yaml.c): the workflow file is
 * the input, fetched through the local framework like any definition,
 * parsed, validated, and run — control steps, mcp steps on the local
 * framework (core.state, the echo LLM, logs), paths and conditions, step
 * mode with state kept between requests. Steps that need a sandbox are
 * refused by the host fixture (503). Whatever the document, the answer is a
 * response object (200) or 503, valid UTF-8 JSON with a known resultType;
 * a workflow that passed validation never meets a malformed condition.
 *
 * Input: a byte of choices, the stepId line, the requestData line (JSON),
 * then the workflow's YAML.
 */
#include <string.h>

#include "handlers/workflow.h"
#include "fuzz.h"
#include "host.h"
#include "util/fmt.h"
#include "util/jdump.h"

#define WORKFLOW_PATH "flows/w.yaml"

static json_t *request_body(const char *step_id, json_t *request_data, bool with_state)
{
    json_t *info = json_pack("{s:s}", "workflowId", WORKFLOW_PATH);
    if (step_id && *step_id)
        json_object_set_new(info, "stepId", json_string(step_id));
    if (with_state)
        json_object_set_new(info, "state", json_pack("{s:i, s:[s]}", "n", 2, "tags", "a"));
    json_object_set_new(info, "runId", json_string("run-1"));
    return json_pack("{s:s, s:o, s:{s:s, s:s, s:s, s:o}}", "requestId", "r-1", "requestData",
                     request_data, "context", "appId", FUZZ_HOST_APP, "handlerType", "WORKFLOW",
                     "mcp_endpoint", "local", "workflowInfo", info);
}

static void check_reply(const struct app_reply *rep)
{
    FUZZ_CHECK(rep->kind == SBX_ERR_NONE || rep->kind == SBX_ERR_UNAVAILABLE);
    FUZZ_CHECK(json_is_object(rep->body) && fuzz_json_valid_utf8(rep->body));
    char *text = jdump(rep->body, JSON_COMPACT, NULL);
    FUZZ_CHECK(text != NULL);
    free(text);
    if (rep->kind != SBX_ERR_NONE)
        return;
    const char *rt = json_string_value(json_object_get(rep->body, "resultType"));
    FUZZ_CHECK(rt && (strcmp(rt, "generic") == 0 || strcmp(rt, "httpResponse") == 0 ||
                      strcmp(rt, "error") == 0 || strcmp(rt, "workflowStep") == 0));
    json_t *data = json_object_get(rep->body, "data");
    if (strcmp(rt, "error") == 0) {
        const char *msg = json_string_value(json_object_get(data, "message"));
        FUZZ_CHECK(json_is_string(json_object_get(data, "code")) && msg);
        /* wf_next()'s message for a condition it cannot evaluate */
        const char *step =
            json_string_value(json_object_get(json_object_get(data, "details"), "stepId"));
        char *malformed = step ? fmt_str("step %s: a condition is malformed", step) : NULL;
        FUZZ_CHECK(!malformed || strcmp(msg, malformed) != 0);
        free(malformed);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t choice = fuzz_byte(&in);
    size_t step_len, rd_len;
    const uint8_t *step_raw = fuzz_split(&in, '\n', &step_len);
    const uint8_t *rd_raw = fuzz_split(&in, '\n', &rd_len);
    char *step_id = fuzz_strndup(step_raw, step_len);
    json_t *rd = json_loadb((const char *)rd_raw, rd_len, 0, NULL);
    if (!json_is_object(rd)) {
        json_decref(rd);
        rd = json_pack("{s:s, s:{s:s, s:i, s:[i,i]}}", "source", "fuzz", "body", "text", "hello",
                       "n", 3, "list", 1, 2);
    }
    if (!json_is_string(json_object_get(rd, "source")))
        json_object_set_new(rd, "source", json_string("fuzz"));

    fuzz_host_put(WORKFLOW_PATH, in.data, in.len);
    struct fuzz_host h;
    fuzz_host_init(&h);
    h.app.opt.max_workflow_steps = choice & 0x80 ? 1 + (choice & 0x3f) : 0;
    json_t *body = request_body(choice & 1 ? step_id : NULL, rd, choice & 2);
    struct request_spec spec;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    if (request_parse(body, &spec, &err) == 0) {
        struct app_reply rep;
        flow_workflow_execute(&h.app, &spec, &rep);
        check_reply(&rep);
        if (choice & 1) { /* step mode: the next request sees what this one kept */
            json_decref(rep.body);
            flow_workflow_execute(&h.app, &spec, &rep);
            check_reply(&rep);
        }
        json_decref(rep.body);
    }
    json_decref(body);
    fuzz_host_done(&h);
    free(step_id);
    return 0;
}
