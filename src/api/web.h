// SPDX-License-Identifier: MIT
/*
 * web (api) — GET /ui, /ui/{asset} and /openapi.json: the files compiled
 * into the binary (web/web.h). They need no token (they hold no data; the
 * console asks for a token and sends it with every API request it makes),
 * but pass the Host and Origin checks and the reply budget like every
 * route. Every answer carries the console's Content-Security-Policy
 * (default-src 'self', frame-ancestors 'none'), and an ETag: a client that
 * has the file gets 304.
 */
#ifndef SANDBOXD_API_WEB_H
#define SANDBOXD_API_WEB_H

#include "http/server.h"

/* The Content-Security-Policy of every /ui answer (docs/CONSOLE.md says why each part). */
#define API_WEB_CSP                                                                                \
    "default-src 'self'; img-src 'self' blob: data:; object-src 'none'; base-uri 'none'; "         \
    "form-action 'none'; frame-ancestors 'none'"

/* req->path is /ui, /ui/, /ui/{asset} or /openapi.json (api_route checked the method). */
void api_web_route(const struct http_request *req, struct http_reply *reply);

#endif
