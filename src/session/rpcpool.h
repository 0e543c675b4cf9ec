// SPDX-License-Identifier: MIT
/*
 * rpcpool — the bounded host work behind sessions' RPCs (MCP tool calls):
 * a pool of worker threads shared by every session, with a queue per
 * session served round-robin. Everything is capped: threads (started on
 * demand, at most `workers`), jobs in the pool, jobs of one queue (queued or
 * running) and jobs of one queue running at once, so one session can
 * neither make sandboxd start threads without bound nor take every worker.
 * A job beyond a cap is refused at submission; the caller answers it with
 * an error. Nothing here knows about sessions: a queue is embedded in its
 * owner, and a job says how to run and how to release itself.
 *
 * Thread-safe. rpcpool_stop() waits for every job and joins every thread.
 */
#ifndef SANDBOXD_SESSION_RPCPOOL_H
#define SANDBOXD_SESSION_RPCPOOL_H

#include <jansson.h>
#include <stdbool.h>

struct rpcpool_job {
    /* Runs on a worker thread. */
    void (*run)(struct rpcpool_job *job);
    /* Releases the job, after run() (ran true) or instead of it when the job is cancelled (ran
     * false). It may free the queue's owner: the pool touches neither afterwards. */
    void (*done)(struct rpcpool_job *job, bool ran);
    struct rpcpool_job *next;
};

/* One owner's queue, embedded in it and zero-initialised. The owner must outlive its jobs
 * (jobs usually hold a reference to it, dropped in done()). */
struct rpcpool_queue {
    struct rpcpool_job *head, *tail;
    unsigned queued, running;
    bool in_ring;
    struct rpcpool_queue *next; /* the ring of queues with work to hand out */
};

struct rpcpool_options {
    unsigned workers;       /* threads at most */
    unsigned max_jobs;      /* jobs queued or running in the whole pool */
    unsigned queue_max;     /* jobs of one queue, queued or running */
    unsigned queue_running; /* jobs of one queue running at once */
};

struct rpcpool;

int rpcpool_new(const struct rpcpool_options *opt, struct rpcpool **ret);
/* Stops (if not yet) and frees; NULL-safe. */
void rpcpool_free(struct rpcpool *p);
/* Queue job on q. 0 (the pool owns the job until done()), or, with the job untouched:
 * -EAGAIN (q holds queue_max jobs), -EBUSY (the pool holds max_jobs), -ESHUTDOWN (stopped),
 * -ENOMEM (no worker could be started). */
int rpcpool_submit(struct rpcpool *p, struct rpcpool_queue *q, struct rpcpool_job *job);
/* Take q's queued jobs back (done(job, false) each, on this thread); running ones finish. */
void rpcpool_cancel(struct rpcpool *p, struct rpcpool_queue *q);
/* Refuse new jobs, let the workers finish every job already taken, join them. Idempotent. */
void rpcpool_stop(struct rpcpool *p);
/* {workers, busy, jobs, refused} (new reference). */
json_t *rpcpool_stats(struct rpcpool *p);

#endif
