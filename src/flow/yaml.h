// SPDX-License-Identifier: MIT
/*
 * yaml — YAML text to JSON values (jansson), for the workflow files of
 * flow/workflow.c. The text is untrusted: depth, anchors and the expanded
 * size are capped (an alias counts with the size of what it repeats, so a
 * "billion laughs" document is refused instead of exploding later).
 */
#ifndef SANDBOXD_FLOW_YAML_H
#define SANDBOXD_FLOW_YAML_H

#include <jansson.h>
#include <stddef.h>

#define FLOW_YAML_MAX_NODES 100000 /* the default cap on the expanded document */

/* Parse YAML text (first document) into JSON: mappings with string keys, sequences, and
 * scalars typed by the YAML 1.2 core schema (quoted scalars stay strings). Aliases are
 * allowed while the expanded document stays under max_nodes (0: FLOW_YAML_MAX_NODES). 0 and
 * *ret (new reference), or -errno and a message in *ret_error (caller frees; NULL when out of
 * memory). */
int flow_yaml_load(const char *text, size_t len, size_t max_nodes, json_t **ret, char **ret_error);

#endif
