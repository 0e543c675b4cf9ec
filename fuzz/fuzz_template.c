// SPDX-License-Identifier: MIT
/*
 * fuzz_template — an LLM template file (handlers/template.c): fetched through
 * the local framework as base64 (framework/defs.c decodes it), read by the YAML
 * loader on the host, and handed to the sandbox as part of a frame. The
 * base64 the framework sends decodes to the file's bytes; a template that
 * is not valid YAML is a TEMPLATE_ERROR naming the file; one that is
 * reaches the sandbox layer (refused with 503 by the host fixture) and its
 * document, written as a frame, reads back equal. Base64 from a remote
 * framework is decoded or refused, never overrun.
 *
 * Input: a byte of choices, then the template's text.
 */
#include <sodium.h>
#include <string.h>

#include "handlers/template.h"
#include "handlers/yaml.h"
#include "fuzz.h"
#include "host.h"

#define TEMPLATE_PATH "prompts/t.yaml"

static void check_base64(const uint8_t *data, size_t len)
{
    size_t b64_len = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = malloc(b64_len);
    FUZZ_CHECK(b64 != NULL);
    sodium_bin2base64(b64, b64_len, data, len, sodium_base64_VARIANT_ORIGINAL);
    char *text = NULL;
    size_t text_len = 0;
    FUZZ_CHECK(defs_decode(b64, &text, &text_len) == 0);
    FUZZ_CHECK(text_len == len && memcmp(text, data, len) == 0 && text[len] == '\0');
    free(text);
    free(b64);
    /* The input as base64 sent by a framework: decoded within bounds, or refused. */
    char *raw = fuzz_strndup(data, len);
    text = NULL;
    int r = defs_decode(raw, &text, &text_len);
    FUZZ_CHECK(r == 0 || r == -EBADMSG);
    if (r == 0)
        FUZZ_CHECK(text_len <= strlen(raw) / 4 * 3 + 3 && text[text_len] == '\0');
    free(text);
    free(raw);
}

static void check_reply(const struct app_reply *rep, bool valid_yaml)
{
    FUZZ_CHECK(json_is_object(rep->body) && fuzz_json_valid_utf8(rep->body));
    if (valid_yaml) {
        FUZZ_CHECK(rep->kind == SBX_ERR_UNAVAILABLE); /* reached the sandbox layer */
        return;
    }
    FUZZ_CHECK(rep->kind == SBX_ERR_NONE);
    json_t *d = json_object_get(rep->body, "data");
    FUZZ_CHECK(strcmp(json_string_value(json_object_get(d, "code")), "TEMPLATE_ERROR") == 0);
    const char *path = json_string_value(json_object_get(json_object_get(d, "details"), "path"));
    FUZZ_CHECK(path && strcmp(path, TEMPLATE_PATH) == 0);
}

void fuzz_init(void)
{
    FUZZ_CHECK(sodium_init() >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t choice = fuzz_byte(&in);
    check_base64(in.data, in.len);

    /* What the sandbox would get. */
    json_t *doc = NULL;
    char *why = NULL;
    int r = flow_yaml_load((const char *)in.data, in.len, NULL, &doc, NULL, &why);
    if (r == 0) {
        json_t *job = json_pack("{s:s, s:O, s:s}", "type", "template", "document", doc, "path",
                                TEMPLATE_PATH);
        FUZZ_CHECK(job != NULL);
        fuzz_frame_round_trip(job);
        json_decref(job);
    }
    json_decref(doc);
    free(why);

    /* The LLM handler, as /execute runs it. */
    fuzz_host_put(TEMPLATE_PATH, in.data, in.len);
    struct fuzz_host h;
    fuzz_host_init(&h);
    json_t *body =
        json_pack("{s:s, s:{s:s, s:{s:s}}, s:{s:s, s:s, s:s, s:{s:s, s:o}}}", "requestId", "r-1",
                  "requestData", "source", "fuzz", "body", "text", "hello", "context", "appId",
                  FUZZ_HOST_APP, "handlerType", "LLM", "mcp_endpoint", "local", "taskDetails",
                  "promptTemplate", TEMPLATE_PATH, "overrides",
                  choice & 1 ? json_pack("{s:i}", "maxTokens", 5) : json_object());
    struct request_spec spec;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    FUZZ_CHECK(request_parse(body, &spec, &err) == 0);
    struct app_reply rep;
    flow_llm_execute(&h.app, &spec, &rep);
    check_reply(&rep, r == 0);
    json_decref(rep.body);
    json_decref(body);
    fuzz_host_done(&h);
    return 0;
}
