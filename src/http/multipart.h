// SPDX-License-Identifier: MIT
/*
 * multipart — the parts of a request's multipart/form-data body (RFC 7578), parsed by
 * libmicrohttpd's post processor from the body the server already holds (and capped). Each
 * part is handed over whole, in order: its field name, file name and content type as sent, and
 * its bytes (binary-safe). Used by routes that take file uploads (e2b's /files).
 */
#ifndef SANDBOXD_HTTP_MULTIPART_H
#define SANDBOXD_HTTP_MULTIPART_H

#include <stddef.h>

#include "http/server.h"

struct http_part {
    const char *name;         /* the form field ("file") */
    const char *filename;     /* NULL when the part has none */
    const char *content_type; /* NULL when the part has none */
    const char *data;         /* len bytes; valid during the callback */
    size_t len;
};

/* A part; <0 stops the parse and is returned by http_multipart(). */
typedef int (*http_part_fn)(void *userdata, const struct http_part *part);

/* Parse req's body (Content-Type multipart/form-data with a boundary) and call fn for every
 * part. 0; -EINVAL when the body is not well-formed multipart (or its Content-Type is not
 * that); -ENOMEM; or what fn returned. */
int http_multipart(const struct http_request *req, http_part_fn fn, void *userdata);

#endif
