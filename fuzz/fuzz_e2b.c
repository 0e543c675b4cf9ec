// SPDX-License-Identifier: MIT
/*
 * fuzz_e2b — what E2B's clients and sandboxes hand the e2b module (src/e2b/):
 *   - the Connect envelope reader (e2b/connect.c) over a request body (any E2B client): a
 *     body it takes is exactly one uncompressed, non-final envelope of a JSON object, which
 *     written out again (connect_envelope) reads back equal; a body it refuses says why; the
 *     unary reader takes JSON objects only;
 *   - the NDJSON writer (e2b/ndjson.c) over what a code context reports (the sandbox): a line
 *     it writes is one line, one JSON object of a known type with only the members E2B
 *     defines, each of its type; a well-formed stdout/stderr/error report always gets a line;
 *   - the end-of-stream message of any Connect code: one final envelope naming a known code.
 * Input: a byte choosing the part (0 envelope, 1 unary body, 2 a context's report as JSON
 * text, 3 an error code name), then the bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "e2b/connect.h"
#include "e2b/ndjson.h"
#include "fuzz.h"

static void fuzz_envelope(const uint8_t *data, size_t len, bool stream)
{
    json_t *msg = NULL;
    const char *why = NULL;
    int r = stream ? connect_read_envelope(data, len, &msg, &why)
                   : connect_read_unary(data, len, &msg, &why);
    if (r < 0) {
        FUZZ_CHECK(why != NULL && *why && msg == NULL);
        return;
    }
    FUZZ_CHECK(r == 0 && json_is_object(msg));
    if (stream) {
        FUZZ_CHECK(len >= CONNECT_ENVELOPE_HEADER && data[0] == 0);
        size_t n = (size_t)data[1] << 24 | (size_t)data[2] << 16 | (size_t)data[3] << 8 | data[4];
        FUZZ_CHECK(n == len - CONNECT_ENVELOPE_HEADER && n <= CONNECT_MESSAGE_MAX);
    }
    size_t out_len = 0;
    char *out = connect_envelope(0, msg, &out_len);
    FUZZ_CHECK(out != NULL);
    json_t *again = NULL;
    FUZZ_CHECK(connect_read_envelope(out, out_len, &again, &why) == 0);
    FUZZ_CHECK(json_equal(msg, again));
    json_decref(again);
    free(out);
    json_decref(msg);
}

/* Every member of a written line is one E2B defines for its type, of that member's type. */
static void check_line(const json_t *in, const json_t *line)
{
    static const char *const strings[] = {"text", "html",  "markdown",  "svg",        "png",
                                          "jpeg", "pdf",   "latex",     "javascript", "timestamp",
                                          "name", "value", "traceback", "type"};
    static const char *const objects[] = {"data", "chart", "extra"};
    const char *type = json_string_value(json_object_get(line, "type"));
    FUZZ_CHECK(type && strcmp(type, json_string_value(json_object_get(in, "type"))) == 0);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)line, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof(strings) / sizeof(*strings); i++)
            if (strcmp(key, strings[i]) == 0)
                known = json_is_string(v);
        for (size_t i = 0; i < sizeof(objects) / sizeof(*objects); i++)
            if (strcmp(key, objects[i]) == 0)
                known = json_is_object(v);
        if (strcmp(key, "is_main_result") == 0)
            known = json_is_boolean(v);
        if (strcmp(key, "execution_count") == 0)
            known = json_is_integer(v) && json_integer_value(v) >= 0;
        if (strcmp(key, "json") == 0)
            known = strcmp(type, "result") == 0;
        FUZZ_CHECK(known);
        FUZZ_CHECK(json_equal(v, json_object_get(in, key)));
    }
}

static void fuzz_ndjson(const uint8_t *data, size_t len)
{
    json_t *in = json_loadb((const char *)data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!in)
        return;
    size_t n = 0;
    char *line = ndjson_line(in, &n);
    json_t *t = json_object_get(in, "type");
    const char *type = json_string_value(t);
    bool printed =
        type && json_string_length(t) == 6 &&
        (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) &&
        json_is_string(json_object_get(in, "text")) &&
        (!json_object_get(in, "timestamp") || json_is_string(json_object_get(in, "timestamp")));
    FUZZ_CHECK(!printed || line != NULL);
    if (line) {
        FUZZ_CHECK(n > 1 && line[n - 1] == '\n' && memchr(line, '\n', n) == line + n - 1);
        FUZZ_CHECK(strlen(line) == n); /* no raw NUL: JSON escapes it */
        json_t *back = json_loadb(line, n - 1, JSON_ALLOW_NUL, NULL);
        FUZZ_CHECK(json_is_object(back));
        check_line(in, back);
        json_decref(back);
        free(line);
    }
    json_decref(in);
}

static void fuzz_end(const uint8_t *data, size_t len)
{
    char *code = fuzz_strndup(data, len);
    struct sbx_error e = {
        .kind = (enum sbx_errkind)(len % SBX_ERR_KIND_COUNT_), .code = code, .message = code};
    size_t n = 0;
    char *env = connect_end_stream(&e, &n);
    FUZZ_CHECK(env && n > CONNECT_ENVELOPE_HEADER &&
               (unsigned char)env[0] == CONNECT_FLAG_END_STREAM);
    json_t *end = json_loadb(env + CONNECT_ENVELOPE_HEADER, n - CONNECT_ENVELOPE_HEADER,
                             JSON_ALLOW_NUL, NULL);
    const char *name = json_string_value(json_object_get(json_object_get(end, "error"), "code"));
    FUZZ_CHECK(name && connect_code_lookup(name, NULL, NULL));
    FUZZ_CHECK(connect_status_of(&e) >= 400 && connect_status_of(&e) <= 599);
    json_decref(end);
    free(env);
    free(code);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    switch (fuzz_byte(&in) % 4) {
    case 0:
        fuzz_envelope(in.data, in.len, true);
        break;
    case 1:
        fuzz_envelope(in.data, in.len, false);
        break;
    case 2:
        fuzz_ndjson(in.data, in.len);
        break;
    default:
        fuzz_end(in.data, in.len);
    }
    return 0;
}
