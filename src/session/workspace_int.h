// SPDX-License-Identifier: MIT
/*
 * workspace_int — shared by workspace.c (opening, tools, files) and
 * wsmemory.c (memories): the open workspace.
 */
#ifndef SANDBOXD_SESSION_WORKSPACE_INT_H
#define SANDBOXD_SESSION_WORKSPACE_INT_H

#include "session/workspace.h"

struct workspace_store {
    struct store *store; /* borrowed */
    struct workspace_limits lim;
};

struct workspace {
    struct workspace_store *ws;
    struct store_ws *sw;
    char key[2 * WORKSPACE_MAX_KEY_LEN + 2]; /* "name" or "tenant/name" (workspace_key()) */
};

/* A time of the store (ms since the epoch) as ISO 8601 UTC with seconds, into out[32]. */
void ws_timestamp(int64_t ms, char out[32]);

#endif
