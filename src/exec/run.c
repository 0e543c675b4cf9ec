// SPDX-License-Identifier: MIT
/*
 * run — see run.h.
 */
#include "exec/run.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/frame.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

enum { PFD_PROTO, PFD_OUT, PFD_ERR, PFD_PID, PFD_WAKE, PFD_N };

struct exec_state {
    struct cell *c;
    const struct exec_request *req;
    struct exec_outcome *o;
    size_t output_total;
    int64_t deadline; /* the one the main loop keeps (it moves after an interrupt) */
    bool output_over;
    bool proto_closed;
    bool exited;
    bool oom_killed; /* the cgroup's OOM killer took a process (from exec_accounting's read) */
};

void exec_outcome_done(struct exec_outcome *o)
{
    if (!o)
        return;
    json_decref(o->final);
    o->final = NULL;
    frame_raw_done(&o->raw);
    buf_free(&o->out);
    buf_free(&o->err);
    free(o->internal);
    o->internal = NULL;
    artifact_set_done(&o->artifacts);
}

static void exec_fail(struct exec_outcome *o, enum verdict_status status, const char *what, int err)
{
    o->verdict.status = status;
    free(o->internal);
    if (asprintf(&o->internal, "%s: %s", what, strerror(err < 0 ? -err : err)) < 0)
        o->internal = NULL;
}

static void exec_internal(struct exec_outcome *o, const char *what, int err)
{
    exec_fail(o, VERDICT_INTERNAL, what, err);
}

/* A frame the reader refused: the sandbox's fault (untrusted code can write to fd 3 too). */
static void exec_bad_frame(struct exec_state *s, int r, const char *why)
{
    struct exec_outcome *o = s->o;
    o->verdict.status = VERDICT_PROTOCOL;
    free(o->internal);
    o->internal = NULL;
    if (r == -EMSGSIZE)
        o->internal = fmt_str("the result is %zu bytes, larger than the limit of %zu bytes",
                              s->c->reader.refused_len, s->c->reader.max_frame);
    else if (r == -E2BIG)
        o->internal = fmt_str("the result holds too many values for its size (%s)", why);
    else
        o->internal = fmt_str("the sandbox broke the result protocol: %s", why);
}

/* Read what is available on an output pipe. Returns false at EOF. */
static bool exec_read_output(struct exec_state *s, int fd, int stream)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN; /* nothing more now; an error counts as EOF */
        if (n == 0)
            return false;
        struct buf *b = stream == 1 ? &s->o->out : &s->o->err;
        size_t limit = s->req->output_limit;
        size_t room = s->output_total < limit ? limit - s->output_total : 0;
        size_t keep = (size_t)n < room ? (size_t)n : room;
        bool full = false;
        if (keep)
            buf_append_capped(b, chunk, keep, &full);
        s->output_total += (size_t)n;
        if (keep < (size_t)n || full) {
            s->output_over = true;
            if (stream == 1)
                s->o->verdict.stdout_truncated = true;
            else
                s->o->verdict.stderr_truncated = true;
        }
        if (keep && s->req->hooks && s->req->hooks->on_output)
            s->req->hooks->on_output(s->req->hooks->userdata, stream, chunk, keep);
        if (s->output_over)
            return true;
    }
}

static bool exec_is_final(const struct exec_request *req, json_t *msg)
{
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (!type)
        return false;
    if (req->final_id > 0) {
        /* Sessions: results stay with their execution, whatever the code writes on fd 3. */
        json_t *id = json_object_get(msg, "id");
        return strcmp(type, req->final_type) == 0 && json_is_integer(id) &&
               json_integer_value(id) == req->final_id;
    }
    return strcmp(type, "error") == 0 ||
           strcmp(type, req->final_type ? req->final_type : "result") == 0;
}

/* The hooks' owner has so much queued for the cell that no further frame should be taken
 * (backpressure: the cell is not reading its answers). */
static bool exec_outbox_full(const struct exec_state *s)
{
    const struct exec_hooks *h = s->req->hooks;
    return h && h->pending && (h->pending(h->userdata) & EXEC_PENDING_FULL);
}

/* Handle the frames the reader holds; returns 1 when the final frame arrived, 0 to go on (also
 * when the outbox filled up or the deadline passed: the rest stay buffered), <0 to abort. */
