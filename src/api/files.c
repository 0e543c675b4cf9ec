// SPDX-License-Identifier: MIT
/*
 * files (api) — the session file routes of CONTRACT §12:
 *   PUT    /v1/sessions/{id}/files/{path}   raw body -> 201 {path, size}
 *   GET    /v1/sessions/{id}/files/{path}   -> 200 the bytes (application/octet-stream)
 *   DELETE /v1/sessions/{id}/files/{path}   -> 204
 *   GET    /v1/sessions/{id}/files          -> 200 {files: [{path, size, modified}], ...}
 * The path (already percent-decoded by the server) must be a plain relative
 * path; session/files.c does the work beneath the session's working
 * directory, from the host.
 */
#include "api/files.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/status.h"
#include "session/files.h"
#include "session/session.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/path.h"
#include "util/utf8.h"

/* The answer to a files error r (-errno) about path. */
static void api_files_error(struct http_reply *reply, int r, const char *path)
{
    struct sbx_error e = {0};
    session_files_error(r, path, &e);
    api_reply_sbx_error(reply, &e);
}

void api_session_files_route(struct api *api, const char *id, const char *tail,
                             const struct http_request *req, struct http_reply *reply)
{
    bool get = strcmp(req->method, "GET") == 0;
    bool put = strcmp(req->method, "PUT") == 0;
    bool del = strcmp(req->method, "DELETE") == 0;
    const char *path = *tail == '/' ? tail + 1 : tail;
    bool listing = *path == '\0';
    if (listing ? !get : !(get || put || del)) {
        api_reply_error(reply, SBX_ERR_METHOD, "METHOD_NOT_ALLOWED", NULL, "use %s",
                        listing ? "GET" : "GET, PUT or DELETE");
        http_reply_header(reply, "Allow", listing ? "GET" : "GET, PUT, DELETE");
        return;
    }
    const char *why = listing ? NULL : path_check_plain(path, strlen(path));
    if (why) {
        api_reply_error(reply, SBX_ERR_INVALID, "INVALID_REQUEST", "path", "path: %s", why);
        return;
    }
    int dir = -1;
    uid_t uid;
    gid_t gid;
    int r = sessions_workdir(api->sessions, id, &dir, &uid, &gid);
    if (r == -ENOENT) {
        api_reply_error(reply, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "no session %s", id);
        return;
    }
    if (r < 0) {
        api_files_error(reply, r, "the working directory");
        return;
    }
    if (listing) {
        json_t *list = NULL;
        r = session_files_list(dir, uid, gid, &list);
        if (r == 0)
            api_reply_json(reply, API_OK, list);
    } else if (put) {
        r = session_files_put(dir, path, req->body, req->body_len, uid, gid);
        if (r == 0) {
            /* The path as a listing shows it: a name that is not UTF-8 percent-encoded. */
            api_reply_ok(reply, API_CREATED);
            reply->body = json_pack("{s:I}", "size", (json_int_t)req->body_len);
            if (!reply->body || session_files_path_set(reply->body, path) < 0) {
                json_decref(reply->body);
                reply->body = NULL;
                r = -ENOMEM;
            }
        }
    } else if (get) {
        /* Sent from the descriptor as the client reads, never copied whole into memory; the
         * server counts the bytes still to send against the reply budget (an open file keeps
         * the session's tmpfs alive even after the session ended). */
        int fd = -1;
        uint64_t len = 0;
        r = session_files_open(dir, path, api->app->jail->tmp_bytes, uid, gid, &fd, &len);
        if (r == 0) {
            api_reply_ok(reply, API_OK);
            http_reply_download(reply, fd, len);
        }
    } else {
        r = session_files_delete(dir, path, uid, gid);
        if (r == 0)
            api_reply_ok(reply, API_NO_CONTENT);
    }
    close(dir);
    if (r < 0)
        api_files_error(reply, r, path);
}
