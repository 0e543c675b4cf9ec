// SPDX-License-Identifier: MIT
/*
 * envd — envd's REST routes (spec/envd/envd.yaml of e2b-dev/E2B; infra's
 * packages/envd/internal/api/):
 *   GET  /health                      204 while the sandbox runs (502 otherwise: e2b.c)
 *   GET  /files?path=P[&username=U]   the file's bytes (application/octet-stream)
 *   POST /files?path=P[&username=U]   application/octet-stream: the body is the file;
 *                                     multipart/form-data: each part "file" is one (its file
 *                                     name is its path when the query has none)
 *                                     -> 200 [{"name", "type": "file", "path"}]
 * The files are the sandbox's working directory, /home/user (which is /tmp inside the jail),
 * read and written from the host by session/files.c beneath the session's /tmp: no link, mount
 * or ".." the sandbox planted leads the host elsewhere, and nothing the sandbox runs is asked.
 * Paths outside /home/user (and /tmp, the same directory) are refused. A file over the
 * sandbox's space is 507 (NotEnoughSpaceError), as envd's ENOSPC; a body over sandboxd's
 * --max-body-kb is the server's 413 before this runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "http/multipart.h"
#include "session/files.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/fmt.h"
#include "util/macros.h"
#include "util/path.h"

#define E2B_HOME "/home/user"

/* E2B's path as a path relative to the sandbox's working directory, normalised (empty and "."
 * components dropped) into rel (PATH_REQUEST_MAX + 1); NULL, or why not (static). */
static const char *e2b_files_path(const char *path, char *rel)
{
    if (!path || !*path)
        return "the path query parameter is required";
    const char *p = path;
    if (p[0] == '~' && (p[1] == '/' || !p[1]))
        p++;
    else if (strncmp(p, E2B_HOME, 10) == 0 && (p[10] == '/' || !p[10]))
        p += 10;
    else if (strncmp(p, "/tmp", 4) == 0 && (p[4] == '/' || !p[4]))
        p += 4;
    else if (p[0] == '/')
        return "sandboxd serves the files of the sandbox's home, /home/user (also reached as "
               "/tmp); this path is outside it";
    size_t n = 0;
    while (*p) {
        size_t len = strcspn(p, "/");
        if (len == 0 || (len == 1 && p[0] == '.')) {
            p += len + (p[len] == '/');
            continue;
        }
        if (n + len + 2 > PATH_REQUEST_MAX)
            return "the path is too long";
        if (n)
            rel[n++] = '/';
        memcpy(rel + n, p, len);
        n += len;
        p += len + (p[len] == '/');
    }
    rel[n] = '\0';
    if (n == 0)
        return "the path names the home directory itself, not a file";
    return path_check_plain(rel, n);
}

/* The entry of a written file rel: as E2B writes it, under /home/user; a name that is not
 * UTF-8 with U+FFFD for each bad byte, as envd's JSON encoder (Go's) writes it. NULL when out
 * of memory. */
static json_t *e2b_written(const char *rel)
{
    const char *base = strrchr(rel, '/');
    char *path = fmt_str("%s/%s", E2B_HOME, rel);
    json_t *entry = path ? json_pack("{s:o, s:s, s:o}", "name", connect_text(base ? base + 1 : rel),
                                     "type", "file", "path", connect_text(path))
                         : NULL;
    free(path);
    return entry;
}