static int exec_handle_frames(struct exec_state *s)
{
    for (;;) {
        /* Frames may be cheap to send and dear to answer: the deadline is looked at between
         * them, not only between reads. */
        if (exec_outbox_full(s) || clock_mono_us() >= s->deadline)
            return 0;
        json_t *msg = NULL;
        struct frame_raw raw;
        const char *why = NULL;
        int r = frame_reader_next_raw(&s->c->reader, s->req->raw_path, &msg, &raw, &why);
        if (r == 0)
            return 0;
        if (r < 0) {
            log_warn("exec: bad frame from pid %d: %s", (int)s->c->pid, why);
            exec_bad_frame(s, r, why);
            return r;
        }
        if (exec_is_final(s->req, msg)) {
            s->o->final = msg;
            s->o->raw = raw;
            artifact_set_note_final(&s->o->artifacts, msg);
            return 1;
        }
        frame_raw_done(&raw); /* only a final frame has one that counts */
        const char *type = json_string_value(json_object_get(msg, "type"));
        if (type && strcmp(type, "display") == 0) {
            json_t *kept = artifact_set_add(&s->o->artifacts, &s->req->artifacts, msg);
            if (kept && s->req->hooks && s->req->hooks->on_artifact)
                s->req->hooks->on_artifact(s->req->hooks->userdata, kept);
            json_decref(msg);
            continue;
        }
        int hr = 0;
        if (!type || strcmp(type, "ready") != 0) {
            if (s->req->hooks && s->req->hooks->on_message)
                hr = s->req->hooks->on_message(s->req->hooks->userdata, s->c, msg);
        }
        json_decref(msg);
        if (hr < 0) {
            exec_internal(s->o, "the execution was aborted", hr);
            return hr;
        }
    }
}

/* Read one chunk of protocol frames; returns 1 when the final frame arrived, 0 to go on, <0 to
 * abort. Every complete frame is handled before more is read (the reader holds at most one
 * chunk beyond a frame), so nothing is read while frames wait for the outbox to drain; and one
 * chunk at a time, so that a flood of frames cannot keep the caller from its deadline. */
static int exec_read_proto(struct exec_state *s)
{
    char chunk[FRAME_READ_CHUNK];
    int r = exec_handle_frames(s);
    if (r != 0 || frame_reader_ready(&s->c->reader))
        return r;
    ssize_t n;
    while ((n = read(s->c->proto_fd, chunk, sizeof(chunk))) < 0 && errno == EINTR)
        ;
    if (n < 0 && errno == EAGAIN)
        return 0;
    if (n <= 0) {
        s->proto_closed = true;
        return 0;
    }
    r = frame_reader_feed(&s->c->reader, chunk, (size_t)n);
    if (r < 0) {
        exec_bad_frame(s, r, "a frame too large");
        return r;
    }
    return exec_handle_frames(s);
}

static void exec_drain_outputs(struct exec_state *s)
{
    if (s->c->out_fd >= 0)
        (void)exec_read_output(s, s->c->out_fd, 1);
    if (s->c->err_fd >= 0)
        (void)exec_read_output(s, s->c->err_fd, 2);
}

static void exec_accounting(struct exec_state *s, const struct cell_exit *ex)
{
    struct verdict *v = &s->o->verdict;
    struct cgroup_usage u;
    json_t *usage = s->o->final ? json_object_get(s->o->final, "usage") : NULL;
    json_t *faults = json_object_get(usage, "minFlt");
    if (json_is_integer(faults) && json_integer_value(faults) >= 0) {
        /* What the sandbox says about itself: informative, never used for a limit. */
        v->minor_faults = (uint64_t)json_integer_value(faults);
        v->have_faults = true;
    }
    /* One read of the cgroup per execution: each file of it is an open, a read and a close
     * (~20 us apiece on cgroup v1), and an execution's whole cost is a few hundred. */
    bool have_usage = s->c->cgroup && cgroup_cell_usage(s->c->cgroup, &u) == 0;
    s->oom_killed = have_usage && u.oom_kills > 0;
    if (have_usage && u.have_cpu) {
        v->cpu_us = u.cpu_ns / 1000;
        v->accounting_from_cgroup = true;
        if (u.have_memory) {
            v->memory_peak = u.memory_peak;
            return;
        }
        /* No memory.peak (cgroup v2 before kernel 5.19): the peak comes from rusage. */
        v->memory_from_rusage = true;
    }
    if (ex) {
        if (!v->accounting_from_cgroup)
            v->cpu_us = ex->cpu_us;
        v->memory_peak = ex->maxrss_kb * 1024;
        return;
    }
    /* Last resort for warm cells: what the runtime measured itself. */
    if (!v->accounting_from_cgroup)
        v->cpu_us = (uint64_t)json_integer_value(json_object_get(usage, "cpuUs"));
    v->memory_peak = (uint64_t)json_integer_value(json_object_get(usage, "maxRssKb")) * 1024;
}

