// SPDX-License-Identifier: MIT
/*
 * store_pg_conn — the PostgreSQL backend's connections (see store_pg_int.h):
 * a bounded pool (--state-store-connections) of libpq connections, each used
 * by one thread at a time; every connect, statement and wait for a free
 * connection has a deadline (--state-store-timeout-ms), enforced here with
 * libpq's non-blocking calls and poll(), and on the server by
 * statement_timeout and lock_timeout, so a database that is slow, stopped or
 * gone makes a call fail with STORE_UNAVAILABLE in bounded time and never
 * holds anything that does not need it. A connection that fails is closed and
 * made again by the next call that needs it (at most one attempt per
 * PG_RETRY_MS while the database is down, so that a dead database is not
 * hammered and calls fail at once); the pool thus recovers by itself.
 *
 * At start a thread reaches the database and sets the schema up; until that
 * has happened once the store is not ready (/readyz 503, a log line naming
 * the store), and a schema newer than this sandboxd knows keeps it so for
 * good. The password (a file's first line, or libpq's own PGPASSWORD and
 * passfile) never appears in a log line, a message or /healthz: where the
 * store is named, it is postgresql://user@host:port/dbname.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store_pg_int.h"
#include "util/clock.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/trust.h"

#define PG_RETRY_MS     500  /* while down: the least time between two connection attempts */
#define PG_START_MS     1000 /* at start: between two attempts to reach the database */
#define PG_TXN_TRIES    5    /* a transaction the database asked to retry */
#define PG_MAX_PASSWORD 1024

/* ---- the store's state --------------------------------------------------------------------- */

static const char *pg_state_name(int state)
{
    switch (state) {
    case PG_READY:
        return "ready";
    case PG_DOWN:
        return "unavailable";
    case PG_INCOMPATIBLE:
        return "incompatible";
    default:
        return "starting";
    }
}

/* libpq's message on one line, at most out's size (lock not needed: out is the caller's). */
static void pg_message(const char *msg, char *out, size_t size)
{
    snprintf(out, size, "%s", msg && *msg ? msg : "no answer");
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    size_t n = strlen(out);
    while (n && out[n - 1] == ' ')
        out[--n] = '\0';
}

/* The database could not be reached or did not answer: note why, log the change of state once,
 * and say so in *err (kind UNAVAILABLE). */
static int pg_unavailable(struct store_pg *s, const char *why, struct sbx_error *err)
{
    char line[256];
    pg_message(why, line, sizeof(line));
    pthread_mutex_lock(&s->lock);
    int was = atomic_load(&s->state);
    snprintf(s->reason, sizeof(s->reason), "%s", line);
    if (was == PG_READY)
        atomic_store(&s->state, PG_DOWN);
    pthread_mutex_unlock(&s->lock);
    if (was == PG_READY)
        log_warn("store: PostgreSQL %s is unavailable: %s; calls that need it fail with "
                 "STORE_UNAVAILABLE until it answers again",
                 s->location, line);
    sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                  "the state store (PostgreSQL %s) is unavailable: %s; retry later", s->location,
                  line);
    return -ENOTCONN;
}

static void pg_answered(struct store_pg *s)
{
    if (atomic_load(&s->state) != PG_DOWN)
        return;
    pthread_mutex_lock(&s->lock);
    bool back = atomic_load(&s->state) == PG_DOWN;
    if (back)
        atomic_store(&s->state, PG_READY);
    s->retry_at_us = 0;
    pthread_mutex_unlock(&s->lock);
    if (back)
        log_info("store: PostgreSQL %s answers again", s->location);
}

static void pg_close(struct pg_conn *pc)
{
    if (pc->c)
        PQfinish(pc->c);
    pc->c = NULL;
}

/* ---- waiting with a deadline --------------------------------------------------------------- */

