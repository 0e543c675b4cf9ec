// SPDX-License-Identifier: MIT
/*
 * thread — the life of a service thread, or of a few alike (a worker pool's): start them, let
 * them ask whether they should stop or sleep until asked (or until a deadline), and stop them:
 * set the flag, wake them, join every one. The one place where sandboxd writes "stop flag +
 * broadcast + join"; its users are the HTTP guard, the worker pool (util/workpool.c), the warm
 * pool's thread and reuse sweeper, the egress proxy and its resolvers, the session reaper and
 * CPU watchdog, the framework's log sender, the MCP server's progress flusher and the stdio MCP
 * client's reader.
 *
 * The flag is set under the owner's mutex, the one its condition variable waits with, so a stop
 * cannot fall between a thread's check and its sleep; a thread that sleeps in poll() or
 * epoll_wait() instead is woken by its owner's eventfd. Threads are never detached: a stop
 * returns only once every thread returned. Not for threads that end on their own (cmd/mcp.c's
 * per-request workers are detached and counted).
 */
#ifndef SANDBOXD_UTIL_THREAD_H
#define SANDBOXD_UTIL_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct thread_group {
    const char *name;      /* for messages (static): "http guard" */
    pthread_mutex_t *lock; /* the owner's, held while the flag is set; NULL: none */
    pthread_cond_t *cond;  /* the owner's, broadcast on stop; NULL: none */
    int wake_fd;           /* an eventfd the threads poll, written on stop; -1: none */
    atomic_bool stop;
    unsigned n, max;    /* started, at most */
    pthread_t one;      /* the thread of a group of one */
    pthread_t *threads; /* max > 1: max of them */
};

/* Set g up for at most max threads (0 counts as 1) around the owner's lock, cond and wake_fd
 * (all borrowed, any may be NULL / -1). 0, or -ENOMEM. Starts nothing. */
int thread_group_init(struct thread_group *g, const char *name, unsigned max, pthread_mutex_t *lock,
                      pthread_cond_t *cond, int wake_fd);
/* Start one more thread running fn(arg). 0; -ESHUTDOWN once a stop was asked; -ENOSPC when max
 * run; or pthread_create's error, negated. Called under the owner's lock, or before g is shared:
 * it counts the threads without a lock of its own. */
int thread_group_start(struct thread_group *g, void *(*fn)(void *), void *arg);
/* Threads started (under the owner's lock, or from the only thread that starts them). */
unsigned thread_group_count(const struct thread_group *g);
/* A stop was asked. Exact under the owner's lock; a hint without it. */
bool thread_group_stopping(const struct thread_group *g);
/* Under the owner's lock: sleep on the owner's condition variable until it is signalled, a stop
 * is asked or deadline_us passes (monotonic µs, for a condition variable made by
 * clock_cond_init(); 0: no deadline). true while no stop was asked: the caller's loop condition. */
bool thread_group_wait(struct thread_group *g, int64_t deadline_us);
/* Ask every thread to stop and wake them: set the flag, broadcast cond, write wake_fd. Called with
 * the owner's lock held, so the owner may change its own state in the same critical section.
 * Idempotent. */
void thread_group_stop_locked(struct thread_group *g);
/* Join every thread started (they must be on their way out: a stop was asked, or they return
 * on their own). Idempotent; not from one of the group's threads. */
void thread_group_join(struct thread_group *g);
/* thread_group_stop_locked() under the owner's lock, then thread_group_join(). */
void thread_group_stop(struct thread_group *g);
/* Free what init allocated; the threads are joined (or none ran). Idempotent. A group that is
 * zeroed and was never set up may be stopped, joined and done: nothing happens. */
void thread_group_done(struct thread_group *g);

#endif