/* The error answer of a failed file operation r (negative errno) on path. */
static void e2b_files_error(struct http_reply *reply, int r, const char *path)
{
    struct sbx_error e = {0};
    switch (r) {
    case -ENOENT:
        sbx_error_set(&e, SBX_ERR_NOT_FOUND, NULL, NULL, "file not found: %.1024s", path);
        break;
    case -EISDIR:
        sbx_error_set(&e, SBX_ERR_INVALID, NULL, NULL, "path is a directory: %.1024s", path);
        break;
    case -ENOTDIR:
    case -ELOOP:
    case -EXDEV:
        sbx_error_set(&e, SBX_ERR_INVALID, NULL, NULL,
                      "%.1024s goes through something that is not a plain directory (a "
                      "symlink, a file or another mount): sandboxd follows none of them",
                      path);
        break;
    case -EINVAL:
        sbx_error_set(&e, SBX_ERR_INVALID, NULL, NULL, "%.1024s is not a regular file", path);
        break;
    case -EACCES:
    case -EPERM:
        sbx_error_set(&e, SBX_ERR_INVALID, "permission_denied", NULL, "permission denied: %.1024s",
                      path);
        break;
    case -ENOSPC:
    case -EFBIG:
        /* envd's ErrNoDiskSpace: 507, NotEnoughSpaceError in the SDKs. */
        e2b_reply_status(reply, E2B_SURFACE_ENVD, 507,
                         "not enough disk space available: the sandbox's files are limited to "
                         "its /tmp (--tmp-size-mb)");
        return;
    default:
        sbx_error_set(&e, SBX_ERR_INTERNAL, NULL, NULL, "file operation failed: %s", strerror(-r));
    }
    e2b_reply_error(reply, E2B_SURFACE_ENVD, &e);
}

/* envd's users: "user" (the default) and "root" are the sandbox's one user here. */
static bool e2b_user_ok(const char *user, struct http_reply *reply)
{
    if (!user || strcmp(user, "user") == 0 || strcmp(user, "root") == 0)
        return true;
    e2b_reply_status(reply, E2B_SURFACE_ENVD, 401,
                     "error looking up user: the sandbox has the users 'user' and 'root' "
                     "(both its one unprivileged user)");
    return false;
}

struct e2b_upload {
    int dir;
    uid_t uid;
    gid_t gid;
    const char *query_path;
    json_t *written;
    struct buf seen; /* the paths written, each with its NUL: any bytes, unlike written's */
    struct http_reply *reply;
    bool failed;
};

static bool e2b_upload_seen(const struct buf *seen, const char *rel)
{
    for (size_t at = 0; at < seen->len; at += strlen(seen->data + at) + 1)
        if (strcmp(seen->data + at, rel) == 0)
            return true;
    return false;
}

static int e2b_upload_one(struct e2b_upload *u, const char *path, const char *data, size_t len)
{
    char rel[PATH_REQUEST_MAX + 1];
    const char *why = e2b_files_path(path, rel);
    if (why) {
        e2b_reply_fail(u->reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL, "%s: %.1024s", why,
                       path ? path : "");
        return -EINVAL;
    }
    if (e2b_upload_seen(&u->seen, rel)) {
        e2b_reply_fail(u->reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL,
                       "you cannot upload multiple files to the same path '%.1024s' in one "
                       "upload request",
                       path);
        return -EINVAL;
    }
    int r = session_files_put(u->dir, rel, data, len, u->uid, u->gid);
    if (r < 0) {
        e2b_files_error(u->reply, r, path);
        return r;
    }
    if (buf_append(&u->seen, rel, strlen(rel) + 1) < 0 ||
        json_array_append_new(u->written, e2b_written(rel)) < 0)
        return -ENOMEM;
    return 0;
}

static int e2b_upload_part(void *userdata, const struct http_part *part)
{
    struct e2b_upload *u = userdata;
    if (!part->name || strcmp(part->name, "file") != 0)
        return 0; /* envd ignores other fields */
    return e2b_upload_one(u, u->query_path ? u->query_path : part->filename, part->data, part->len);
}

static bool e2b_content_type(const struct http_request *req, const char *type)
{
    const char *ct = http_header(req, "Content-Type");
    if (!ct)
        return false;
    size_t n = strcspn(ct, "; ");
    return n == strlen(type) && strncasecmp(ct, type, n) == 0;
}