/* Wait until c's socket is ready for events or the deadline passes: 0, -ETIMEDOUT, -errno. */
static int pg_wait(PGconn *c, short events, int64_t deadline_us)
{
    for (;;) {
        int64_t left = deadline_us - clock_mono_us();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = PQsocket(c), .events = events};
        if (p.fd < 0)
            return -EBADF;
        int n = poll(&p, 1, (int)((left + 999) / 1000));
        if (n > 0)
            return 0;
        if (n == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

/* ---- connecting ---------------------------------------------------------------------------- */

/* Connect pc (closed) before deadline_us, with the session's settings: 0 or -ENOTCONN. */
static int pg_connect(struct store_pg *s, struct pg_conn *pc, int64_t deadline_us,
                      struct sbx_error *err)
{
    PGconn *c =
        PQconnectStartParams((const char *const *)s->keywords, (const char *const *)s->values, 1);
    if (!c) {
        sbx_error_set(err, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return -ENOMEM;
    }
    /* PQconnectPoll ignores connect_timeout: the deadline is kept here. */
    PostgresPollingStatusType st =
        PQstatus(c) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
    int r = 0;
    while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        r = pg_wait(c, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline_us);
        if (r < 0)
            break;
        st = PQconnectPoll(c);
    }
    if (st != PGRES_POLLING_OK) {
        char why[256];
        if (r == -ETIMEDOUT)
            snprintf(why, sizeof(why), "no connection within %u ms", s->timeout_ms);
        else
            pg_message(PQerrorMessage(c), why, sizeof(why));
        PQfinish(c);
        return pg_unavailable(s, why, err);
    }
    if (PQsetnonblocking(c, 1) < 0) {
        char why[256];
        pg_message(PQerrorMessage(c), why, sizeof(why));
        PQfinish(c);
        return pg_unavailable(s, why, err);
    }
    pc->c = c;
    /* A statement, or a lock it waits for, past the deadline is cancelled by the server too; a
     * transaction left open by a client that vanished is ended. Values as parameters. */
    char t[24], idle[24];
    snprintf(t, sizeof(t), "%u", s->timeout_ms);
    snprintf(idle, sizeof(idle), "%u", 4 * s->timeout_ms);
    struct pg_params p = {0};
    pg_param_text(&p, t);
    pg_param_text(&p, idle);
    r = pg_exec(s, pc,
                "SELECT set_config('statement_timeout', $1, false), "
                "set_config('lock_timeout', $1, false), "
                "set_config('idle_in_transaction_session_timeout', $2, false)",
                &p, NULL, err);
    if (r < 0)
        pg_close(pc);
    return r;
}

/* ---- statements ---------------------------------------------------------------------------- */

/* pc's connection failed (lost, or past its deadline): close it. */
static int pg_lost(struct store_pg *s, struct pg_conn *pc, const char *why, struct sbx_error *err)
{
    char msg[256];
    pg_message(why, msg, sizeof(msg));
    pg_close(pc);
    return pg_unavailable(s, msg, err);
}

static bool pg_state_is(const char *state, const char *want)
{
    return state && strcmp(state, want) == 0;
}

/* A statement's error result: what a caller makes of it. *ret_close: the connection is of no
 * more use (the caller closes it once it has read everything it was sent). */
static int pg_failed(struct store_pg *s, struct pg_conn *pc, const PGresult *res, bool *ret_close,
                     struct sbx_error *err)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    char msg[256];
    pg_message(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), msg, sizeof(msg));
    if (pg_state_is(state, "40001") || pg_state_is(state, "40P01")) {
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                      "the state store was too busy to finish the call (%s); retry later", msg);
        return -EAGAIN;
    }
    if (PQstatus(pc->c) == CONNECTION_BAD || (state && strncmp(state, "08", 2) == 0) ||
        pg_state_is(state, "57P01") || pg_state_is(state, "57P02") || pg_state_is(state, "57P03") ||
        pg_state_is(state, "25P03")) {
        *ret_close = true;
        return pg_unavailable(s, msg, err);
    }
    if (pg_state_is(state, "57014") || pg_state_is(state, "55P03") ||
        (state && strncmp(state, "53", 2) == 0)) {
        /* cancelled by statement_timeout or lock_timeout, or out of resources: the database
         * is there but cannot answer in time */
        char why[320];
        snprintf(why, sizeof(why), "%s (within %u ms)", msg, s->timeout_ms);
        return pg_unavailable(s, why, err);
    }
    log_error("store: PostgreSQL %s refused a statement: SQLSTATE %s: %s", s->location,
              state ? state : "?", msg);
    sbx_error_set(err, SBX_ERR_INTERNAL, "STORE_ERROR", NULL,
                  "the state store refused the call (SQLSTATE %s); see sandboxd's log",
                  state ? state : "?");
    return -EPROTO;
}

