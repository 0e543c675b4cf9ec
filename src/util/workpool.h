// SPDX-License-Identifier: MIT
/*
 * workpool — the one bounded worker pool: threads that run jobs which may block (an execution
 * takes seconds, a tool call minutes) so that the threads which accept work never wait. Used by
 * the HTTP server (http/server.c: routes and streamed replies, one queue) and by sessions
 * (session/: MCP tool calls, a queue per session). Nothing here knows about either.
 *
 * Everything is capped: threads (started on demand, one per job at most, at most `workers`;
 * they live until the pool stops, since a thread per job would cost a clone and an exit each
 * time), jobs in the pool, jobs of one queue (queued or running) and jobs of one queue running at
 * once, so one owner can neither make sandboxd start threads without bound nor take every
 * worker. A job beyond a cap is refused at submission, untouched; the caller answers it with an
 * error. Queues with work take turns (round robin); one queue's jobs run in FIFO order. A queue
 * is embedded in its owner, and a job says how to run and how to release itself.
 *
 * Thread-safe. workpool_stop() runs every job already accepted and joins every thread.
 */
#ifndef SANDBOXD_UTIL_WORKPOOL_H
#define SANDBOXD_UTIL_WORKPOOL_H

#include <stdbool.h>
#include <stdint.h>

struct workpool_job {
    /* Runs on a worker thread. With done NULL it also releases the job and may free it. */
    void (*run)(struct workpool_job *job);
    /* Releases the job, after run() (ran true) or instead of it when the job is cancelled (ran
     * false); may be NULL (see run). It may free the queue's owner: the pool touches neither
     * afterwards. */
    void (*done)(struct workpool_job *job, bool ran);
    struct workpool_job *next;
};

/* One owner's queue, embedded in it and zero-initialised. The owner must outlive its jobs
 * (jobs usually hold a reference to it, dropped in done()). */
struct workpool_queue {
    struct workpool_job *head, *tail;
    unsigned queued, running;
    bool in_ring;
    struct workpool_queue *next; /* the ring of queues with work to hand out */
};

/* The caps. UINT_MAX for one that should never refuse. */
struct workpool_options {
    const char *name;       /* for messages (static): "http", "tool calls" */
    unsigned workers;       /* threads at most (0 counts as 1) */
    unsigned max_jobs;      /* jobs queued or running in the whole pool */
    unsigned queue_max;     /* jobs of one queue, queued or running */
    unsigned queue_running; /* jobs of one queue running at once (0 counts as 1) */
};

struct workpool_stats {
    unsigned threads;     /* started so far (0 once stopped) */
    unsigned max_threads; /* the cap */
    unsigned running;     /* jobs running */
    unsigned jobs;        /* jobs queued or running */
    uint64_t refused;     /* submissions refused */
};

struct workpool;

/* 0, or -ENOMEM. No thread starts before the first job. */
int workpool_new(const struct workpool_options *opt, struct workpool **ret);
/* Stops (if not yet) and frees; NULL-safe. */
void workpool_free(struct workpool *p);
/* Queue job on q. 0 (the pool owns the job until done(), or run() with done NULL), or, with the
 * job untouched: -EAGAIN (q holds queue_max jobs), -EBUSY (the pool holds max_jobs), -ESHUTDOWN
 * (stopped), -ENOMEM (no worker runs and none could be started). */
int workpool_submit(struct workpool *p, struct workpool_queue *q, struct workpool_job *job);
/* Take q's queued jobs back (done(job, false) each, on this thread; their done must not be
 * NULL); running ones finish. */
void workpool_cancel(struct workpool *p, struct workpool_queue *q);
/* Wait until no job is queued or running: 0, or -ETIMEDOUT at deadline_us (monotonic). */
int workpool_wait_idle(struct workpool *p, int64_t deadline_us);
/* Refuse new jobs, let the workers run every job already accepted, join them. Idempotent. */
void workpool_stop(struct workpool *p);
void workpool_stats(struct workpool *p, struct workpool_stats *ret);

#endif
