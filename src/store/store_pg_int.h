// SPDX-License-Identifier: MIT
/*
 * store_pg_int — shared by the PostgreSQL backend: store_pg_conn.c (the
 * connection pool, statements with deadlines, transactions, the failures a
 * caller can retry), store_pg_schema.c (the tables and their versions),
 * store_pg.c (workspaces and items) and store_pg_run.c (runtime values).
 *
 * Every statement is a constant string; every value travels as a parameter
 * (binary format, its type named), so nothing a client sends becomes SQL.
 * Results come back in binary format too: bigint columns as 8 big-endian
 * bytes, text and bytea as their bytes.
 */
#ifndef SANDBOXD_STORE_STORE_PG_INT_H
#define SANDBOXD_STORE_STORE_PG_INT_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "store/store_int.h"
#include "util/thread.h"

#define PG_MAX_PARAMS     16
#define PG_SCHEMA_VERSION 2 /* the newest schema this sandboxd knows */

/* Where the store stands, for /readyz and /healthz. */
enum pg_state {
    PG_STARTING,     /* not answered yet: not ready */
    PG_READY,        /* answered, the schema is ours */
    PG_DOWN,         /* answered once; the last attempt to reach it failed */
    PG_INCOMPATIBLE, /* its schema is newer than this sandboxd knows: never ready */
};

struct pg_conn {
    PGconn *c;
    bool busy;
    bool reused;         /* connected before the current operation took it */
    unsigned flights;    /* flights of the current operation that were answered */
    int64_t deadline_us; /* of the current operation (monotonic clock) */
};

struct store_pg {
    struct store base;
    char **keywords, **values; /* PQconnectStartParams' arrays (owned; the password too) */
    char location[512];        /* postgresql://user@host:port/dbname: never a password */
    char *state_dir;           /* absolute; its copies/ holds this host's copies of kept files
                                  (store_host_path); NULL: none */
    unsigned timeout_ms;
    pthread_mutex_t lock; /* conns, reason, retry_at_us, starter's stop */
    pthread_cond_t cond;  /* a connection freed, the state changed; a stop */
    struct pg_conn *conns;
    unsigned n_conns;
    _Atomic int state;   /* enum pg_state */
    char reason[256];    /* why it is not ready or down (no secret in it) */
    int64_t retry_at_us; /* while down: no new connection before this */
    /* Reaches the database and sets the schema up, then ends; its stop flag (under lock) also
     * ends waits for a connection at shutdown. */
    struct thread_group starter;
};

/* ---- parameters and results ---- */

struct pg_params {
    int n;
    Oid types[PG_MAX_PARAMS];
    const char *values[PG_MAX_PARAMS];
    int lengths[PG_MAX_PARAMS];
    int formats[PG_MAX_PARAMS];
    uint64_t ints[PG_MAX_PARAMS]; /* the bytes of int8 parameters */
};

void pg_param_text(struct pg_params *p, const char *s);
void pg_param_textn(struct pg_params *p, const char *s, size_t len);
void pg_param_bytes(struct pg_params *p, const void *data, size_t len);
void pg_param_int8(struct pg_params *p, int64_t v);
/* SQL NULL of type oid. */
void pg_param_null(struct pg_params *p, Oid type);
/* Column col of row as a bigint (0 when NULL). */
int64_t pg_int8(const PGresult *res, int row, int col);
bool pg_isnull(const PGresult *res, int row, int col);
/* Column col of row as a new NUL-terminated string (caller frees), *ret_len its length. */
char *pg_bytes(const PGresult *res, int row, int col, size_t *ret_len);

/* ---- statements ---- */

/* One statement of a flight: its result into *ret when ret is not NULL (a new reference). */
struct pg_stmt {
    const char *sql;
    const struct pg_params *p;
    PGresult **ret;
};
/* Statements sent together and answered together (libpq's pipeline mode: one round trip),
 * stopping at the first that fails; errors as pg_exec(). */
int pg_flight(struct store_pg *s, struct pg_conn *c, const struct pg_stmt *st, size_t n,
              struct sbx_error *err);

/* One statement on c (taken by pg_txn or pg_query): 0 and *ret (may be NULL when unwanted), or
 * -ENOTCONN (kind UNAVAILABLE: connection lost, deadline passed, the server shutting down; c
 * is then closed), -EAGAIN (serialization failure or deadlock: retry the transaction), -EPROTO
 * (the database refused it; logged), with *err. */
int pg_exec(struct store_pg *s, struct pg_conn *c, const char *sql, const struct pg_params *p,
            PGresult **ret, struct sbx_error *err);
/* fn, a transaction — it sends BEGIN with its first flight and COMMIT with its last, so that a
 * write costs two round trips — on a connection of the pool; ROLLBACK when fn fails; retried
 * when the database asks for it (-EAGAIN), and once on a fresh connection when an idle one
 * turned out dead at the first flight (which never holds the COMMIT: nothing was done). */
typedef int (*pg_txn_fn)(struct store_pg *s, struct pg_conn *c, void *userdata,
                         struct sbx_error *err);
int pg_txn(struct store_pg *s, pg_txn_fn fn, void *userdata, struct sbx_error *err);
/* ROLLBACK on c, whatever it answers (a connection that fails it is closed). */
void pg_rollback(struct store_pg *s, struct pg_conn *c);
/* One statement outside a transaction, with the same reconnect. */
int pg_query(struct store_pg *s, const char *sql, const struct pg_params *p, PGresult **ret,
             struct sbx_error *err);

/* ---- the pool (store_pg_conn.c) ---- */

int store_pg_conn_init(struct store_pg *s, const struct store_options *opts);
/* Start reaching the database in the background; wait_ms > 0: wait that long for it. */
int store_pg_conn_start(struct store_pg *s, int wait_ms);
/* Wait up to wait_ms for the first answer: 0 (ready), -EPROTONOSUPPORT (a newer schema) or
 * -ENOTCONN (none yet, or the database went away). */
int store_pg_wait(struct store_pg *s, int wait_ms);
void store_pg_conn_done(struct store_pg *s);
bool store_pg_ready(struct store *base, const char **ret_why);
json_t *store_pg_describe(struct store *base);

/* ---- the schema (store_pg_schema.c) ---- */

/* Make or bring the schema up to PG_SCHEMA_VERSION on c: 0, -EPROTONOSUPPORT (a newer schema:
 * *err says which), or a pg_exec failure. */
int pg_schema_setup(struct store_pg *s, struct pg_conn *c, struct sbx_error *err);

/* ---- runtime values (store_pg_run.c) ---- */

int store_pg_run_set(struct store *base, const char *app, const char *key, const char *text,
                     size_t len, int64_t written_ms, bool only_new, struct sbx_error *err);
int store_pg_run_get(struct store *base, const char *app, const char *key, char **ret_text,
                     size_t *ret_len, struct sbx_error *err);
int store_pg_each_run(struct store *base, store_run_fn fn, void *userdata, struct sbx_error *err);

#endif