/* pc's connection did not answer by its deadline, or failed: close it. */
static int pg_broken(struct store_pg *s, struct pg_conn *pc, int r, struct sbx_error *err)
{
    char why[96];
    if (r == -ETIMEDOUT)
        snprintf(why, sizeof(why), "no answer within %u ms", s->timeout_ms);
    return pg_lost(s, pc,
                   r == -ETIMEDOUT ? why
                   : r < 0         ? strerror(-r)
                                   : PQerrorMessage(pc->c),
                   err);
}

/* The next result of what pc was sent (NULL: the end of one statement's), by the deadline. */
static int pg_next(struct store_pg *s, struct pg_conn *pc, PGresult **ret, struct sbx_error *err)
{
    PGconn *c = pc->c;
    int r = 0;
    while (r == 0 && PQisBusy(c)) {
        r = pg_wait(c, POLLIN, pc->deadline_us);
        if (r == 0 && !PQconsumeInput(c))
            r = 1; /* libpq's own message */
    }
    if (r != 0)
        return pg_broken(s, pc, r, err);
    *ret = PQgetResult(c);
    return 0;
}

int pg_flight(struct store_pg *s, struct pg_conn *pc, const struct pg_stmt *st, size_t n,
              struct sbx_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (st[i].ret)
            *st[i].ret = NULL;
    PGconn *c = pc->c;
    /* In pipeline mode the statements go in one write and their answers come in one read: one
     * round trip for all of them. After an error the server skips the rest until the sync. */
    if (!PQenterPipelineMode(c))
        return pg_broken(s, pc, 1, err);
    for (size_t i = 0; i < n; i++) {
        const struct pg_params *p = st[i].p;
        if (!PQsendQueryParams(c, st[i].sql, p ? p->n : 0, p ? p->types : NULL,
                               p ? p->values : NULL, p ? p->lengths : NULL, p ? p->formats : NULL,
                               1))
            return pg_broken(s, pc, 1, err);
    }
    if (!PQpipelineSync(c))
        return pg_broken(s, pc, 1, err);
    int f, r = 0;
    while ((f = PQflush(c)) != 0) {
        if (f < 0 || (r = pg_wait(c, POLLIN | POLLOUT, pc->deadline_us)) < 0 || !PQconsumeInput(c))
            return pg_broken(s, pc, r, err);
    }
    int failed = 0;
    bool close = false;
    PGresult *res = NULL;
    for (size_t i = 0; r == 0 && i < n; i++) {
        while ((r = pg_next(s, pc, &res, err)) == 0 && res) {
            ExecStatusType x = PQresultStatus(res);
            if (x == PGRES_FATAL_ERROR && !failed)
                failed = pg_failed(s, pc, res, &close, err);
            if ((x == PGRES_TUPLES_OK || x == PGRES_COMMAND_OK) && st[i].ret && !*st[i].ret)
                *st[i].ret = TAKE_PTR(res);
            PQclear(res);
        }
    }
    /* the sync point: then nothing more is owed, and the connection leaves pipeline mode */
    if (r == 0 && (r = pg_next(s, pc, &res, err)) == 0) {
        bool synced = res && PQresultStatus(res) == PGRES_PIPELINE_SYNC;
        PQclear(res);
        if (!synced || !PQexitPipelineMode(c))
            r = pg_broken(s, pc, 1, err);
    }
    if (r == 0 && failed && close)
        pg_close(pc);
    if (r == 0)
        r = failed;
    if (r < 0)
        for (size_t i = 0; i < n; i++)
            if (st[i].ret) {
                PQclear(*st[i].ret);
                *st[i].ret = NULL;
            }
    if (r == 0)
        pc->flights++;
    return r;
}

