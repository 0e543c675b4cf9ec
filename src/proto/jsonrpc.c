// SPDX-License-Identifier: MIT
/*
 * jsonrpc — see jsonrpc.h. The classifier is strict about the envelope
 * ("jsonrpc": "2.0", exactly one of method / result / error, typed id) and
 * indifferent to everything else, so a peer's extensions pass through.
 */
#include "proto/jsonrpc.h"

#include <errno.h>
#include <string.h>

#include "util/macros.h"
#include "util/jdump.h"

const char *jsonrpc_kind_name(enum jsonrpc_kind kind)
{
    static const char *const names[] = {"invalid", "request", "notification", "response",
                                        "error response"};
    return (size_t)kind < ARRAY_SIZE(names) ? names[kind] : "invalid";
}

bool jsonrpc_id_valid(const json_t *id)
{
    return id && (json_is_integer(id) || json_is_string(id));
}

bool jsonrpc_id_equal(const json_t *a, const json_t *b)
{
    if (!jsonrpc_id_valid(a) || !jsonrpc_id_valid(b))
        return false;
    if (json_is_integer(a))
        return json_is_integer(b) && json_integer_value(a) == json_integer_value(b);
    return json_is_string(b) && json_string_length(a) == json_string_length(b) &&
           memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
}

static enum jsonrpc_kind jsonrpc_invalid(struct jsonrpc_message *ret, const char *why)
{
    ret->kind = JSONRPC_INVALID;
    ret->invalid = why;
    return ret->kind;
}

enum jsonrpc_kind jsonrpc_classify(json_t *msg, struct jsonrpc_message *ret)
{
    *ret = (struct jsonrpc_message){0};
    if (!json_is_object(msg))
        return jsonrpc_invalid(ret, "not a JSON object");
    json_t *id = json_object_get(msg, "id");
    if (jsonrpc_id_valid(id) || json_is_null(id))
        ret->id = id;
    const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
    if (!version || strcmp(version, "2.0") != 0)
        return jsonrpc_invalid(ret, "\"jsonrpc\" is not \"2.0\"");

    json_t *method = json_object_get(msg, "method");
    json_t *result = json_object_get(msg, "result");
    json_t *error = json_object_get(msg, "error");
    if ((method != NULL) + (result != NULL) + (error != NULL) != 1)
        return jsonrpc_invalid(ret, "needs exactly one of \"method\", \"result\" and \"error\"");

    if (method) {
        if (!json_is_string(method) || json_string_length(method) == 0)
            return jsonrpc_invalid(ret, "\"method\" is not a non-empty string");
        json_t *params = json_object_get(msg, "params");
        if (params && !json_is_object(params) && !json_is_array(params))
            return jsonrpc_invalid(ret, "\"params\" is neither an object nor an array");
        ret->method = json_string_value(method);
        ret->params = params;
        if (!id) {
            ret->kind = JSONRPC_NOTIFICATION;
            return ret->kind;
        }
        /* MCP forbids null ids; JSON-RPC forbids fractions. */
        if (!jsonrpc_id_valid(id))
            return jsonrpc_invalid(ret, "the request id is neither an integer nor a string");
        ret->kind = JSONRPC_REQUEST;
        return ret->kind;
    }

    if (result) {
        if (!jsonrpc_id_valid(id))
            return jsonrpc_invalid(ret, "the response id is neither an integer nor a string");
        ret->result = result;
        ret->kind = JSONRPC_RESPONSE;
        return ret->kind;
    }

    if (!id || !(jsonrpc_id_valid(id) || json_is_null(id)))
        return jsonrpc_invalid(ret, "the error response has no usable id");
    json_t *code = json_object_get(error, "code");
    json_t *message = json_object_get(error, "message");
    if (!json_is_object(error) || !json_is_integer(code) || !json_is_string(message))
        return jsonrpc_invalid(ret, "\"error\" needs an integer code and a string message");
    ret->error_code = json_integer_value(code);
    ret->error_message = json_string_value(message);
    ret->error_data = json_object_get(error, "data");
    ret->kind = JSONRPC_ERROR_RESPONSE;
    return ret->kind;
}

json_t *jsonrpc_request_new(json_t *id, const char *method, json_t *params)
{
    json_t *m = json_pack("{s:s, s:O, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
    if (m && params && json_object_set(m, "params", params) < 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

json_t *jsonrpc_request_new_int(json_int_t id, const char *method, json_t *params)
{
    json_t *jid = json_integer(id);
    if (!jid)
        return NULL;
    json_t *m = jsonrpc_request_new(jid, method, params);
    json_decref(jid);
    return m;
}

json_t *jsonrpc_notification_new(const char *method, json_t *params)
{
    json_t *m = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (m && params && json_object_set(m, "params", params) < 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

json_t *jsonrpc_result_new(json_t *id, json_t *result)
{
    if (result)
        return json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id, "result", result);
    return json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
}

json_t *jsonrpc_error_new(json_t *id, int code, const char *message, json_t *data)
{
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message",
                            message ? message : jsonrpc_error_text(code));
    if (!err)
        return NULL;
    if (data && json_object_set(err, "data", data) < 0) {
        json_decref(err);
        return NULL;
    }
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
                     err);
}

const char *jsonrpc_error_text(int code)
{
    switch (code) {
    case JSONRPC_PARSE_ERROR:
        return "Parse error";
    case JSONRPC_INVALID_REQUEST:
        return "Invalid Request";
    case JSONRPC_METHOD_NOT_FOUND:
        return "Method not found";
    case JSONRPC_INVALID_PARAMS:
        return "Invalid params";
    case JSONRPC_INTERNAL_ERROR:
        return "Internal error";
    default:
        return "Server error";
    }
}

int jsonrpc_parse(const char *text, size_t len, json_t **ret)
{
    /* JSON_DECODE_ANY: a bare value is a valid (if useless) message; the classifier rejects it
     * with a better reason than the parser would. JSON_ALLOW_NUL: \u0000 is valid JSON, and a
     * tool result holding it must not be dropped as "not JSON" (its caller would wait for the
     * answer until its timeout); strings used as names are checked by length where it matters. */
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!v)
        return -EBADMSG;
    *ret = v;
    return 0;
}

char *jsonrpc_format(const json_t *msg)
{
    return jdump(msg, JSON_COMPACT, NULL);
}
