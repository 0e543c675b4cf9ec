// SPDX-License-Identifier: MIT
/*
 * web — the static files sandboxd serves from its own binary: the console's
 * page and modules (/ui, /ui/...) and the OpenAPI document of the native API
 * (/openapi.json). They are compiled in at build time (src/web/embed.py makes
 * web_assets.c from src/web/console/ and docs/openapi.yaml), so the console
 * works offline and is always the one that matches the binary. They hold no
 * data: whatever the console shows comes through the API, with the caller's
 * token. Read-only tables; no allocation, no lock. Called by api/web.c and the
 * unit tests.
 */
#ifndef SANDBOXD_WEB_WEB_H
#define SANDBOXD_WEB_WEB_H

#include <stddef.h>

struct web_asset {
    const char *path;         /* the URL path: "/ui", "/ui/console.js", "/openapi.json" */
    const char *content_type; /* with its charset for text */
    const unsigned char *data;
    size_t len;
    const char *etag; /* a strong validator: the quoted first 16 hex digits of the SHA-256 */
};

/* Every compiled-in file (made by embed.py), in path order. */
extern const struct web_asset web_assets[];
extern const size_t web_assets_count;

/* The asset served at path (exact match), or NULL. */
const struct web_asset *web_asset_find(const char *path);

#endif