int pg_exec(struct store_pg *s, struct pg_conn *pc, const char *sql, const struct pg_params *p,
            PGresult **ret, struct sbx_error *err)
{
    struct pg_stmt st = {sql, p, ret};
    return pg_flight(s, pc, &st, 1, err);
}

/* ---- the pool ------------------------------------------------------------------------------ */

static void pg_release(struct store_pg *s, struct pg_conn *pc)
{
    pthread_mutex_lock(&s->lock);
    pc->busy = false;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void pg_deadline_ts(int64_t deadline_us, struct timespec *ts)
{
    ts->tv_sec = deadline_us / 1000000;
    ts->tv_nsec = (deadline_us % 1000000) * 1000;
}

/* A connection of the pool, connected, for one operation that must end by deadline (the
 * monotonic clock's microseconds). */
static int pg_acquire(struct store_pg *s, int64_t deadline, struct pg_conn **ret,
                      struct sbx_error *err)
{
    if (clock_mono_us() >= deadline) { /* a retry with no time left */
        char why[96];
        snprintf(why, sizeof(why), "no answer within %u ms", s->timeout_ms);
        return pg_unavailable(s, why, err);
    }
    struct timespec ts;
    pg_deadline_ts(deadline, &ts);
    pthread_mutex_lock(&s->lock);
    struct pg_conn *pc = NULL;
    for (;;) {
        int state = atomic_load(&s->state);
        if (state == PG_STARTING || state == PG_INCOMPATIBLE) {
            char why[300];
            snprintf(why, sizeof(why), "%s", s->reason[0] ? s->reason : "not reached yet");
            pthread_mutex_unlock(&s->lock);
            sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                          "the state store (PostgreSQL %s) is not ready: %s", s->location, why);
            return -ENOTCONN;
        }
        /* A free connection already made first, else a free slot. */
        for (unsigned i = 0; i < s->n_conns; i++) {
            struct pg_conn *x = &s->conns[i];
            if (!x->busy && (!pc || (!pc->c && x->c)))
                pc = x;
        }
        if (pc || thread_group_stopping(&s->starter))
            break;
        if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT) {
            pthread_mutex_unlock(&s->lock);
            sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                          "all %u connections to the state store stayed busy for %u ms; retry "
                          "later",
                          s->n_conns, s->timeout_ms);
            return -ENOTCONN;
        }
    }
    if (!pc) {
        pthread_mutex_unlock(&s->lock);
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                      "sandboxd is shutting down");
        return -ENOTCONN;
    }
    pc->busy = true;
    pc->deadline_us = deadline;
    pc->reused = pc->c != NULL;
    bool wait_more = !pc->c && clock_mono_us() < s->retry_at_us;
    char why[300];
    snprintf(why, sizeof(why), "%s", s->reason);
    pthread_mutex_unlock(&s->lock);
    if (wait_more) { /* it failed a moment ago: fail at once rather than hammer it */
        pg_release(s, pc);
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                      "the state store (PostgreSQL %s) is unavailable: %s; retry later",
                      s->location, why);
        return -ENOTCONN;
    }
    if (!pc->c) {
        int r = pg_connect(s, pc, deadline, err);
        if (r < 0) {
            pthread_mutex_lock(&s->lock);
            s->retry_at_us = clock_mono_us() + PG_RETRY_MS * 1000;
            pthread_mutex_unlock(&s->lock);
            pg_release(s, pc);
            return r;
        }
        pg_answered(s);
    }
    *ret = pc;
    return 0;
}

/* The deadline of an operation starting now: every attempt of it shares it. */
static int64_t pg_deadline(const struct store_pg *s)
{
    return clock_mono_us() + (int64_t)s->timeout_ms * 1000;
}