static void e2b_files(struct e2b_sandbox *sb, const struct http_request *req,
                      struct http_reply *reply)
{
    bool get = strcmp(req->method, "GET") == 0, post = strcmp(req->method, "POST") == 0;
    if (!get && !post) {
        e2b_reply_status(reply, E2B_SURFACE_ENVD, 405, "use GET or POST");
        http_reply_header(reply, "Allow", "GET, POST");
        return;
    }
    const char *path = http_query(req, "path");
    if (!e2b_user_ok(http_query(req, "username"), reply))
        return;
    if (http_query(req, "signature")) {
        e2b_reply_status(reply, E2B_SURFACE_ENVD, 401,
                         "signed file URLs are not served: sandboxd authorizes with the "
                         "sandbox's access token");
        return;
    }
    const char *encoding = http_header(req, "Content-Encoding");
    if (post && encoding && strcasecmp(encoding, "identity") != 0) {
        e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL,
                       "Content-Encoding %.32s is not supported: send the file uncompressed",
                       encoding);
        return;
    }
    char rel[PATH_REQUEST_MAX + 1];
    const char *why = get || path ? e2b_files_path(path, rel) : NULL;
    if (why) {
        e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL, "%s: %.1024s", why,
                       path ? path : "");
        return;
    }
    bool octet = post && e2b_content_type(req, "application/octet-stream");
    bool multipart = post && e2b_content_type(req, "multipart/form-data");
    if (post && !octet && !multipart) {
        e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL,
                       "unsupported content type: expected multipart/form-data or "
                       "application/octet-stream");
        return;
    }
    if (octet && !path) {
        e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL,
                       "path query parameter is required for raw body upload");
        return;
    }
    int dir = -1;
    uid_t uid;
    gid_t gid;
    int r = sessions_workdir(sb->e->opt.sessions, sb->id, &dir, &uid, &gid);
    if (r < 0) {
        struct sbx_error err = {0};
        e2b_not_found(sb->e, sb->id, &err);
        e2b_reply_error(reply, E2B_SURFACE_ENVD, &err);
        return;
    }
    if (get) {
        /* Sent from the descriptor as the client reads (api/files.c does the same), counted
         * against the reply budget by the server. */
        int fd = -1;
        uint64_t len = 0;
        r = session_files_open(dir, rel, sb->e->opt.file_max, uid, gid, &fd, &len);
        if (r < 0) {
            e2b_files_error(reply, r, path);
        } else {
            reply->status = 200;
            http_reply_download(reply, fd, len);
        }
    } else {
        struct e2b_upload u = {.dir = dir,
                               .uid = uid,
                               .gid = gid,
                               .query_path = path,
                               .written = json_array(),
                               .reply = reply};
        /* Each path written once: from a part's file name (in the body), or the query's. */
        buf_init(&u.seen, req->body_len + PATH_REQUEST_MAX + 2);
        if (!u.written)
            r = -ENOMEM;
        else
            r = octet ? e2b_upload_one(&u, path, req->body, req->body_len)
                      : http_multipart(req, e2b_upload_part, &u);
        buf_free(&u.seen);
        if (r == 0 && json_array_size(u.written) == 0)
            e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL,
                           "the form has no part named \"file\"");
        else if (r == -EINVAL && !reply->body && !reply->text)
            e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_INVALID, NULL,
                           "the body is not well-formed multipart/form-data");
        else if (r == -ENOMEM)
            e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_INTERNAL, NULL, "out of memory");
        else if (r == 0) {
            reply->status = 200;
            reply->body = json_incref(u.written);
        }
        json_decref(u.written);
    }
    close(dir);
}

void e2b_envd_route(struct e2b_sandbox *sb, const struct http_request *req, const char *path,
                    struct http_reply *reply)
{
    if (strcmp(path, "/health") == 0) {
        reply->status = 204;
    } else if (strcmp(path, "/files") == 0) {
        e2b_files(sb, req, reply);
    } else {
        e2b_reply_fail(reply, E2B_SURFACE_ENVD, SBX_ERR_NOT_FOUND, NULL,
                       "%s %.200s is not a route of envd that sandboxd serves (docs/E2B.md)",
                       req->method, path);
    }
}
