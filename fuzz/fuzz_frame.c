// SPDX-License-Identifier: MIT
/*
 * fuzz_frame — the host side of the runtime protocol (proto/frame.c) and
 * what becomes of the frames (response/response.c): the bytes a sandbox writes
 * on its protocol fd, fed to the incremental reader in pieces of varying
 * size as read() would return them, frames popped after every piece as
 * exec/run.c does. Every frame is a JSON object; one written back with
 * frame_encode() reads back equal; the reader never holds more than a frame
 * and a piece; a final frame ("result" or "error") becomes a response that
 * is valid UTF-8 JSON whose messages respect the output limit, and so does
 * every outcome without one.
 *
 * Input: a byte for the piece sizes, one for the frame limit, one for the
 * output limit and one for the verdict, then the stream (which also serves
 * as the captured stdout and stderr).
 */
#include <stdlib.h>
#include <string.h>

#include "response/response.h"
#include "fuzz.h"
#include "proto/frame.h"
#include "util/jdump.h"

/* The limits are small so that the fuzzer reaches them. */
#define MAX_FRAME_LIMIT 4096

static void check_response(json_t *final, enum verdict_status status, size_t output_limit,
                           const uint8_t *out, size_t out_len, bool executor, const char *internal)
{
    struct exec_outcome o = {.verdict = {.status = status}, .final = final};
    o.internal = internal ? strdup(internal) : NULL;
    buf_init(&o.out, output_limit);
    buf_init(&o.err, output_limit);
    bool full = false;
    buf_append_capped(&o.out, out, out_len / 2, &full);
    buf_append_capped(&o.err, out + out_len / 2, out_len - out_len / 2, &full);
    o.verdict.stdout_truncated = full;
    if (status == VERDICT_KILLED)
        o.verdict.signal = (int)(out_len % 70);
    struct response_limits lim = {
        .timeout_ms = 1000, .memory_mb = 64, .output_bytes = output_limit};
    struct response_metrics m = {.mcp_calls = 1};
    json_t *resp = response_build("r-1", executor ? RESPONSE_EXECUTOR : RESPONSE_JIT, &o, &lim,
                                  status == VERDICT_PROTOCOL ? NULL : &m);
    if (status == VERDICT_INTERNAL) {
        FUZZ_CHECK(resp == NULL); /* the caller answers 500 */
    } else {
        FUZZ_CHECK(resp != NULL);
        const char *rt = json_string_value(json_object_get(resp, "resultType"));
        FUZZ_CHECK(rt && (strcmp(rt, "generic") == 0 || strcmp(rt, "httpResponse") == 0 ||
                          strcmp(rt, "error") == 0));
        FUZZ_CHECK(json_is_array(json_object_get(resp, "metrics")));
        FUZZ_CHECK(fuzz_json_valid_utf8(resp));
        json_t *data = json_object_get(resp, "data");
        if (strcmp(rt, "error") == 0) {
            const char *msg = json_string_value(json_object_get(data, "message"));
            FUZZ_CHECK(msg && json_is_string(json_object_get(data, "code")));
            FUZZ_CHECK(strlen(msg) <= output_limit + 64 || !final);
        }
        char *text = jdump(resp, JSON_COMPACT, NULL);
        FUZZ_CHECK(text != NULL);
        free(text);
    }
    json_decref(resp);
    o.final = NULL; /* borrowed */
    exec_outcome_done(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    size_t pieces = fuzz_byte(&in);
    size_t max_frame = 1 + fuzz_range(&in, MAX_FRAME_LIMIT);
    size_t output_limit = fuzz_byte(&in);
    uint8_t verdict = fuzz_byte(&in);
    enum verdict_status status = (enum verdict_status)(verdict % (VERDICT_INTERNAL + 1));
    bool executor = verdict & 0x80;

    struct frame_reader fr;
    frame_reader_init(&fr, max_frame);
    json_t *final = NULL;
    const char *broken = NULL;
    for (size_t off = 0, i = 0; off < in.len && !final && !broken; i++) {
        /* read() returns anything from one byte to a full chunk */
        size_t n = 1 + (pieces * (i + 1) * 37 + (pieces >> 4) * 511) % 97;
        if (pieces == 255)
            n = FRAME_READ_CHUNK;
        n = n < in.len - off ? n : in.len - off;
        int r = frame_reader_feed(&fr, in.data + off, n);
        off += n;
        if (r < 0) {
            FUZZ_CHECK(r == -EMSGSIZE);
            broken = "the result is larger than the limit";
            break;
        }
        FUZZ_CHECK(fr.in.len <= max_frame + FRAME_HEADER_SIZE + FRAME_READ_CHUNK);
        for (;;) {
            json_t *msg = NULL;
            const char *why = NULL;
            r = frame_reader_next(&fr, &msg, &why);
            if (r == 0)
                break;
            if (r < 0) {
                FUZZ_CHECK((r == -EMSGSIZE || r == -EBADMSG) && why && !msg);
                broken = why;
                break;
            }
            FUZZ_CHECK(json_is_object(msg));
            fuzz_frame_round_trip(msg);
            const char *type = json_string_value(json_object_get(msg, "type"));
            if (type && (strcmp(type, "result") == 0 || strcmp(type, "error") == 0)) {
                final = msg;
                break;
            }
            json_decref(msg);
        }
    }
    if (broken)
        check_response(NULL, VERDICT_PROTOCOL, output_limit, in.data, in.len, executor, broken);
    else
        check_response(final, final ? status : (status == VERDICT_OK ? VERDICT_EXITED : status),
                       output_limit, in.data, in.len, executor, NULL);
    json_decref(final);
    frame_reader_done(&fr);
    return 0;
}
