// SPDX-License-Identifier: MIT
/*
 * call — sessions_call(): one call of a front end that runs code in a session of its own
 * naming, "get or create, then execute", with the one rule for a session that ends between
 * being got and being used (see session.h). The front end's parts come as hooks.
 */
#include <errno.h>

#include "session/session.h"

/* Tries of one call: a session found ended is replaced once; ended again, the caller hears
 * it rather than a retry without end. */
#define SESSION_CALL_TRIES 2

/* One try: the session got, made ready, the code run in it. */
static int session_call_try(struct sessions *ss, const struct session_call *call, const char *code,
                            int64_t timeout_ms, const struct session_stream *stream,
                            char id[SESSION_ID_MAX + 1], json_t **ret_result, struct sbx_error *err)
{
    id[0] = '\0';
    int r = call->get(call->userdata, id, err);
    if (r == 0 && call->prepare)
        r = call->prepare(call->userdata, id, err);
    if (r < 0)
        return r;
    if (call->executing && !call->executing(call->userdata, id))
        return -ECANCELED;
    r = call->execute ? call->execute(call->userdata, id, code, timeout_ms, ret_result, err)
                      : sessions_execute(ss, id, code, timeout_ms, stream, ret_result, err);
    bool cancelled = call->executing && !call->executing(call->userdata, NULL);
    /* Its session ended because the call was cancelled: nothing to try again. */
    return r == -ENOENT && cancelled ? -ECANCELED : r;
}

int sessions_call(struct sessions *ss, const struct session_call *call, const char *code,
                  int64_t timeout_ms, const struct session_stream *stream, json_t **ret_result,
                  struct sbx_error *err)
{
    *err = (struct sbx_error){0};
    char id[SESSION_ID_MAX + 1];
    for (int tries = 1;; tries++) {
        int r = session_call_try(ss, call, code, timeout_ms, stream, id, ret_result, err);
        if (r != -ENOENT)
            return r;
        if (call->ended)
            call->ended(call->userdata, id);
        if (tries == SESSION_CALL_TRIES)
            return r; /* with the last try's error */
        sbx_error_clear(err);
    }
}