static bool exec_oom_killed(struct cell *c)
{
    struct cgroup_usage u;
    return c->cgroup && cgroup_cell_usage(c->cgroup, &u) == 0 && u.oom_kills > 0;
}

/* The process is gone (or going) without a final frame: say why. */
static void exec_judge_exit(struct exec_state *s)
{
    struct verdict *v = &s->o->verdict;
    struct cell_exit ex;
    bool oom = exec_oom_killed(s->c);
    int r = cell_wait_exit(s->c, clock_mono_us() + 3 * 1000000, &ex);
    exec_drain_outputs(s);
    if (r < 0) {
        exec_accounting(s, NULL);
        exec_internal(s->o, "the sandboxed process did not exit", r);
        return;
    }
    exec_accounting(s, &ex);
    if (WIFSIGNALED(ex.status)) {
        int sig = WTERMSIG(ex.status);
        if (oom) {
            v->status = VERDICT_MEMORY_LIMIT;
        } else if (sig == SIGXCPU ||
                   (sig == SIGKILL && s->req->cpu_limit_us && v->cpu_us >= s->req->cpu_limit_us)) {
            v->status = VERDICT_TIMEOUT;
            v->cpu_limit = true;
        } else {
            v->status = VERDICT_KILLED;
            v->signal = sig;
        }
    } else {
        v->status = oom ? VERDICT_MEMORY_LIMIT : VERDICT_EXITED;
        v->exit_code = WIFEXITED(ex.status) ? WEXITSTATUS(ex.status) : -1;
    }
}

/* How the loop of exec_run() ended. */
enum exec_end {
    EXEC_END_FINAL,   /* the final frame came */
    EXEC_END_TIMEOUT, /* the deadline passed (after the interrupt's grace, when there is one) */
    EXEC_END_ABORTED, /* a hook or the protocol gave up, or poll failed */
    EXEC_END_OTHER,   /* the protocol closed, the process exited, or the output went over */
};

/* Read output and frames, and run the deadline, until the execution ends one way or another. */
static enum exec_end exec_loop(struct exec_state *s, int64_t deadline)
{
    struct cell *c = s->c;
    const struct exec_request *req = s->req;
    struct exec_outcome *o = s->o;
    bool final = false;
    while (!final && !s->proto_closed && !s->exited && !s->output_over) {
        /* Held time (a call waiting for a person) moves the deadline; once interrupted, the
         * grace period is the grace period. */
        const struct exec_hooks *hk = req->hooks;
        int64_t now = clock_mono_us(), wake = 0;
        int64_t held = hk && hk->held && !o->interrupted ? hk->held(hk->userdata, now, &wake) : 0;
        s->deadline = deadline + held;
        int64_t left = s->deadline - now;
        if (left <= 0 && req->interrupt_grace_us > 0 && !o->interrupted) {
            /* Ask the program to stop (KeyboardInterrupt-like); a session then survives. */
            o->interrupted = true;
            if (syscall(SYS_pidfd_send_signal, c->pidfd, SIGINT, NULL, 0) < 0)
                log_errno(LOG_WARN, errno, "exec: cannot interrupt pid %d", (int)c->pid);
            deadline = clock_mono_us() + req->interrupt_grace_us;
            s->deadline = deadline;
            continue;
        }
        if (left <= 0)
            return EXEC_END_TIMEOUT;
        const struct exec_hooks *h = req->hooks;
        unsigned pending = h && h->pending ? h->pending(h->userdata) : 0;
        if (!(pending & EXEC_PENDING_FULL) && frame_reader_ready(&c->reader)) {
            /* Frames left buffered (the outbox was full, or they came with an earlier final
             * frame): handled before waiting for more. */
            int r = exec_handle_frames(s);
            if (r < 0)
                return EXEC_END_ABORTED;
            final = r == 1;
            continue;
        }
        struct pollfd pfd[PFD_N] = {
            [PFD_PROTO] = {.fd = c->proto_fd,
                           .events = (short)((pending & EXEC_PENDING_FULL ? 0 : POLLIN) |
                                             (pending & EXEC_PENDING_WRITE ? POLLOUT : 0))},
            [PFD_OUT] = {.fd = c->out_fd, .events = POLLIN},
            [PFD_ERR] = {.fd = c->err_fd, .events = POLLIN},
            [PFD_PID] = {.fd = c->pidfd, .events = POLLIN},
            [PFD_WAKE] = {.fd = h && h->flush ? h->wake_fd : -1, .events = POLLIN},
        };
        /* While held, no deadline runs: look again when the holder wants to (its own timeouts),
         * or when something comes. */
        int64_t wait = wake > now ? wake - now : left;
        int n = poll(pfd, PFD_N, (int)((wait + 999) / 1000));
        if (n < 0 && errno != EINTR) {
            exec_internal(o, "poll failed", errno);
            return EXEC_END_ABORTED;
        }
        if (n <= 0)
            continue;
        if (pfd[PFD_WAKE].revents) {
            uint64_t count;
            ssize_t rd = read(pfd[PFD_WAKE].fd, &count, sizeof(count));
            (void)rd; /* a wake-up only asks us to look at pending() again */
        }
        if (pfd[PFD_PROTO].revents & POLLOUT)
            h->flush(h->userdata, c);
        if (pfd[PFD_OUT].revents && !exec_read_output(s, c->out_fd, 1))
            fd_closep(&c->out_fd);
        if (pfd[PFD_ERR].revents && !exec_read_output(s, c->err_fd, 2))
            fd_closep(&c->err_fd);
        if (pfd[PFD_PROTO].revents & ~POLLOUT) {
            int r = exec_read_proto(s);
            if (r < 0)
                return EXEC_END_ABORTED;
            final = r == 1;
        }
        if (pfd[PFD_PID].revents)
            s->exited = true;
    }
    return final ? EXEC_END_FINAL : EXEC_END_OTHER;
}

