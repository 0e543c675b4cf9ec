// SPDX-License-Identifier: MIT
/* Unit tests: util/thread, the stop flag + wake + join of every service thread: sleepers on a
 * condition variable and a poller on an eventfd are woken and joined, waits end at their
 * deadline, the caps, and a group that was never set up. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/clock.h"
#include "util/thread.h"

struct sleeper {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct thread_group g;
    int64_t deadline_us; /* 0: sleep until stopped */
    unsigned rounds;     /* wakes without a stop */
    bool out;
};

static void *sleeper_main(void *arg)
{
    struct sleeper *s = arg;
    pthread_mutex_lock(&s->lock);
    while (thread_group_wait(&s->g, s->deadline_us))
        s->rounds++;
    s->out = true;
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void thread_stop_wakes_sleepers_and_joins(void **state)
{
    struct sleeper s = {.lock = PTHREAD_MUTEX_INITIALIZER};
    clock_cond_init(&s.cond);
    assert_int_equal(thread_group_init(&s.g, "test", 3, &s.lock, &s.cond, -1), 0);
    for (int i = 0; i < 3; i++) {
        pthread_mutex_lock(&s.lock);
        assert_int_equal(thread_group_start(&s.g, sleeper_main, &s), 0);
        pthread_mutex_unlock(&s.lock);
    }
    assert_int_equal(thread_group_start(&s.g, sleeper_main, &s), -ENOSPC);
    assert_int_equal(thread_group_count(&s.g), 3);
    assert_false(thread_group_stopping(&s.g));
    thread_group_stop(&s.g); /* returns once all three returned */
    assert_true(s.out);
    assert_true(thread_group_stopping(&s.g));
    assert_int_equal(thread_group_count(&s.g), 0);
    assert_int_equal(thread_group_start(&s.g, sleeper_main, &s), -ESHUTDOWN);
    thread_group_stop(&s.g); /* idempotent */
    thread_group_done(&s.g);
    thread_group_done(&s.g);
    pthread_cond_destroy(&s.cond);
}

static void thread_wait_ends_at_its_deadline(void **state)
{
    struct sleeper s = {.lock = PTHREAD_MUTEX_INITIALIZER};
    clock_cond_init(&s.cond);
    assert_int_equal(thread_group_init(&s.g, "test", 1, &s.lock, &s.cond, -1), 0);
    int64_t start = clock_mono_us();
    pthread_mutex_lock(&s.lock);
    assert_true(thread_group_wait(&s.g, start + 50000)); /* nobody signals: the deadline */
    pthread_mutex_unlock(&s.lock);
    assert_true(clock_mono_us() - start >= 50000);
    /* A thread woken without a stop goes on sleeping until the stop. */
    s.deadline_us = 0;
    pthread_mutex_lock(&s.lock);
    assert_int_equal(thread_group_start(&s.g, sleeper_main, &s), 0);
    pthread_cond_signal(&s.cond); /* a wake that is no stop: one more round */
    pthread_mutex_unlock(&s.lock);
    thread_group_stop(&s.g);
    assert_true(s.out);
    pthread_mutex_lock(&s.lock);
    assert_false(thread_group_wait(&s.g, 0)); /* after a stop it returns at once */
    pthread_mutex_unlock(&s.lock);
    thread_group_done(&s.g);
    pthread_cond_destroy(&s.cond);
}

/* A thread that sleeps in poll(): the stop reaches it through the owner's eventfd. */
struct poller {
    int fd;
    bool out;
};

static void *poller_main(void *arg)
{
    struct poller *pl = arg;
    struct pollfd pfd = {.fd = pl->fd, .events = POLLIN};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
    pl->out = true;
    return NULL;
}

static void thread_stop_writes_the_wake_fd(void **state)
{
    struct poller pl = {.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    assert_true(pl.fd >= 0);
    struct thread_group g;
    assert_int_equal(thread_group_init(&g, "test", 1, NULL, NULL, pl.fd), 0);
    assert_int_equal(thread_group_start(&g, poller_main, &pl), 0);
    thread_group_stop(&g);
    assert_true(pl.out);
    uint64_t v = 0;
    assert_int_equal(read(pl.fd, &v, sizeof(v)), (ssize_t)sizeof(v));
    assert_int_equal(v, 1);
    thread_group_done(&g);
    close(pl.fd);
}

/* A zeroed group that was never set up (an owner failing half-way): stopping it touches no fd
 * (fd 0 is not its wake fd) and joins nothing. */
static void thread_group_never_set_up_is_a_no_op(void **state)
{
    struct thread_group g = {0};
    thread_group_stop(&g);
    thread_group_join(&g);
    thread_group_done(&g);
    assert_false(thread_group_stopping(&g));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thread_stop_wakes_sleepers_and_joins),
        cmocka_unit_test(thread_wait_ends_at_its_deadline),
        cmocka_unit_test(thread_stop_writes_the_wake_fd),
        cmocka_unit_test(thread_group_never_set_up_is_a_no_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
