// SPDX-License-Identifier: MIT
/*
 * fuzz_yaml — the one YAML dialect (handlers/yaml.c), which reads workflow
 * files and LLM templates fetched from an app's definitions. A document is
 * either refused with a message (-EINVAL, or -E2BIG over a cap) or becomes a
 * JSON value that jdump writes and jansson reads back equal: never a value
 * JSON cannot carry, never nested deeper than the depth cap (aliases
 * expanded; a JSON parser must read it), never larger than the caps counted
 * (an alias counting as what it repeats).
 *
 * Input: a byte choosing the caps, then the YAML text.
 */
#include <stdlib.h>
#include <string.h>

#include "handlers/yaml.h"
#include "fuzz.h"
#include "util/jdump.h"

/* Levels of containers in v (the expanded document: at most the node cap to walk). */
static size_t height(const json_t *v)
{
    size_t h = 0, i;
    const char *k;
    json_t *m;
    if (json_is_array(v)) {
        json_array_foreach(v, i, m)
        {
            size_t c = height(m);
            h = c > h ? c : h;
        }
    } else if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, m)
        {
            size_t c = height(m);
            h = c > h ? c : h;
        }
    }
    return json_is_array(v) || json_is_object(v) ? h + 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t caps = fuzz_byte(&in);
    /* The defaults, or small caps the fuzzer can reach. */
    struct flow_yaml_limits lim = {0};
    if (caps & 1) {
        lim.max_nodes = 1 + (caps >> 1);
        lim.max_bytes = 64 + 16 * (size_t)caps;
    }
    size_t max_bytes = lim.max_bytes ? lim.max_bytes : FLOW_YAML_MAX_BYTES;
    json_t *v = NULL;
    struct flow_yaml_info info = {0};
    char *why = NULL;
    int r = flow_yaml_load((const char *)in.data, in.len, &lim, &v, &info, &why);
    if (r < 0) {
        FUZZ_CHECK(!v && (r == -EINVAL || r == -E2BIG || r == -ENOMEM));
        FUZZ_CHECK(why || r == -ENOMEM);
        FUZZ_CHECK(!why || strlen(why) < 4096);
        free(why);
        return 0;
    }
    FUZZ_CHECK(v && !why && info.bytes <= max_bytes);
    FUZZ_CHECK(height(v) <= FLOW_YAML_MAX_DEPTH); /* aliases included: JSON parsers read it */
    size_t len;
    char *text = jdump(v, JSON_COMPACT, &len);
    FUZZ_CHECK(text != NULL);
    /* A scalar's text can grow six-fold when written (\u0001); nothing grows more. */
    FUZZ_CHECK(len <= 6 * info.bytes + 16);
    json_error_t jerr;
    json_t *back = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(fuzz_json_equal(v, back));
    json_decref(back);
    free(text);
    json_decref(v);
    return 0;
}