void pg_rollback(struct store_pg *s, struct pg_conn *pc)
{
    if (!pc->c)
        return;
    struct sbx_error ignored = {0};
    /* outside a transaction only a warning; a failure here closes it (pg_flight) */
    (void)pg_exec(s, pc, "ROLLBACK", NULL, NULL, &ignored);
    sbx_error_clear(&ignored);
}

int pg_txn(struct store_pg *s, pg_txn_fn fn, void *userdata, struct sbx_error *err)
{
    bool reconnected = false;
    int64_t deadline = pg_deadline(s);
    for (int attempt = 0;; attempt++) {
        struct pg_conn *pc = NULL;
        int r = pg_acquire(s, deadline, &pc, err);
        if (r < 0)
            return r;
        bool reused = pc->reused;
        pc->flights = 0;
        r = fn(s, pc, userdata, err);
        bool first_lost = r == -ENOTCONN && !pc->c && pc->flights == 0;
        if (r < 0)
            pg_rollback(s, pc);
        pg_release(s, pc);
        if (first_lost && reused && !reconnected) {
            /* the idle connection was dead (the database restarted) and the first flight,
             * which never holds the COMMIT, failed: nothing was done; once on a new one */
            sbx_error_clear(err);
            reconnected = true;
            continue;
        }
        if (r == -EAGAIN && attempt + 1 < PG_TXN_TRIES) {
            sbx_error_clear(err);
            struct timespec nap = {.tv_nsec = (long)(1 + randombytes_uniform(5)) * 1000000};
            nanosleep(&nap, NULL); /* apart from the one it collided with */
            continue;
        }
        if (r == 0)
            pg_answered(s);
        return r == -EAGAIN ? -ENOTCONN : r;
    }
}

struct pg_one {
    const char *sql;
    const struct pg_params *p;
    PGresult **ret;
};

static int pg_one_statement(struct store_pg *s, struct pg_conn *c, void *userdata,
                            struct sbx_error *err)
{
    struct pg_one *x = userdata;
    return pg_exec(s, c, x->sql, x->p, x->ret, err);
}

int pg_query(struct store_pg *s, const char *sql, const struct pg_params *p, PGresult **ret,
             struct sbx_error *err)
{
    /* A transaction of its own (autocommit): retried the same way. */
    struct pg_one x = {sql, p, ret};
    return pg_txn(s, pg_one_statement, &x, err);
}

/* ---- at start ------------------------------------------------------------------------------ */

