// SPDX-License-Identifier: MIT
/*
 * data — the data-work side of run_python (CONTRACT §12): its
 * "files" argument, written into the session's working directory before
 * the code runs (session/files.h, from the host), and its artifacts turned
 * into MCP content: images as image content blocks (what Claude Desktop
 * shows inline), everything else as embedded resources, and a summary in
 * the text and in structuredContent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcpserver/server_int.h"
#include "session/files.h"
#include "session/session.h"
#include "util/b64.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/path.h"

#define SRV_MAX_FILES 256 /* entries of run_python's files */

/* Check run_python's files ({path: text | {"base64": "..."}}) before anything runs. */
json_t *srv_files_arg(json_t *files, char **ret_error)
{
    if (!json_is_object(files) || json_object_size(files) > SRV_MAX_FILES) {
        *ret_error = fmt_str("files: an object of at most %d entries, {\"path\": \"text\" or "
                             "{\"base64\": \"...\"}}",
                             SRV_MAX_FILES);
        return NULL;
    }
    json_t *out = json_array();
    const char *path;
    json_t *v;
    json_object_foreach(files, path, v)
    {
        const char *why = path_check_plain(path, strlen(path));
        json_t *b64 = json_is_object(v) ? json_object_get(v, "base64") : NULL;
        char *data = NULL;
        size_t n = 0;
        if (!why && !json_is_string(v) &&
            (!json_is_string(b64) || json_object_size(v) != 1 ||
             b64_decode(json_string_value(b64), json_string_length(b64), &data, &n) < 0))
            why = "must be text, or {\"base64\": \"...\"}";
        if (why) {
            *ret_error = fmt_str("files: '%.200s' %s", path, why);
            json_decref(out);
            return NULL;
        }
        free(data);
        if (json_array_append_new(out, json_pack("{s:s, s:O}", "path", path, "content", v)) < 0) {
            *ret_error = strdup("files: out of memory");
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

int srv_files_put(struct mcp_server *s, const char *id, json_t *files, char **ret_error)
{
    if (!json_array_size(files))
        return 0;
    int dir = -1;
    uid_t uid;
    gid_t gid;
    int r = sessions_workdir(s->sessions, id, &dir, &uid, &gid);
    if (r < 0)
        return r; /* an ended session: the caller starts a new one */
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *path = json_string_value(json_object_get(f, "path"));
        json_t *content = json_object_get(f, "content");
        json_t *b64 = json_object_get(content, "base64");
        char *data = NULL;
        size_t n = 0;
        if (json_is_string(content)) {
            r = session_files_put(dir, path, json_string_value(content),
                                  json_string_length(content), uid, gid);
        } else if ((r = b64_decode(json_string_value(b64), json_string_length(b64), &data, &n)) ==
                   0) {
            r = session_files_put(dir, path, data, n, uid, gid);
            free(data);
        }
        if (r < 0) {
            *ret_error = fmt_str("files: cannot write '%.200s': %s", path,
                                 r == -ENOSPC ? "over the session's quota (the size of its /tmp)"
                                              : strerror(-r));
            r = -EINVAL;
            break;
        }
    }
    close(dir);
    return r;
}

static bool srv_is_inline_image(const char *mime)
{
    static const char *const images[] = {"image/png", "image/jpeg", "image/gif", "image/webp"};
    for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++)
        if (strcmp(mime, images[i]) == 0)
            return true;
    return false;
}

static bool srv_is_text(const char *mime)
{
    return strncmp(mime, "text/", 5) == 0 || strcmp(mime, "application/json") == 0 ||
           strcmp(mime, "image/svg+xml") == 0;
}

/* "sandboxd://artifacts/<name>" with the name percent-encoded but for unreserved characters
 * and '/'. */
static char *srv_artifact_uri(const char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(name);
    char *out = malloc(sizeof("sandboxd://artifacts/") + 3 * n);
    if (!out)
        return NULL;
    char *p = out + sprintf(out, "sandboxd://artifacts/");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~/", c)) {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    *p = '\0';
    return out;
}

/* One content block for artifact a: an image, or an embedded resource (text when it is text
 * and decodes as UTF-8, else a blob). */
static json_t *srv_artifact_block(json_t *a)
{
    const char *mime = json_string_value(json_object_get(a, "mimeType"));
    json_t *data = json_object_get(a, "data");
    if (srv_is_inline_image(mime))
        return json_pack("{s:s, s:O, s:s}", "type", "image", "data", data, "mimeType", mime);
    char *uri = srv_artifact_uri(json_string_value(json_object_get(a, "name")));
    if (!uri)
        return NULL;
    json_t *res = json_pack("{s:s, s:s}", "uri", uri, "mimeType", mime);
    free(uri);
    if (!res)
        return NULL;
    char *bytes = NULL;
    size_t n = 0;
    json_t *text = NULL;
    if (srv_is_text(mime) &&
        b64_decode(json_string_value(data), json_string_length(data), &bytes, &n) == 0)
        text = json_stringn(bytes, n); /* NULL when it is not UTF-8: sent as a blob */
    free(bytes);
    if (text)
        json_object_set_new(res, "text", text);
    else
        json_object_set(res, "blob", data);
    return json_pack("{s:s, s:o}", "type", "resource", "resource", res);
}

void srv_artifacts_meta(json_t *st, json_t *result)
{
    json_t *meta = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(result, "artifacts"), i, a)
    {
        if (json_array_append_new(meta,
                                  json_pack("{s:O, s:O, s:O}", "name", json_object_get(a, "name"),
                                            "mimeType", json_object_get(a, "mimeType"), "size",
                                            json_object_get(a, "size"))) < 0)
            log_warn("mcp: artifact %zu is missing from structuredContent (out of memory)", i);
    }
    if (json_object_set_new(st, "artifacts", meta) < 0)
        log_warn("mcp: the artifacts are missing from structuredContent (out of memory)");
    json_t *err = json_object_get(result, "artifactsError");
    if (err)
        json_object_set(st, "artifactsError", err);
}

void srv_artifacts_blocks(json_t *reply, json_t *result)
{
    json_t *content = json_object_get(reply, "content");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(result, "artifacts"), i, a)
    {
        json_t *block = srv_artifact_block(a);
        if (!block || json_array_append_new(content, block) < 0)
            log_warn("mcp: artifact %zu could not be sent as a content block (out of memory)", i);
    }
}
