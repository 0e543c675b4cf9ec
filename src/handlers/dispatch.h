// SPDX-License-Identifier: MIT
/*
 * dispatch — the handler of one /execute request, the top of the request path
 * below api/: it calls the handler type the request names, each in this folder.
 */
#ifndef SANDBOXD_HANDLERS_DISPATCH_H
#define SANDBOXD_HANDLERS_DISPATCH_H

#include "handlers/app.h"

/* Run request s with the handler it names; fills *ret (status, body; the caller releases
 * it with json_decref(ret->body) and frame_raw_done(&ret->raw)). Never fails: errors are
 * replies. */
void handlers_execute(struct app *a, const struct request_spec *s, struct app_reply *ret);

#endif