/* The verdict of an execution that ended as end. */
static void exec_verdict(struct exec_state *s, enum exec_end end)
{
    struct cell *c = s->c;
    const struct exec_request *req = s->req;
    struct exec_outcome *o = s->o;
    struct verdict *v = &o->verdict;
    if (end == EXEC_END_FINAL) {
        exec_drain_outputs(s);
        struct cell_exit ex;
        bool reaped = false;
        if (!req->keep_alive && !c->cgroup && !c->warm) {
            /* No cgroup to ask: kill and reap now, so cpu and memory come from the kernel's
             * rusage rather than from what the sandbox says about itself. */
            cell_kill(c);
            reaped = cell_wait_exit(c, clock_mono_us() + 1000000, &ex) == 0;
        }
        if (!req->no_accounting)
            exec_accounting(s, reaped ? &ex : NULL);
        const char *code = json_string_value(json_object_get(o->final, "code"));
        const char *fstatus = json_string_value(json_object_get(o->final, "status"));
        /* The cgroup's OOM killer took a process of this execution (on v1 a child, while the
         * program still answered): the sandbox hit its memory limit all the same. */
        v->status = (code && strcmp(code, "MEMORY_LIMIT") == 0) || s->oom_killed
                        ? VERDICT_MEMORY_LIMIT
                        : VERDICT_OK;
        if (o->interrupted || (fstatus && strcmp(fstatus, "timeout") == 0))
            v->status = VERDICT_TIMEOUT;
        if (s->output_over)
            v->status = VERDICT_OUTPUT_LIMIT;
        if (req->keep_alive && !s->output_over)
            o->cell_alive = true;
        else
            cell_kill(c);
    } else if (end == EXEC_END_ABORTED) {
        cell_kill(c);
        exec_accounting(s, NULL);
    } else if (end == EXEC_END_TIMEOUT || s->output_over) {
        cell_kill(c);
        exec_drain_outputs(s);
        exec_accounting(s, NULL);
        v->status = end == EXEC_END_TIMEOUT ? VERDICT_TIMEOUT : VERDICT_OUTPUT_LIMIT;
    } else {
        exec_judge_exit(s);
    }
}

int exec_run(struct cell *c, const struct exec_request *req, struct exec_outcome *ret)
{
    struct exec_outcome *o = ret;
    *o = (struct exec_outcome){0};
    buf_init(&o->out, req->output_limit);
    buf_init(&o->err, req->output_limit);
    struct exec_state s = {.c = c, .req = req, .o = o};
    int64_t start = clock_mono_us();
    int64_t deadline = start + req->timeout_us;
    s.deadline = deadline;

    (void)fd_set_nonblock(c->proto_fd, true);
    (void)fd_set_nonblock(c->out_fd, true);
    (void)fd_set_nonblock(c->err_fd, true);
    if (!req->no_accounting)
        (void)cgroup_cell_reset_peak(c->cgroup);
    if (req->job) {
        int r = frame_write(c->proto_fd, req->job, deadline);
        if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
            exec_internal(o, "cannot send the job", r);
            cell_kill(c);
            o->verdict.wall_us = clock_mono_us() - start;
            return r;
        }
        if (r < 0)
            s.proto_closed = true; /* died before reading: judged below */
    }

    exec_verdict(&s, exec_loop(&s, deadline));
    o->verdict.wall_us = clock_mono_us() - start;
    return o->verdict.status == VERDICT_INTERNAL ? -EIO : 0;
}
