// SPDX-License-Identifier: MIT
/*
 * test_session_call — session/call.c, sessions_call(): the order of the front end's hooks, the
 * one rule for a session that ends between being got and being used (forgotten, replaced
 * once, then the caller hears it), cancellation before and during the execution, and the
 * values passed through. The hooks stand in for a front end; the execution is the front end's
 * own (call->execute), so no session runs here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "session/session.h"

/* A scripted front end: what each try's hooks answer, and what they were asked. */
struct fake {
    int get_r[2], prepare_r[2], execute_r[2]; /* per try */
    bool cancelled_before, cancelled_during;
    int gets, prepares, executes, registered, cleared;
    char ended[2][SESSION_ID_MAX + 1];
    int n_ended;
    char log[256]; /* the hooks in the order they ran */
};

static void fake_log(struct fake *f, const char *what)
{
    strncat(f->log, what, sizeof(f->log) - strlen(f->log) - 1);
}

static int fake_get(void *userdata, char ret_id[SESSION_ID_MAX + 1], struct sbx_error *err)
{
    struct fake *f = userdata;
    int r = f->get_r[f->gets];
    snprintf(ret_id, SESSION_ID_MAX + 1, "s%d", f->gets);
    f->gets++;
    fake_log(f, "g");
    if (r < 0)
        sbx_error_set(err, SBX_ERR_INVALID, "INVALID_REQUEST", NULL, "get failed");
    return r;
}

static int fake_prepare(void *userdata, const char *id, struct sbx_error *err)
{
    struct fake *f = userdata;
    (void)err;
    assert_string_equal(id, f->prepares == 0 ? "s0" : "s1");
    fake_log(f, "p");
    return f->prepare_r[f->prepares++];
}

static bool fake_executing(void *userdata, const char *id)
{
    struct fake *f = userdata;
    if (id) {
        f->registered++;
        fake_log(f, "r");
        return !f->cancelled_before;
    }
    f->cleared++;
    fake_log(f, "c");
    return !f->cancelled_during;
}

static int fake_execute(void *userdata, const char *id, const char *code, int64_t timeout_ms,
                        json_t **ret_result, struct sbx_error *err)
{
    struct fake *f = userdata;
    assert_string_equal(code, "x = 1");
    assert_int_equal(timeout_ms, 250);
    fake_log(f, "x");
    int r = f->execute_r[f->executes++];
    if (r == 0)
        *ret_result = json_pack("{s:s}", "ranIn", id);
    else if (r < 0)
        sbx_error_set(err, SBX_ERR_NOT_FOUND, "NOT_FOUND", NULL, "session %s has ended", id);
    return r;
}

static void fake_ended(void *userdata, const char *id)
{
    struct fake *f = userdata;
    snprintf(f->ended[f->n_ended++], SESSION_ID_MAX + 1, "%s", id);
    fake_log(f, "e");
}

static int run(struct fake *f, json_t **result, struct sbx_error *err)
{
    const struct session_call call = {.userdata = f,
                                      .get = fake_get,
                                      .prepare = fake_prepare,
                                      .executing = fake_executing,
                                      .execute = fake_execute,
                                      .ended = fake_ended};
    *result = NULL;
    /* No sessions: with call->execute, sessions_call() itself runs nothing. */
    return sessions_call(NULL, &call, "x = 1", 250, NULL, result, err);
}

static void test_first_try(void **state)
{
    (void)state;
    struct fake f = {0};
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), 0);
    assert_string_equal(f.log, "gprxc"); /* get, prepare, registered, executed, cleared */
    assert_string_equal(json_string_value(json_object_get(result, "ranIn")), "s0");
    assert_int_equal(f.n_ended, 0);
    json_decref(result);
    sbx_error_clear(&err);
}

static void test_ended_before_files_is_replaced(void **state)
{
    (void)state;
    struct fake f = {.prepare_r = {-ENOENT, 0}};
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), 0);
    assert_string_equal(f.log, "gpegprxc");
    assert_string_equal(f.ended[0], "s0"); /* forgotten, then the next one got */
    assert_string_equal(json_string_value(json_object_get(result, "ranIn")), "s1");
    json_decref(result);
    sbx_error_clear(&err);
}

static void test_ended_before_execution_is_replaced(void **state)
{
    (void)state;
    struct fake f = {.execute_r = {-ENOENT, 0}};
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), 0);
    assert_string_equal(f.log, "gprxcegprxc");
    assert_int_equal(f.registered, 2);
    assert_int_equal(f.cleared, 2); /* every registration is cleared */
    assert_null(err.message);       /* the first try's error is not the answer */
    assert_string_equal(json_string_value(json_object_get(result, "ranIn")), "s1");
    json_decref(result);
    sbx_error_clear(&err);
}

static void test_ended_twice_is_told(void **state)
{
    (void)state;
    struct fake f = {.execute_r = {-ENOENT, -ENOENT}};
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), -ENOENT);
    assert_int_equal(f.gets, 2); /* no third try */
    assert_int_equal(f.n_ended, 2);
    assert_string_equal(f.ended[1], "s1");
    assert_null(result);
    assert_int_equal(err.kind, SBX_ERR_NOT_FOUND);
    assert_string_equal(err.message, "session s1 has ended"); /* the last try's */
    sbx_error_clear(&err);
}

static void test_get_failure_is_final(void **state)
{
    (void)state;
    struct fake f = {.get_r = {-EINVAL, 0}};
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), -EINVAL);
    assert_string_equal(f.log, "g"); /* nothing prepared, nothing run, nothing forgotten */
    assert_string_equal(err.message, "get failed");
    sbx_error_clear(&err);
}

static void test_cancelled_before_nothing_runs(void **state)
{
    (void)state;
    struct fake f = {.cancelled_before = true};
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), -ECANCELED);
    assert_string_equal(f.log, "gpr");
    assert_int_equal(f.executes, 0);
    sbx_error_clear(&err);
}

static void test_cancelled_during_is_not_retried(void **state)
{
    (void)state;
    /* The canceller ended the session: its end is the cancellation, not a reason to retry. */
    struct fake f = {.execute_r = {-ENOENT, 0}, .cancelled_during = true};
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), -ECANCELED);
    assert_string_equal(f.log, "gprxc");
    assert_int_equal(f.n_ended, 0);
    sbx_error_clear(&err);
}

static void test_front_end_value_passes(void **state)
{
    (void)state;
    struct fake f = {.execute_r = {1, 0}}; /* e.g. the MCP server's "waits for a decision" */
    json_t *result;
    struct sbx_error err;
    assert_int_equal(run(&f, &result, &err), 1);
    assert_string_equal(f.log, "gprxc");
    sbx_error_clear(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_try),
        cmocka_unit_test(test_ended_before_files_is_replaced),
        cmocka_unit_test(test_ended_before_execution_is_replaced),
        cmocka_unit_test(test_ended_twice_is_told),
        cmocka_unit_test(test_get_failure_is_final),
        cmocka_unit_test(test_cancelled_before_nothing_runs),
        cmocka_unit_test(test_cancelled_during_is_not_retried),
        cmocka_unit_test(test_front_end_value_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
