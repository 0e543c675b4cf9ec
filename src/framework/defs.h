// SPDX-License-Identifier: MIT
/*
 * defs — definition files (scripts, templates, workflows) of apps, fetched
 * through core.state.getDefinitionFileContent and cached per (endpoint,
 * appId, path) until /_framework/load_code drops them. The cache holds the
 * content as the framework sent it (base64) and is bounded (entries and
 * bytes, oldest evicted first). Thread-safe; fetches run outside the lock.
 */
#ifndef SANDBOXD_FRAMEWORK_DEFS_H
#define SANDBOXD_FRAMEWORK_DEFS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "framework/framework.h"
#include "util/error.h"

struct defs;

struct defs_options {
    size_t max_entries;
    size_t max_bytes;
    size_t max_file; /* largest definition accepted, decoded bytes */
};

struct defs_result {
    char *content_b64; /* caller frees */
    bool cached;
    /* a failure's details for its error body: how the framework call failed
     * (sbx_error_details()), or its answer held no definition; NULL: none */
    json_t *details;
};

int defs_new(struct framework *fw, const struct defs_options *opt, struct defs **ret);
void defs_free(struct defs *d);
/* Fetch (or reuse) a definition: 0 and ret->content_b64, or -errno with *err: NOT_FOUND (the
 * framework has no such file) or UPSTREAM (code MCP_ERROR: the framework failed, answered no
 * definition or one too large, or out of memory), its message naming path. Always fills *ret
 * (free with defs_result_done). */
int defs_get(struct defs *d, const char *endpoint, const char *app_id, const char *path,
             struct framework_stats *stats, struct defs_result *ret, struct sbx_error *err);
/* Decode a fetched definition to bytes (NUL-terminated); -EBADMSG when not base64. */
int defs_decode(const char *b64, char **ret, size_t *ret_len);
/* Drop cached definitions of app (all, or the listed paths). Returns how many were dropped. */
size_t defs_invalidate(struct defs *d, const char *app_id, const char *const *paths, size_t n);
void defs_result_done(struct defs_result *r);
json_t *defs_stats(struct defs *d);

#endif
