// SPDX-License-Identifier: MIT
/*
 * yaml — YAML text to JSON values (jansson): the one YAML dialect of
 * sandboxd, used for workflow files (handlers/workflow.c) and LLM templates
 * (handlers/template.c, which hands the parsed document to the sandbox).
 *
 * The dialect is the YAML 1.2 core schema (docs/WORKFLOWS.md "The YAML
 * dialect"): plain scalars are null (~, null, empty), booleans (true/false in
 * three spellings), integers (decimal, 0o octal, 0x hex; 64-bit) and floats;
 * everything else, and every quoted scalar, is a string. No YAML 1.1 rules
 * (yes/on/no/off, 1:30 sexagesimal, 017 octal, << merge keys). Duplicate
 * keys, integers beyond 64 bits, .inf/.nan (JSON has neither) and tags other
 * than the core ones are errors naming the line.
 *
 * The text is untrusted: depth, anchors and the expanded document (nodes and
 * bytes, an alias counting as the size of what it repeats) are capped, and
 * an alias shares the node it names instead of copying it, so a "billion
 * laughs" document or a long string repeated by thousands of aliases is
 * refused before it costs memory.
 */
#ifndef SANDBOXD_HANDLERS_YAML_H
#define SANDBOXD_HANDLERS_YAML_H

#include <jansson.h>
#include <stddef.h>

#define FLOW_YAML_MAX_NODES   100000      /* default cap on the expanded document's nodes */
#define FLOW_YAML_MAX_BYTES   (16u << 20) /* default cap on its size in bytes */
#define FLOW_YAML_MAX_DEPTH   64
#define FLOW_YAML_MAX_ANCHORS 1024

struct flow_yaml_limits {
    size_t max_nodes; /* 0: FLOW_YAML_MAX_NODES */
    size_t max_bytes; /* 0: FLOW_YAML_MAX_BYTES */
};

struct flow_yaml_info {
    size_t bytes; /* on success: the expanded size, as counted against max_bytes */
    size_t line;  /* on failure: the line the error is about (1-based; 0 when none) */
};

/* Parse YAML text (a stream of at most one document) into JSON. lim may be NULL (defaults).
 * 0 and *ret (new reference), or -errno and a message in *ret_error (caller frees; NULL when
 * out of memory): -EINVAL for a malformed or unsupported document, -E2BIG over a cap.
 * ret_info may be NULL. Nodes repeated by aliases are shared: treat *ret as read-only
 * (json_deep_copy() to edit). */
int flow_yaml_load(const char *text, size_t len, const struct flow_yaml_limits *lim, json_t **ret,
                   struct flow_yaml_info *ret_info, char **ret_error);

#endif
