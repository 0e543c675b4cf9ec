// SPDX-License-Identifier: MIT
/*
 * jsonscan — validate JSON text without building it. One pass over the
 * bytes checks RFC 8259 syntax, UTF-8, escapes (\u0000 only in values, no lone
 * surrogates: the rules jansson applies) and a nesting cap; it counts what a
 * parser would allocate, so a caller can refuse a document whose parsed form
 * would be far larger than its text, and it finds the span of one member
 * (e.g. "data" or "data"."result") so that a large value can be passed on as
 * text instead of being parsed. It allocates nothing.
 *
 * jansson has no validating mode without a tree, which is why this exists;
 * it is used on every frame a sandbox sends (proto/frame.c).
 */
#ifndef SANDBOXD_PROTO_JSONSCAN_H
#define SANDBOXD_PROTO_JSONSCAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JSONSCAN_MAX_DEPTH 2048 /* jansson's own nesting limit */

/* What a parser would build: counts of values by kind. */
struct jsonscan_counts {
    size_t values;       /* every value: scalars, arrays and objects */
    size_t containers;   /* arrays and objects */
    size_t members;      /* object members */
    size_t strings;      /* string values and keys */
    size_t string_bytes; /* their encoded length, an upper bound of the decoded one */
};

struct jsonscan_result {
    struct jsonscan_counts total;
    /* The member at the path asked for, when the document has it: its value is
     * text[start, end) and is counted in found_counts (also part of total). */
    bool found;
    size_t start, end;
    struct jsonscan_counts found_counts;
};

/* Scan text[0, len) as one JSON document nested at most max_depth deep (0: JSONSCAN_MAX_DEPTH).
 * path: NULL, or a NULL-terminated list of member names leading from the top-level object to
 * the value to locate (member names are compared after unescaping). 0 and *ret filled, or
 * -EBADMSG with *ret_error (static) saying what is wrong. */
int jsonscan(const char *text, size_t len, unsigned max_depth, const char *const *path,
             struct jsonscan_result *ret, const char **ret_error);

/* Parse text[0, len) (duplicate names refused) with the value at [start, end) replaced by null:
 * the rest of a document whose large member is kept as text. NULL when it is not JSON or out
 * of memory. */
json_t *jsonscan_load_without(const char *text, size_t len, size_t start, size_t end);

/* Bytes a jansson tree of these counts takes at most, roughly (measured on jansson 2.14). */
size_t jsonscan_tree_cost(const struct jsonscan_counts *c);

#endif
