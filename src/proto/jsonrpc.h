// SPDX-License-Identifier: MIT
/*
 * jsonrpc — JSON-RPC 2.0 messages as jansson values: builders for requests,
 * notifications, results and errors, and a classifier that says what an
 * incoming message is (request / notification / response / error response /
 * invalid) without trusting any of it. Shared by the MCP client and server.
 * Pure functions: no I/O, no logging, no global state.
 */
#ifndef SANDBOXD_PROTO_JSONRPC_H
#define SANDBOXD_PROTO_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The standard error codes of JSON-RPC 2.0, section 5.1. */
#define JSONRPC_PARSE_ERROR      (-32700)
#define JSONRPC_INVALID_REQUEST  (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS   (-32602)
#define JSONRPC_INTERNAL_ERROR   (-32603)
/* The codes of the implementation-defined range (-32000 to -32099) that sandboxd sends: the one
 * table of them (the MCP server, its HTTP endpoint and `sandboxd mcp`). */
#define JSONRPC_SERVER_ERROR (-32000) /* busy, shutting down, over a limit, connection closed */
#define JSONRPC_MCP_SESSION_NOT_FOUND                                                              \
    (-32001) /* the code the official MCP SDKs use for "Session not found" */
#define JSONRPC_MCP_RESOURCE_NOT_FOUND (-32002) /* MCP: resources/read of an unknown URI */

enum jsonrpc_kind {
    JSONRPC_INVALID,
    JSONRPC_REQUEST,        /* method and id */
    JSONRPC_NOTIFICATION,   /* method, no id */
    JSONRPC_RESPONSE,       /* result and id */
    JSONRPC_ERROR_RESPONSE, /* error and id (null when the request could not be read) */
};

/* What jsonrpc_classify() found. Every pointer is borrowed from the classified message and
 * valid as long as it is. */
struct jsonrpc_message {
    enum jsonrpc_kind kind;
    json_t *id;         /* integer or string; json null in some error responses; NULL if absent */
    const char *method; /* requests and notifications */
    json_t *params;     /* object or array, NULL when absent */
    json_t *result;     /* responses */
    json_int_t error_code;
    const char *error_message; /* never NULL in an error response */
    json_t *error_data;        /* may be NULL */
    const char *invalid;       /* static text saying why the message is invalid */
};

/* Classify msg (borrowed; any JSON value) and fill *ret; returns ret->kind. An id that is
 * neither an integer nor a string makes the message invalid, but ret->id still points at a
 * usable id whenever the message carried one, so a caller can answer or fail a request. */
enum jsonrpc_kind jsonrpc_classify(json_t *msg, struct jsonrpc_message *ret);
const char *jsonrpc_kind_name(enum jsonrpc_kind kind);

/* Builders. Every argument is borrowed (ids and params are referenced, not stolen); each
 * returns a new reference, or NULL when out of memory. params NULL omits "params". */
json_t *jsonrpc_request_new(json_t *id, const char *method, json_t *params);
json_t *jsonrpc_request_new_int(json_int_t id, const char *method, json_t *params);
json_t *jsonrpc_notification_new(const char *method, json_t *params);
/* result NULL sends {}. */
json_t *jsonrpc_result_new(json_t *id, json_t *result);
/* id NULL sends null (for requests that could not be read); message NULL uses the standard
 * text of code; data may be NULL. */
json_t *jsonrpc_error_new(json_t *id, int code, const char *message, json_t *data);

/* The standard message of a standard code ("Method not found"), "Server error" otherwise. */
const char *jsonrpc_error_text(int code);
/* An id JSON-RPC (and MCP) accepts: an integer or a string. */
bool jsonrpc_id_valid(const json_t *id);
/* Same type and value; an integer id never equals a string id. */
bool jsonrpc_id_equal(const json_t *a, const json_t *b);
/* Parse one message. 0 and a new reference in *ret, or -EBADMSG when text is not JSON. */
int jsonrpc_parse(const char *text, size_t len, json_t **ret);
/* Compact single-line text of msg (JSON strings never hold a raw newline); caller frees;
 * NULL when out of memory. */
char *jsonrpc_format(const json_t *msg);

#endif
