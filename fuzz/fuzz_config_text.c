// SPDX-License-Identifier: MIT
/*
 * fuzz_config_text — the readers of other programs' configuration files
 * that discovery opens (util/toml.c for Codex's config.toml, util/jsonc.c
 * for VS Code's settings.json and mcp.json): files a user did not write for
 * sandboxd, read at start-up.
 *
 * toml_parse: an object or an error that names its line, never both; every
 * string valid UTF-8, no real that JSON cannot hold, nesting within the cap,
 * and the result writes out as JSON. Parsing is deterministic.
 * jsonc_strip: in place, only comment and trailing-comma bytes become
 * spaces (newlines kept), and text that is plain JSON comes out unchanged.
 *
 * Input: one byte choosing the reader, then the file.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util/jdump.h"
#include "util/jsonc.h"
#include "util/toml.h"

static bool reals_finite(const json_t *v, int depth)
{
    FUZZ_CHECK(depth <= 2 * TOML_MAX_DEPTH + 64); /* tables, dotted keys and arrays nest */
    size_t i;
    const char *k;
    json_t *m;
    if (json_is_real(v))
        return isfinite(json_real_value(v));
    if (json_is_array(v)) {
        json_array_foreach(v, i, m) if (!reals_finite(m, depth + 1)) return false;
    } else if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, m) if (!reals_finite(m, depth + 1)) return false;
    }
    return true;
}

static void check_toml(const char *text, size_t len)
{
    json_t *doc = NULL;
    char *why = NULL;
    int r = toml_parse(text, len, &doc, &why);
    if (r < 0) {
        FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
        FUZZ_CHECK(!doc);
        if (r == -EINVAL && why)
            FUZZ_CHECK(strncmp(why, "line ", 5) == 0);
        free(why);
        return;
    }
    FUZZ_CHECK(r == 0 && json_is_object(doc) && !why);
    FUZZ_CHECK(fuzz_json_valid_utf8(doc) && reals_finite(doc, 0));
    char *out = jdump(doc, JSON_COMPACT, NULL);
    FUZZ_CHECK(out != NULL);
    free(out);
    json_t *again = NULL;
    FUZZ_CHECK(toml_parse(text, len, &again, &why) == 0 && fuzz_json_equal(doc, again));
    json_decref(again);
    json_decref(doc);
}

static void check_jsonc(const char *text, size_t len)
{
    char *s = malloc(len + 1);
    FUZZ_CHECK(s != NULL);
    memcpy(s, text, len);
    s[len] = '\0';
    jsonc_strip(s, len);
    for (size_t i = 0; i < len; i++) {
        FUZZ_CHECK(s[i] == text[i] || s[i] == ' ');
        FUZZ_CHECK((text[i] == '\n') == (s[i] == '\n'));
    }
    json_error_t jerr;
    json_t *plain = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (plain)
        FUZZ_CHECK(memcmp(s, text, len) == 0);
    json_decref(plain);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    if (fuzz_byte(&in) & 1)
        check_jsonc((const char *)in.data, in.len);
    else
        check_toml((const char *)in.data, in.len);
    return 0;
}
