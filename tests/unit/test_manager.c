// SPDX-License-Identifier: MIT
/* Unit tests: exec/manager (admission, queue limit, adaptive timeouts, abort at shutdown). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/cell.h"
#include "exec/manager.h"
#include "util/clock.h"

static struct manager *make(unsigned running, unsigned queued)
{
    struct manager_options o = {.max_running = running,
                                .max_queued = queued,
                                .default_timeout_ms = 10000,
                                .max_timeout_ms = 60000,
                                .adaptive_floor_ms = 1000};
    struct manager *m;
    assert_int_equal(manager_new(&o, &m), 0);
    return m;
}

static void timeout_rules(void **state)
{
    struct manager *m = make(1, 1);
    const char *rule;
    assert_int_equal(manager_timeout_ms(m, "a/s.py", 500, &rule), 500);
    assert_string_equal(rule, "requested");
    assert_int_equal(manager_timeout_ms(m, "a/s.py", 999999, &rule), 60000);
    assert_int_equal(manager_timeout_ms(m, "a/s.py", 0, &rule), 10000);
    assert_string_equal(rule, "default");
    for (int i = 0; i < 4; i++)
        manager_record(m, "a/s.py", 2000000, true);                     /* 2 s runs */
    assert_int_equal(manager_timeout_ms(m, "a/s.py", 0, &rule), 10000); /* too few samples */
    manager_record(m, "a/s.py", 2000000, true);
    assert_int_equal(manager_timeout_ms(m, "a/s.py", 0, &rule), 8100); /* 4 x 2000 + 100 */
    assert_string_equal(rule, "adaptive");
    for (int i = 0; i < 10; i++)
        manager_record(m, "fast", 3000, true); /* 3 ms runs: the floor applies */
    assert_int_equal(manager_timeout_ms(m, "fast", 0, &rule), 1000);
    for (int i = 0; i < 10; i++)
        manager_record(m, "slow", 50000000, true); /* 50 s runs: the maximum applies */
    assert_int_equal(manager_timeout_ms(m, "slow", 0, &rule), 60000);
    for (int i = 0; i < 10; i++)
        manager_record(m, "failing", 2000000, false); /* failures do not count */
    assert_int_equal(manager_timeout_ms(m, "failing", 0, &rule), 10000);
    manager_free(m);
}

static void queue_full_is_ebusy(void **state)
{
    struct manager *m = make(1, 0);
    int64_t wait;
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), 0);
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), -EBUSY);
    manager_leave(m);
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), 0);
    manager_leave(m);
    json_t *st = manager_stats(m);
    assert_int_equal(json_integer_value(json_object_get(st, "rejected")), 1);
    json_decref(st);
    manager_free(m);
}

struct waiter {
    struct manager *m;
    int result;
    int64_t wait;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->result = manager_enter(w->m, clock_mono_us() + 5000000, &w->wait);
    if (w->result == 0)
        manager_leave(w->m);
    return NULL;
}

static void queued_caller_waits_for_a_slot(void **state)
{
    struct manager *m = make(1, 4);
    int64_t wait;
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), 0);
    struct waiter w = {.m = m};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    usleep(100000);
    manager_leave(m);
    pthread_join(t, NULL);
    assert_int_equal(w.result, 0);
    assert_true(w.wait >= 50000);
    manager_free(m);
}

static void queue_deadline(void **state)
{
    struct manager *m = make(1, 4);
    int64_t wait;
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), 0);
    assert_int_equal(manager_enter(m, clock_mono_us() + 50000, &wait), -ETIMEDOUT);
    manager_leave(m);
    manager_free(m);
}

static const struct cell_ops no_ops;

static void abort_ends_running_and_queued_executions(void **state)
{
    struct manager *m = make(1, 4);
    int64_t wait;
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), 0);
    struct cell *c = cell_new(&no_ops, 1024); /* no process: cell_kill only marks it */
    assert_non_null(c);
    struct manager_run run;
    assert_int_equal(manager_attach(m, &run, c), 0);
    struct waiter w = {.m = m};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w); /* queued behind the running one */
    for (;;) {
        json_t *st = manager_stats(m);
        json_int_t queued = json_integer_value(json_object_get(st, "queued"));
        json_decref(st);
        if (queued == 1)
            break;
        usleep(1000);
    }
    manager_abort(m);
    pthread_join(t, NULL);
    assert_int_equal(w.result, -ESHUTDOWN);
    assert_true(c->killed);
    assert_true(manager_detach(m, &run)); /* it knows the end was the abort's */
    manager_leave(m);
    cell_free(c);
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), -ESHUTDOWN);
    struct manager_run later;
    assert_int_equal(manager_attach(m, &later, NULL), -ESHUTDOWN);
    manager_free(m);
}

static void detach_without_abort_is_not_aborted(void **state)
{
    struct manager *m = make(2, 0);
    int64_t wait;
    assert_int_equal(manager_enter(m, clock_mono_us() + 1000000, &wait), 0);
    struct manager_run a, b;
    assert_int_equal(manager_attach(m, &a, NULL), 0);
    assert_int_equal(manager_attach(m, &b, NULL), 0);
    assert_false(manager_detach(m, &a)); /* from the middle of the list, then the last */
    assert_false(manager_detach(m, &b));
    manager_leave(m);
    manager_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timeout_rules),
        cmocka_unit_test(queue_full_is_ebusy),
        cmocka_unit_test(queued_caller_waits_for_a_slot),
        cmocka_unit_test(queue_deadline),
        cmocka_unit_test(abort_ends_running_and_queued_executions),
        cmocka_unit_test(detach_without_abort_is_not_aborted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
