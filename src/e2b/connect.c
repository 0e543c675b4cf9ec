// SPDX-License-Identifier: MIT
/*
 * connect — see connect.h.
 */
#include "e2b/connect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/jdump.h"
#include "util/utf8.h"
#include "util/macros.h"

/* The Connect codes, their HTTP statuses (connect-es codeToHttpStatus) and sandboxd's kinds. */
static const struct {
    const char *name;
    enum sbx_errkind kind;
    int status;
} connect_codes[] = {
    {"canceled", SBX_ERR_UNAVAILABLE, 499},        {"unknown", SBX_ERR_INTERNAL, 500},
    {"invalid_argument", SBX_ERR_INVALID, 400},    {"deadline_exceeded", SBX_ERR_UNAVAILABLE, 504},
    {"not_found", SBX_ERR_NOT_FOUND, 404},         {"already_exists", SBX_ERR_INVALID, 409},
    {"permission_denied", SBX_ERR_INVALID, 403},   {"resource_exhausted", SBX_ERR_LIMIT, 429},
    {"failed_precondition", SBX_ERR_INVALID, 400}, {"aborted", SBX_ERR_UNAVAILABLE, 409},
    {"out_of_range", SBX_ERR_INVALID, 400},        {"unimplemented", SBX_ERR_INVALID, 501},
    {"internal", SBX_ERR_INTERNAL, 500},           {"unavailable", SBX_ERR_UNAVAILABLE, 503},
    {"data_loss", SBX_ERR_INTERNAL, 500},          {"unauthenticated", SBX_ERR_INVALID, 401},
};

bool connect_code_lookup(const char *name, enum sbx_errkind *ret_kind, int *ret_status)
{
    for (size_t i = 0; name && i < ARRAY_SIZE(connect_codes); i++)
        if (strcmp(name, connect_codes[i].name) == 0) {
            if (ret_kind)
                *ret_kind = connect_codes[i].kind;
            if (ret_status)
                *ret_status = connect_codes[i].status;
            return true;
        }
    return false;
}

const char *connect_code_name(const char *name)
{
    for (size_t i = 0; name && i < ARRAY_SIZE(connect_codes); i++)
        if (strcmp(name, connect_codes[i].name) == 0)
            return connect_codes[i].name;
    return NULL;
}

const char *connect_code_of(const struct sbx_error *e)
{
    const char *known = connect_code_name(e->code);
    if (known)
        return known;
    switch (e->kind) {
    case SBX_ERR_INVALID:
        return "invalid_argument";
    case SBX_ERR_NOT_FOUND:
    case SBX_ERR_GONE:
        return "not_found";
    case SBX_ERR_TOO_LARGE:
    case SBX_ERR_LIMIT:
        return "resource_exhausted";
    case SBX_ERR_UNAVAILABLE:
    case SBX_ERR_UPSTREAM:
        return "unavailable";
    case SBX_ERR_FORBIDDEN:
        return "permission_denied";
    case SBX_ERR_CONFLICT:
        return "failed_precondition";
    case SBX_ERR_UNAUTHORIZED:
        return "unauthenticated";
    case SBX_ERR_METHOD:
        return "unimplemented";
    case SBX_ERR_MEDIA_TYPE:
    case SBX_ERR_NOT_ACCEPTABLE:
        return "invalid_argument";
    case SBX_ERR_NONE:
    case SBX_ERR_INTERNAL:
    case SBX_ERR_KIND_COUNT_:
        break;
    }
    return "internal";
}

int connect_status_of(const struct sbx_error *e)
{
    int status = 500;
    (void)connect_code_lookup(connect_code_of(e), NULL, &status);
    return status;
}

json_t *connect_text(const char *text)
{
    size_t n = 0;
    char *clean = utf8_sanitize(text, strlen(text), &n);
    json_t *s = clean ? json_stringn(clean, n) : NULL;
    free(clean);
    return s;
}

json_t *connect_error_json(const struct sbx_error *e)
{
    /* A message may quote what a client sent (a path), which need not be UTF-8. */
    return json_pack("{s:s, s:o}", "code", connect_code_of(e), "message",
                     connect_text(e->message ? e->message : "failed"));
}

static int connect_parse_object(const char *data, size_t len, json_t **ret, const char **ret_why)
{
    json_error_t jerr;
    /* No NUL inside strings: no field of a request may carry one. */
    json_t *msg = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!msg) {
        *ret_why = "the message is not JSON";
        return -EINVAL;
    }
    if (!json_is_object(msg)) {
        json_decref(msg);
        *ret_why = "the message is not a JSON object";
        return -EINVAL;
    }
    *ret = msg;
    return 0;
}

int connect_read_envelope(const void *body, size_t len, json_t **ret, const char **ret_why)
{
    const unsigned char *b = body;
    if (len < CONNECT_ENVELOPE_HEADER) {
        *ret_why = "the body is not a Connect envelope (shorter than its 5-byte header)";
        return -EINVAL;
    }
    unsigned flags = b[0];
    uint32_t n = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];
    if (flags & CONNECT_FLAG_COMPRESSED) {
        *ret_why = "compressed envelopes are not supported (send Connect-Content-Encoding "
                   "identity)";
        return -EINVAL;
    }
    if (flags != 0) {
        *ret_why = "the request envelope has unknown or end-of-stream flags";
        return -EINVAL;
    }
    if (n > CONNECT_MESSAGE_MAX) {
        *ret_why = "the request message is larger than 4 MiB";
        return -EINVAL;
    }
    if ((size_t)n != len - CONNECT_ENVELOPE_HEADER) {
        *ret_why = "the envelope's length does not match the body (exactly one message is "
                   "expected)";
        return -EINVAL;
    }
    return connect_parse_object((const char *)b + CONNECT_ENVELOPE_HEADER, n, ret, ret_why);
}

int connect_read_unary(const void *body, size_t len, json_t **ret, const char **ret_why)
{
    if (len == 0) {
        *ret = json_object();
        return *ret ? 0 : -ENOMEM;
    }
    if (len > CONNECT_MESSAGE_MAX) {
        *ret_why = "the request message is larger than 4 MiB";
        return -EINVAL;
    }
    return connect_parse_object(body, len, ret, ret_why);
}

char *connect_envelope(unsigned flags, const json_t *msg, size_t *ret_len)
{
    size_t n = 0;
    char *text = jdump(msg, JSON_COMPACT, &n);
    if (!text || n > UINT32_MAX) {
        free(text);
        return NULL;
    }
    char *out = malloc(CONNECT_ENVELOPE_HEADER + n);
    if (out) {
        out[0] = (char)flags;
        out[1] = (char)(n >> 24);
        out[2] = (char)(n >> 16);
        out[3] = (char)(n >> 8);
        out[4] = (char)n;
        memcpy(out + CONNECT_ENVELOPE_HEADER, text, n);
        *ret_len = CONNECT_ENVELOPE_HEADER + n;
    }
    free(text);
    return out;
}

char *connect_end_stream(const struct sbx_error *e, size_t *ret_len)
{
    json_t *end = e ? json_pack("{s:o}", "error", connect_error_json(e)) : json_object();
    char *out = end ? connect_envelope(CONNECT_FLAG_END_STREAM, end, ret_len) : NULL;
    json_decref(end);
    return out;
}
