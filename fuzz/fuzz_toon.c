// SPDX-License-Identifier: MIT
/*
 * fuzz_toon — the TOON encoder of `sandboxd mcp --compat code-execution-mode`
 * (util/toon.c) over any JSON value a tool or a program may return: it
 * encodes everything not nested past its cap, deterministically, as valid
 * UTF-8 lines with two-space indentation, no trailing spaces and no
 * trailing newline; a string is never split across lines (a newline inside
 * one is escaped), so the line count does not depend on string contents.
 *
 * Input: a JSON document.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util/toon.h"

static unsigned depth_of(const json_t *v)
{
    unsigned d = 0;
    size_t i;
    const char *k;
    json_t *m;
    if (json_is_array(v)) {
        json_array_foreach(v, i, m)
        {
            unsigned x = depth_of(m);
            d = x > d ? x : d;
        }
        return d + 1;
    }
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, m)
        {
            unsigned x = depth_of(m);
            d = x > d ? x : d;
        }
        return d + 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!v)
        return 0;
    char *out = NULL;
    int r = toon_encode(v, &out);
    if (depth_of(v) > TOON_MAX_DEPTH + 1) {
        FUZZ_CHECK(r == -E2BIG || r == 0);
    } else {
        FUZZ_CHECK(r == 0);
    }
    if (r < 0) {
        FUZZ_CHECK(r == -E2BIG && !out);
        json_decref(v);
        return 0;
    }
    size_t len = strlen(out);
    json_t *as_string = json_stringn(out, len); /* jansson's own UTF-8 check */
    FUZZ_CHECK(as_string != NULL);
    json_decref(as_string);
    FUZZ_CHECK(len == 0 || out[len - 1] != '\n');
    for (const char *line = len ? out : NULL; line;) { /* an empty object is an empty document */
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        size_t indent = strspn(line, " ");
        FUZZ_CHECK(indent % 2 == 0 && indent < n); /* no blank lines, whole indentation steps */
        FUZZ_CHECK(line[n - 1] != ' ' && !memchr(line, '\r', n) && !memchr(line, '\t', indent));
        line = nl ? nl + 1 : NULL;
    }
    char *again = NULL;
    FUZZ_CHECK(toon_encode(v, &again) == 0 && strcmp(out, again) == 0);
    free(again);
    free(out);
    json_decref(v);
    return 0;
}
