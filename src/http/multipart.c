// SPDX-License-Identifier: MIT
/*
 * multipart — see multipart.h. libmicrohttpd's post processor calls its iterator with pieces
 * of each part's value (off is the offset within the part: 0 starts a new one); the pieces are
 * put together here, so that a part is handed over whole.
 */
#include "http/multipart.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

struct multipart {
    http_part_fn fn;
    void *userdata;
    struct buf data;
    char *name, *filename, *content_type;
    bool open; /* a part is being assembled */
    int r;     /* what fn returned, or -ENOMEM */
};

static void multipart_reset(struct multipart *m)
{
    free(m->name);
    free(m->filename);
    free(m->content_type);
    m->name = m->filename = m->content_type = NULL;
    buf_reset(&m->data);
    m->open = false;
}

static int multipart_finish(struct multipart *m)
{
    if (!m->open || m->r < 0)
        return m->r;
    struct http_part p = {.name = m->name,
                          .filename = m->filename,
                          .content_type = m->content_type,
                          .data = m->data.data ? m->data.data : "",
                          .len = m->data.len};
    m->r = m->fn(m->userdata, &p);
    multipart_reset(m);
    return m->r;
}

static char *multipart_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static enum MHD_Result multipart_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *filename, const char *content_type,
                                      const char *transfer_encoding, const char *data, uint64_t off,
                                      size_t size)
{
    (void)kind;
    (void)transfer_encoding;
    struct multipart *m = cls;
    if (off == 0) {
        if (multipart_finish(m) < 0)
            return MHD_NO;
        m->name = multipart_dup(key);
        m->filename = multipart_dup(filename);
        m->content_type = multipart_dup(content_type);
        m->open = true;
        if ((key && !m->name) || (filename && !m->filename) || (content_type && !m->content_type)) {
            m->r = -ENOMEM;
            return MHD_NO;
        }
    }
    if (size && buf_append(&m->data, data, size) < 0) {
        m->r = -ENOMEM;
        return MHD_NO;
    }
    return MHD_YES;
}

int http_multipart(const struct http_request *req, http_part_fn fn, void *userdata)
{
    struct multipart m = {.fn = fn, .userdata = userdata};
    /* No part is larger than the body that holds it. */
    buf_init(&m.data, req->body_len + 1);
    struct MHD_PostProcessor *pp =
        MHD_create_post_processor(req->conn, 64 * 1024, multipart_iter, &m);
    if (!pp) {
        buf_free(&m.data);
        return -EINVAL; /* not multipart/form-data, or no boundary */
    }
    enum MHD_Result ok = MHD_post_process(pp, req->body, req->body_len);
    /* MHD_NO here: the body ended inside a part (no closing boundary). */
    enum MHD_Result done = MHD_destroy_post_processor(pp);
    int r = m.r < 0 ? m.r : ok != MHD_YES || done != MHD_YES ? -EINVAL : multipart_finish(&m);
    multipart_reset(&m);
    buf_free(&m.data);
    return r;
}