static void *pg_starter(void *arg)
{
    struct store_pg *s = arg;
    char logged[256] = "";
    for (;;) {
        pthread_mutex_lock(&s->lock);
        struct pg_conn *pc = &s->conns[0];
        bool stop = thread_group_stopping(&s->starter);
        pc->busy = !stop;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        pc->deadline_us = clock_mono_us() + (int64_t)s->timeout_ms * 1000;
        struct sbx_error err = {0};
        int r = pg_connect(s, pc, pc->deadline_us, &err);
        if (r == 0) {
            /* the schema may take longer than one statement's time: its own deadline */
            pc->deadline_us = clock_mono_us() + 60 * 1000000LL;
            r = pg_schema_setup(s, pc, &err);
        }
        if (r == 0) {
            pthread_mutex_lock(&s->lock);
            atomic_store(&s->state, PG_READY);
            s->reason[0] = '\0';
            pc->busy = false;
            pthread_cond_broadcast(&s->cond);
            pthread_mutex_unlock(&s->lock);
            log_info("store: PostgreSQL %s ready (schema version %d)", s->location,
                     PG_SCHEMA_VERSION);
            sbx_error_clear(&err);
            break;
        }
        pg_close(pc);
        pthread_mutex_lock(&s->lock);
        if (r != -ENOTCONN) /* pg_unavailable() said why, in short */
            snprintf(s->reason, sizeof(s->reason), "%s", err.message ? err.message : "failed");
        if (r == -EPROTONOSUPPORT)
            atomic_store(&s->state, PG_INCOMPATIBLE);
        pc->busy = false;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        if (r == -EPROTONOSUPPORT) {
            log_error("store: PostgreSQL %s: %s", s->location, err.message);
            sbx_error_clear(&err);
            break;
        }
        /* Said once, and again when the reason changes. */
        if (strcmp(logged, s->reason) != 0) {
            snprintf(logged, sizeof(logged), "%s", s->reason);
            log_error("store: PostgreSQL %s: %s; sandboxd is not ready until it answers "
                      "(retrying every %d ms)",
                      s->location, logged, PG_START_MS);
        }
        sbx_error_clear(&err);
        pthread_mutex_lock(&s->lock);
        (void)thread_group_wait(&s->starter, clock_mono_us() + PG_START_MS * 1000);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

int store_pg_conn_start(struct store_pg *s, int wait_ms)
{
    int r = thread_group_start(&s->starter, pg_starter, s);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "store: cannot start the PostgreSQL thread");
    return wait_ms > 0 ? store_pg_wait(s, wait_ms) : 0;
}

int store_pg_wait(struct store_pg *s, int wait_ms)
{
    struct timespec ts;
    pg_deadline_ts(clock_mono_us() + (int64_t)wait_ms * 1000, &ts);
    pthread_mutex_lock(&s->lock);
    while (atomic_load(&s->state) == PG_STARTING &&
           pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
        ;
    int state = atomic_load(&s->state);
    pthread_mutex_unlock(&s->lock);
    return state == PG_READY ? 0 : state == PG_INCOMPATIBLE ? -EPROTONOSUPPORT : -ENOTCONN;
}

/* ---- set-up -------------------------------------------------------------------------------- */

/* The first line of file (at most PG_MAX_PASSWORD bytes), which must be ours or root's and
 * writable by no one else (trust_check). Caller frees (and wipes). */
static int pg_read_password(const char *file, char **ret)
{
    _cleanup_sbx_error_ struct sbx_error why = {0};
    int r = trust_check(file, TRUST_FILE, &why);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "store: refusing --state-store-password-file: %s",
                         why.message ? why.message : file);
    char *text = NULL;
    size_t len = 0;
    r = fd_read_file(AT_FDCWD, file, PG_MAX_PASSWORD, &text, &len);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "store: cannot read --state-store-password-file %s", file);
    text[strcspn(text, "\r\n")] = '\0';
    *ret = text;
    return 0;
}

/* A keyword and its value into the arrays (owned copies). */
static int pg_kw(struct store_pg *s, size_t *n, const char *k, const char *v)
{
    if (!(s->keywords[*n] = strdup(k)) || !(s->values[*n] = strdup(v)))
        return -ENOMEM;
    (*n)++;
    return 0;
}

