// SPDX-License-Identifier: MIT
/*
 * run — drive one execution in a cell: send the job frame, collect stdout
 * and stderr under a byte cap, read protocol frames, enforce the wall-clock
 * deadline, and turn whatever happened into a verdict plus the final frame.
 * Every path ends with the cell either answered or killed; nothing waits
 * forever on a sandbox.
 */
#ifndef SANDBOXD_EXEC_RUN_H
#define SANDBOXD_EXEC_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/artifact.h"
#include "exec/cell.h"
#include "exec/verdict.h"
#include "util/buf.h"

/* The most bytes of Python source one execution takes, whoever asks for it (POST /execute's
 * taskDetails.code, a session's execute, run_python): the one definition of that limit. */
#define EXEC_MAX_CODE (1u << 20)

/* What exec_hooks.pending reports. */
#define EXEC_PENDING_WRITE 1u /* bytes are queued for the cell: poll for POLLOUT, then flush() */
#define EXEC_PENDING_FULL  2u /* so many that no further frame is read until they are taken */

struct exec_hooks {
    void *userdata;
    /* A frame that is not final (sessions: rpc_request...). Borrowed. Return <0 to abort the
     * execution, which kills the cell. */
    int (*on_message)(void *userdata, struct cell *c, json_t *msg);
    /* Output as it arrives; stream 1 = stdout, 2 = stderr. */
    void (*on_output)(void *userdata, int stream, const char *data, size_t len);
    /* Writes queued for the cell by the hook's owner (sessions: answers to RPCs), NULL: none.
     * wake_fd is an eventfd (or -1) that other threads signal after queueing, so that the
     * executing thread polls for POLLOUT again. */
    unsigned (*pending)(void *userdata);
    void (*flush)(void *userdata, struct cell *c);
    int wake_fd;
    /* An artifact the execution produced and the host kept (exec/artifact.h); borrowed. */
    void (*on_artifact)(void *userdata, json_t *artifact);
    /* Time the host holds the execution (sessions: a tool call waits for a person's decision),
     * which does not count against the time limit: the deadline moves by what it returns, the
     * microseconds held so far. NULL: never held. Called each turn with the time now; it sets
     * *ret_wake_us to when it must be called again at the latest while something is held (its
     * own deadlines), else to 0. */
    int64_t (*held)(void *userdata, int64_t now_us, int64_t *ret_wake_us);
};

struct exec_request {
    const json_t *job;              /* borrowed; NULL: send nothing (the job is already queued) */
    int64_t timeout_us;             /* wall clock */
    uint64_t cpu_limit_us;          /* informs the TIMEOUT(cpu) attribution; 0 = none */
    size_t output_limit;            /* stdout + stderr bytes; more is OUTPUT_LIMIT */
    bool keep_alive;                /* sessions: leave the cell running after the final frame */
    bool no_accounting;             /* what the job costs is nobody's bill (a session's set-up):
                                     * the final frame's verdict reads no cgroup (no cpu_us,
                                     * memory_peak, nor a MEMORY_LIMIT found there) */
    int64_t interrupt_grace_us;     /* at the deadline send SIGINT and wait this long for the final
                                     * frame before killing (sessions); 0: kill at once */
    const char *final_type;         /* type of the final frame besides "error"; default "result" */
    int64_t final_id;               /* > 0: the final frame must carry this "id" (any other is an
                                     * ordinary frame), and "error" frames are not final */
    const char *const *raw_path;    /* a member of the final frame handed over as text (raw), not
                                     * parsed: a result's data passes through (NULL: none) */
    struct artifact_caps artifacts; /* display frames kept at most (zero: none) */
    const struct exec_hooks *hooks;
};

struct exec_outcome {
    struct verdict verdict;
    json_t *final;        /* the final frame, or NULL */
    struct frame_raw raw; /* the final frame's raw_path member, when it had one (null in final) */
    struct buf out;       /* captured stdout (at most output_limit) */
    struct buf err;       /* captured stderr */
    char *internal;       /* VERDICT_INTERNAL / VERDICT_PROTOCOL: what went wrong */
    bool cell_alive;      /* keep_alive and the cell survived */
    bool interrupted;     /* the deadline passed and SIGINT was sent */
    struct artifact_set artifacts; /* what the display frames brought, checked and capped */
};

void exec_outcome_done(struct exec_outcome *o);
/* Always fills *ret (call exec_outcome_done); returns 0, or -errno for INTERNAL. */
int exec_run(struct cell *c, const struct exec_request *req, struct exec_outcome *ret);

#endif
