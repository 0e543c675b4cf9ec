// SPDX-License-Identifier: MIT
/*
 * fuzz_jsonscan — the validator every sandbox frame passes through
 * (proto/jsonscan.c) against jansson, the parser that reads the frame next:
 * whatever jansson reads, jsonscan accepts (no valid JSON is refused), and
 * whatever jsonscan accepts jansson reads, but for the checks that only a
 * parser makes (integers and reals out of range, duplicate names, nesting
 * past the cap). Its counts are at least what the tree holds, the span it
 * finds for "data" parses to the tree's "data", and the document without
 * that span reads as the tree with "data" replaced by null.
 *
 * Input: one byte choosing the nesting cap, then the JSON text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto/jsonscan.h"

struct tally {
    size_t values, containers, members, strings;
};

static void count(const json_t *v, struct tally *t)
{
    t->values++;
    size_t i;
    const char *k;
    json_t *m;
    if (json_is_string(v)) {
        t->strings++;
    } else if (json_is_array(v)) {
        t->containers++;
        json_array_foreach(v, i, m) count(m, t);
    } else if (json_is_object(v)) {
        t->containers++;
        json_object_foreach((json_t *)v, k, m)
        {
            t->members++;
            t->strings++;
            count(m, t);
        }
    }
}

/* jansson's reasons that jsonscan does not check: it validates syntax, not ranges. */
static bool parser_only(const char *text)
{
    return strstr(text, "too big") || strstr(text, "overflow") || strstr(text, "duplicate") ||
           strstr(text, "too deep") || strstr(text, "nesting");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    unsigned depth = fuzz_byte(&in) & 1 ? 0 : 64; /* 0: jansson's own cap */
    const char *text = (const char *)in.data;
    size_t len = in.len;

    static const char *const path[] = {"data", NULL};
    struct jsonscan_result sr;
    const char *why = NULL;
    int r = jsonscan(text, len, depth, path, &sr, &why);
    FUZZ_CHECK(r == 0 || (r == -EBADMSG && why && *why));

    json_error_t jerr;
    json_t *tree = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    /* Only our own cap may refuse what jansson reads, and a raw NUL byte, which RFC 8259 does
     * not allow anywhere and jansson's reader takes for the end of its input. */
    if (tree && r < 0)
        FUZZ_CHECK(strstr(why, "deep") || memchr(text, '\0', len));
    if (!tree && r == 0)
        FUZZ_CHECK(parser_only(jerr.text));
    if (!tree || r < 0) {
        json_decref(tree);
        return 0;
    }

    struct tally t = {0};
    count(tree, &t);
    FUZZ_CHECK(sr.total.values >= t.values && sr.total.containers >= t.containers);
    FUZZ_CHECK(sr.total.members >= t.members && sr.total.strings >= t.strings);
    FUZZ_CHECK(jsonscan_tree_cost(&sr.total) > 0);

    /* Without duplicate names, the member found is the one jansson kept. */
    json_t *strict =
        json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
    json_t *want = json_is_object(strict) ? json_object_get(strict, "data") : NULL;
    if (strict) {
        FUZZ_CHECK(sr.found == (want != NULL));
        FUZZ_CHECK(sr.total.values == t.values && sr.total.members == t.members);
    }
    if (strict && sr.found) {
        FUZZ_CHECK(sr.start < sr.end && sr.end <= len);
        json_t *span =
            json_loadb(text + sr.start, sr.end - sr.start, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        FUZZ_CHECK(span && fuzz_json_equal(span, want));
        json_decref(span);
        json_t *rest = jsonscan_load_without(text, len, sr.start, sr.end);
        FUZZ_CHECK(rest != NULL);
        json_t *expect = json_deep_copy(strict);
        FUZZ_CHECK(expect && json_object_set_new(expect, "data", json_null()) == 0);
        FUZZ_CHECK(fuzz_json_equal(rest, expect));
        json_decref(expect);
        json_decref(rest);
    }
    json_decref(strict);
    json_decref(tree);
    return 0;
}