int store_pg_conn_init(struct store_pg *s, const struct store_options *opts)
{
    s->timeout_ms = opts->timeout_ms ? opts->timeout_ms : STORE_TIMEOUT_MS;
    s->n_conns = opts->connections ? opts->connections : STORE_CONNECTIONS;
    if (s->n_conns > STORE_MAX_CONNECTS)
        s->n_conns = STORE_MAX_CONNECTS;
    pthread_mutex_init(&s->lock, NULL);
    clock_cond_init(&s->cond);
    atomic_store(&s->state, PG_STARTING);
    if (thread_group_init(&s->starter, "state store", 1, &s->lock, &s->cond, -1) < 0)
        return -ENOMEM;
    /* libpq's own parser says whether it is a connection string; its message is not repeated
     * (it may quote a part of the string, the password too). */
    char *perr = NULL;
    PQconninfoOption *info = PQconninfoParse(opts->url, &perr);
    PQfreemem(perr);
    if (!info) {
        log_error("store: --state-store is not a libpq connection string "
                  "(postgresql://user@host:port/dbname?param=value, or key=value pairs)");
        return -EINVAL;
    }
    const char *user = NULL, *host = NULL, *port = NULL, *db = NULL;
    bool has_password = false;
    for (PQconninfoOption *o = info; o->keyword; o++) {
        if (!o->val)
            continue;
        if (strcmp(o->keyword, "user") == 0)
            user = o->val;
        else if (strcmp(o->keyword, "host") == 0 || (!host && strcmp(o->keyword, "hostaddr") == 0))
            host = o->val;
        else if (strcmp(o->keyword, "port") == 0)
            port = o->val;
        else if (strcmp(o->keyword, "dbname") == 0)
            db = o->val;
        else if (strcmp(o->keyword, "password") == 0)
            has_password = true;
    }
    snprintf(s->location, sizeof(s->location), "postgresql://%.64s%s%.128s%s%.16s/%.64s",
             user ? user : "", user ? "@" : "", host ? host : "", port ? ":" : "", port ? port : "",
             db ? db : "");
    PQconninfoFree(info);
    if (has_password)
        log_warn("store: the --state-store string holds a password, which other users of this "
                 "host may read in the process list; use --state-store-password-file, "
                 "PGPASSWORD or a passfile instead");
    _cleanup_free_ char *password = NULL;
    if (opts->password_file && pg_read_password(opts->password_file, &password) < 0)
        return -EINVAL;
    /* Keywords are applied in order: ours before dbname are defaults the string may change,
     * those after it always hold. */
    s->keywords = calloc(16, sizeof(char *));
    s->values = calloc(16, sizeof(char *));
    s->conns = calloc(s->n_conns, sizeof(*s->conns));
    size_t n = 0;
    int r = s->keywords && s->values && s->conns ? 0 : -ENOMEM;
    static const char *const defaults[][2] = {
        {"fallback_application_name", "sandboxd"},
        {"keepalives", "1"},
        {"keepalives_idle", "30"},
        {"keepalives_interval", "10"},
        {"keepalives_count", "3"},
    };
    for (size_t i = 0; r == 0 && i < ARRAY_SIZE(defaults); i++)
        r = pg_kw(s, &n, defaults[i][0], defaults[i][1]);
    if (r == 0)
        r = pg_kw(s, &n, "dbname", opts->url);
    if (r == 0)
        r = pg_kw(s, &n, "client_encoding", "UTF8");
    if (r == 0 && password)
        r = pg_kw(s, &n, "password", password);
    if (password)
        sodium_memzero(password, strlen(password));
    return r;
}

void store_pg_conn_done(struct store_pg *s)
{
    /* A zeroed group (the set-up failed before it) stops nothing. */
    thread_group_stop(&s->starter);
    thread_group_done(&s->starter);
    for (unsigned i = 0; s->conns && i < s->n_conns; i++)
        pg_close(&s->conns[i]);
    free(s->conns);
    for (size_t i = 0; s->keywords && i < 16; i++) {
        if (s->values[i])
            sodium_memzero(s->values[i], strlen(s->values[i]));
        free(s->keywords[i]);
        free(s->values[i]);
    }
    free(s->keywords);
    free(s->values);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
}

bool store_pg_ready(struct store *base, const char **ret_why)
{
    struct store_pg *s = (struct store_pg *)base;
    int state = atomic_load(&s->state);
    /* Answered once: ready, even while it is down later (what does not need it goes on). */
    *ret_why = state == PG_STARTING       ? "the state store (PostgreSQL) has not answered yet"
               : state == PG_INCOMPATIBLE ? "the state store's schema is newer than this sandboxd"
                                          : NULL;
    return !*ret_why;
}

json_t *store_pg_describe(struct store *base)
{
    struct store_pg *s = (struct store_pg *)base;
    pthread_mutex_lock(&s->lock);
    unsigned open = 0, busy = 0;
    for (unsigned i = 0; i < s->n_conns; i++) {
        open += s->conns[i].c != NULL;
        busy += s->conns[i].busy;
    }
    int state = atomic_load(&s->state);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s*, s:{s:I, s:I, s:I}, s:I}", "backend", "postgresql",
                          "location", s->location, "state", pg_state_name(state), "reason",
                          state == PG_READY ? NULL
                          : s->reason[0]    ? s->reason
                                            : NULL,
                          "connections", "max", (json_int_t)s->n_conns, "open", (json_int_t)open,
                          "busy", (json_int_t)busy, "timeoutMs", (json_int_t)s->timeout_ms);
    pthread_mutex_unlock(&s->lock);
    return o;
}
