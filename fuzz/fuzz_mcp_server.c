// SPDX-License-Identifier: MIT
/*
 * fuzz_mcp_server — JSON-RPC (proto/jsonrpc.c) and the MCP server's message
 * handling (mcpserver*.c) as a client drives them: the input is what the
 * client writes on stdin of `sandboxd mcp`, one message per line, handled
 * on one connection in order (initialize, tools/list with cursors,
 * tools/call of every tool with any arguments, cancellations, batches).
 * Sandboxes are never started: the sessions behind run_python admit none,
 * so a valid call ends as a tool error. Every request gets exactly one
 * answer carrying its id, a notification or a response gets none, every
 * answer classifies as a response and reads back equal after being
 * written, and any message written by jsonrpc_format() parses back equal.
 *
 * Input: lines of JSON.
 */
#include <string.h>

#include "fuzz.h"
#include "mcpclient/config.h"
#include "proto/jsonrpc.h"
#include "mcpclient/registry.h"
#include "mcpserver/server.h"
#include "session/session.h"

static struct mcp_server *server;

static void check_written(const json_t *msg)
{
    char *text = jsonrpc_format(msg);
    FUZZ_CHECK(text != NULL && !strchr(text, '\n'));
    json_t *back = NULL;
    FUZZ_CHECK(jsonrpc_parse(text, strlen(text), &back) == 0);
    FUZZ_CHECK(fuzz_json_equal(msg, back));
    json_decref(back);
    free(text);
}

/* answer to one message that is not a batch */
static void check_answer(json_t *msg, json_t *answer)
{
    struct jsonrpc_message m;
    enum jsonrpc_kind kind = jsonrpc_classify(msg, &m);
    if (kind == JSONRPC_NOTIFICATION || kind == JSONRPC_RESPONSE ||
        kind == JSONRPC_ERROR_RESPONSE) {
        FUZZ_CHECK(answer == NULL);
        return;
    }
    FUZZ_CHECK(answer != NULL); /* a request, or something invalid: answered */
    struct jsonrpc_message a;
    enum jsonrpc_kind akind = jsonrpc_classify(answer, &a);
    FUZZ_CHECK(akind == JSONRPC_RESPONSE || akind == JSONRPC_ERROR_RESPONSE);
    if (kind == JSONRPC_REQUEST)
        FUZZ_CHECK(jsonrpc_id_equal(a.id, m.id));
    else
        FUZZ_CHECK(akind == JSONRPC_ERROR_RESPONSE &&
                   (json_is_null(a.id) || jsonrpc_id_valid(a.id)));
    check_written(answer);
}

static void handle(struct mcp_server_conn *c, json_t *msg)
{
    struct mcp_server_peek peek;
    mcp_server_peek(msg, &peek);
    FUZZ_CHECK(peek.batch == json_is_array(msg));
    const char *version_before = mcp_server_conn_version(c);
    json_t *answer = mcp_server_handle(c, msg, NULL);
    if (!peek.batch) {
        check_answer(msg, answer);
        FUZZ_CHECK(!peek.has_request || answer);
    } else if (answer) {
        FUZZ_CHECK(json_is_array(answer) || json_is_object(answer));
        if (json_is_array(answer))
            FUZZ_CHECK(version_before && strcmp(version_before, "2025-03-26") == 0 &&
                       json_array_size(answer) <= json_array_size(msg));
        for (size_t i = 0; i < (json_is_array(answer) ? json_array_size(answer) : 1); i++) {
            struct jsonrpc_message a;
            json_t *one = json_is_array(answer) ? json_array_get(answer, i) : answer;
            enum jsonrpc_kind akind = jsonrpc_classify(one, &a);
            FUZZ_CHECK(akind == JSONRPC_RESPONSE || akind == JSONRPC_ERROR_RESPONSE);
        }
        check_written(answer);
    }
    const char *version = mcp_server_conn_version(c);
    FUZZ_CHECK(!version || mcp_server_version_supported(version));
    FUZZ_CHECK(!version_before || version == version_before);
    FUZZ_CHECK(mcp_server_conn_busy(c) == 0);
    json_decref(answer);
}

void fuzz_init(void)
{
    struct mcp_config cfg = {0};
    struct mcp_registry *registry;
    struct sessions *sessions;
    struct sessions_options so = {.max_sessions = 0,
                                  .default_timeout_ms = 1000,
                                  .max_timeout_ms = 1000,
                                  .default_idle_s = 1,
                                  .max_idle_s = 1};
    struct mcp_server_options opt = {
        .page_size = 2, /* tools/list takes two pages: cursors matter */
        .default_timeout_ms = 1000,
        .max_timeout_ms = 2000,
        .lookup_timeout_ms = 100,
        .transport = "stdio",
    };
    /* They live as long as the process. */
    FUZZ_CHECK(mcp_registry_new(&cfg, &registry) == 0);
    FUZZ_CHECK(sessions_new(&so, NULL, NULL, registry, NULL, NULL, &sessions) == 0);
    FUZZ_CHECK(mcp_server_new(&opt, sessions, registry, &server) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    struct mcp_server_conn *c;
    FUZZ_CHECK(mcp_server_conn_new(server, &c) == 0);
    while (in.len > 0) {
        size_t len;
        const char *line = (const char *)fuzz_split(&in, '\n', &len);
        json_t *msg = NULL;
        /* Valid JSON (RFC 8259, which allows \u0000 in strings) is never "not JSON". */
        json_t *any = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        int r = jsonrpc_parse(line, len, &msg);
        FUZZ_CHECK(!any || r == 0);
        json_decref(any);
        if (r < 0) {
            json_t *e = mcp_server_parse_error("the line is not JSON");
            struct jsonrpc_message m;
            FUZZ_CHECK(jsonrpc_classify(e, &m) == JSONRPC_ERROR_RESPONSE &&
                       m.error_code == JSONRPC_PARSE_ERROR);
            json_decref(e);
            continue;
        }
        check_written(msg);
        handle(c, msg);
        json_decref(msg);
    }
    mcp_server_conn_close(c);
    mcp_server_conn_unref(c);
    return 0;
}
