// SPDX-License-Identifier: MIT
/* store_pg — PostgreSQL backend (being written). */
#include <errno.h>

#include "store/store_int.h"
#include "util/log.h"

int store_pg_new(const struct store_options *opts, int wait_ms, struct store **ret)
{
    (void)opts, (void)wait_ms, (void)ret;
    log_error("store: PostgreSQL is not supported yet");
    return -EPROTONOSUPPORT;
}
