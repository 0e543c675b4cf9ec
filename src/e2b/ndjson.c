// SPDX-License-Identifier: MIT
/*
 * ndjson — see ndjson.h.
 */
#include "e2b/ndjson.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/jdump.h"
#include "util/macros.h"

/* The string members of a "result" besides is_main_result (E2B's Result model). */
static const char *const ndjson_result_strings[] = {
    "text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "javascript",
};
static const char *const ndjson_result_objects[] = {"data", "chart", "extra"};

/* Copy member key of from into to when it has the JSON type want (JSON_OBJECT...), or any type
 * when want is -1. False when it is present with another type. */
static bool ndjson_copy(json_t *to, const json_t *from, const char *key, int want)
{
    json_t *v = json_object_get(from, key);
    if (!v)
        return true;
    if (want >= 0 && (int)json_typeof(v) != want)
        return false;
    return json_object_set(to, key, v) == 0;
}

static bool ndjson_build(json_t *line, const json_t *out, const char *type)
{
    if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0)
        return json_is_string(json_object_get(out, "text")) &&
               ndjson_copy(line, out, "text", JSON_STRING) &&
               ndjson_copy(line, out, "timestamp", JSON_STRING);
    if (strcmp(type, "error") == 0) {
        static const char *const members[] = {"name", "value", "traceback"};
        for (size_t i = 0; i < ARRAY_SIZE(members); i++)
            if (!json_is_string(json_object_get(out, members[i])) ||
                !ndjson_copy(line, out, members[i], JSON_STRING))
                return false;
        return true;
    }
    if (strcmp(type, "number_of_executions") == 0) {
        json_t *n = json_object_get(out, "execution_count");
        return json_is_integer(n) && json_integer_value(n) >= 0 &&
               json_object_set(line, "execution_count", n) == 0;
    }
    if (strcmp(type, "result") == 0) {
        for (size_t i = 0; i < ARRAY_SIZE(ndjson_result_strings); i++)
            if (!ndjson_copy(line, out, ndjson_result_strings[i], JSON_STRING))
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(ndjson_result_objects); i++)
            if (!ndjson_copy(line, out, ndjson_result_objects[i], JSON_OBJECT))
                return false;
        json_t *main = json_object_get(out, "is_main_result");
        return ndjson_copy(line, out, "json", -1) && json_is_boolean(main) &&
               json_object_set(line, "is_main_result", main) == 0;
    }
    return false;
}

static char *ndjson_dump(const json_t *line, size_t *ret_len)
{
    size_t n = 0;
    char *text = jdump(line, JSON_COMPACT, &n);
    char *out = text ? realloc(text, n + 2) : NULL;
    if (!out) {
        free(text);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    *ret_len = n + 1;
    return out;
}

char *ndjson_line(const json_t *out, size_t *ret_len)
{
    json_t *t = json_object_get(out, "type");
    const char *type = json_string_value(t);
    /* The whole string is the type: "stdout\u0000x" is none of E2B's. */
    if (!json_is_object(out) || !type || strlen(type) != json_string_length(t))
        return NULL;
    json_t *line = json_pack("{s:s}", "type", type);
    char *text = line && ndjson_build(line, out, type) ? ndjson_dump(line, ret_len) : NULL;
    json_decref(line);
    return text;
}

char *ndjson_simple(const char *type, size_t *ret_len)
{
    json_t *line = json_pack("{s:s}", "type", type);
    char *text = line ? ndjson_dump(line, ret_len) : NULL;
    json_decref(line);
    return text;
}
