// SPDX-License-Identifier: MIT
/*
 * web — see web.h.
 */
#include "web/web.h"

#include <stdlib.h>
#include <string.h>

static int web_compare(const void *key, const void *elem)
{
    return strcmp(key, ((const struct web_asset *)elem)->path);
}

const struct web_asset *web_asset_find(const char *path)
{
    /* embed.py writes the table sorted by path (strcmp order, as bytes). */
    return bsearch(path, web_assets, web_assets_count, sizeof(web_assets[0]), web_compare);
}
