// SPDX-License-Identifier: MIT
/*
 * store_pg_schema — the tables of the PostgreSQL backend and their versions.
 * sandboxd makes them itself, in one transaction under an advisory lock (so
 * that instances starting together do it once), and records the version in
 * sandboxd_schema; each later version is one more step of PG_STEPS, applied
 * in order to an older database. A database whose version is newer than this
 * sandboxd knows is refused, with the versions named: an older sandboxd must
 * not write rows whose rules it does not know.
 *
 * The tables (names of workspaces and tenants are [A-Za-z0-9._-]; everything
 * a client chose is a parameter, never SQL text):
 *   sandboxd_tenants     one row per tenant ("" is the operator): the bytes of
 *                        all its workspaces and their count, locked by every
 *                        write of the tenant (the quota check and the write in
 *                        one transaction)
 *   sandboxd_workspaces  one row per workspace: its bytes and counts by kind
 *   sandboxd_items       memories (kind 0, by key), saved tools (1), files (2),
 *                        kept files of execution folders (3, since version 2):
 *                        their data (bytea: a file is one row, at most the
 *                        largest file sandboxd takes), the info a listing
 *                        shows, the revision, the time of the last write
 *   sandboxd_runtime     the local framework's runtime values, with the total
 *                        of their sizes in sandboxd_runtime_total
 */
#include <errno.h>
#include <string.h>

#include "store/store_pg_int.h"
#include "util/macros.h"

/* Any constant: the key of the advisory lock under which the schema is made or moved. */
#define PG_SCHEMA_LOCK "7361616e64626f78" /* "sandbox" in hex, as a bigint */

/* Version 1. */
static const char *const pg_v1[] = {
    "CREATE TABLE sandboxd_tenants ("
    " tenant text COLLATE \"C\" PRIMARY KEY,"
    " bytes bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),"
    " workspaces integer NOT NULL DEFAULT 0 CHECK (workspaces >= 0))",
    "CREATE TABLE sandboxd_workspaces ("
    " id bigserial PRIMARY KEY,"
    " tenant text COLLATE \"C\" NOT NULL REFERENCES sandboxd_tenants (tenant),"
    " name text COLLATE \"C\" NOT NULL,"
    " bytes bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),"
    " memories integer NOT NULL DEFAULT 0 CHECK (memories >= 0),"
    " tools integer NOT NULL DEFAULT 0 CHECK (tools >= 0),"
    " files integer NOT NULL DEFAULT 0 CHECK (files >= 0),"
    " created_ms bigint NOT NULL,"
    " UNIQUE (tenant, name))",
    "CREATE TABLE sandboxd_items ("
    " ws bigint NOT NULL REFERENCES sandboxd_workspaces (id) ON DELETE CASCADE,"
    " kind smallint NOT NULL CHECK (kind BETWEEN 0 AND 2),"
    " name text COLLATE \"C\" NOT NULL,"
    " data bytea NOT NULL,"
    " info text,"
    " size bigint NOT NULL CHECK (size >= 0),"
    " rev bigint NOT NULL,"
    " modified_ms bigint NOT NULL,"
    " PRIMARY KEY (ws, kind, name))",
    "CREATE TABLE sandboxd_runtime ("
    " app text COLLATE \"C\" NOT NULL,"
    " key text COLLATE \"C\" NOT NULL,"
    " value text NOT NULL,"
    " size bigint NOT NULL,"
    " written_ms bigint NOT NULL,"
    " PRIMARY KEY (app, key))",
    "CREATE INDEX sandboxd_runtime_by_time ON sandboxd_runtime (written_ms, app, key)",
    "CREATE INDEX sandboxd_runtime_by_app ON sandboxd_runtime (app, written_ms, key)",
    "CREATE TABLE sandboxd_runtime_total ("
    " id integer PRIMARY KEY CHECK (id = 1),"
    " bytes bigint NOT NULL CHECK (bytes >= 0))",
    "INSERT INTO sandboxd_runtime_total VALUES (1, 0)",
    "INSERT INTO sandboxd_tenants (tenant) VALUES ('')",
};

/* Version 2: the kept files of sessions' execution folders (kind 3), counted in runs. */
static const char *const pg_v2[] = {
    "ALTER TABLE sandboxd_items DROP CONSTRAINT sandboxd_items_kind_check,"
    " ADD CONSTRAINT sandboxd_items_kind_check CHECK (kind BETWEEN 0 AND 3)",
    "ALTER TABLE sandboxd_workspaces"
    " ADD COLUMN runs integer NOT NULL DEFAULT 0 CHECK (runs >= 0)",
};

struct pg_step {
    const char *const *sql;
    size_t n;
};

/* PG_STEPS[v - 1] brings version v - 1 to v. */
static const struct pg_step PG_STEPS[PG_SCHEMA_VERSION] = {
    {pg_v1, ARRAY_SIZE(pg_v1)},
    {pg_v2, ARRAY_SIZE(pg_v2)},
};

static int pg_schema_txn(struct store_pg *s, struct pg_conn *c, struct sbx_error *err)
{
    PGresult *res = NULL;
    int r = pg_exec(s, c, "SELECT pg_advisory_xact_lock(x'" PG_SCHEMA_LOCK "'::bigint)", NULL, NULL,
                    err);
    if (r == 0)
        r = pg_exec(s, c,
                    "CREATE TABLE IF NOT EXISTS sandboxd_schema ("
                    " id integer PRIMARY KEY CHECK (id = 1),"
                    " version integer NOT NULL,"
                    " updated_at timestamptz NOT NULL DEFAULT now())",
                    NULL, NULL, err);
    if (r == 0)
        r = pg_exec(s, c, "SELECT version::bigint FROM sandboxd_schema WHERE id = 1", NULL, &res,
                    err);
    if (r < 0)
        return r;
    int64_t have = PQntuples(res) ? pg_int8(res, 0, 0) : 0;
    PQclear(res);
    if (have > PG_SCHEMA_VERSION) {
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                      "the database holds sandboxd's schema version %lld, and this sandboxd "
                      "knows versions up to %d: run a sandboxd as new as the one that wrote it",
                      (long long)have, PG_SCHEMA_VERSION);
        return -EPROTONOSUPPORT;
    }
    for (int64_t v = have; r == 0 && v < PG_SCHEMA_VERSION; v++)
        for (size_t i = 0; r == 0 && i < PG_STEPS[v].n; i++)
            r = pg_exec(s, c, PG_STEPS[v].sql[i], NULL, NULL, err);
    if (r == 0 && have < PG_SCHEMA_VERSION) {
        struct pg_params p = {0};
        pg_param_int8(&p, PG_SCHEMA_VERSION);
        r = pg_exec(s, c,
                    "INSERT INTO sandboxd_schema (id, version) VALUES (1, $1::bigint::integer) "
                    "ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, "
                    "updated_at = now()",
                    &p, NULL, err);
    }
    return r;
}

/* Only read (a source of sandboxd migrate): the schema must be there, and one this sandboxd
 * knows; nothing is made. */
static int pg_schema_check(struct store_pg *s, struct pg_conn *c, struct sbx_error *err)
{
    PGresult *res = NULL;
    int r = pg_exec(s, c,
                    "SELECT coalesce((SELECT version::bigint FROM sandboxd_schema WHERE id = 1), "
                    "0) WHERE to_regclass('sandboxd_schema') IS NOT NULL",
                    NULL, &res, err);
    if (r < 0)
        return r;
    int64_t have = PQntuples(res) ? pg_int8(res, 0, 0) : 0;
    PQclear(res);
    if (have == PG_SCHEMA_VERSION)
        return 0;
    if (have)
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                      "the database holds sandboxd's schema version %lld; this sandboxd reads "
                      "version %d",
                      (long long)have, PG_SCHEMA_VERSION);
    else
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                      "the database holds no state of sandboxd (no sandboxd_schema)");
    return -EPROTONOSUPPORT;
}

int pg_schema_setup(struct store_pg *s, struct pg_conn *c, struct sbx_error *err)
{
    /* Text of keys, values and names must arrive as it was sent: UTF-8 (or bytes kept as they
     * are, SQL_ASCII). */
    PGresult *res = NULL;
    int r = pg_exec(s, c, "SELECT current_setting('server_encoding')", NULL, &res, err);
    if (r < 0)
        return r;
    size_t len;
    char *enc = pg_bytes(res, 0, 0, &len);
    PQclear(res);
    bool ok = enc && (strcmp(enc, "UTF8") == 0 || strcmp(enc, "SQL_ASCII") == 0);
    if (!ok)
        sbx_error_set(err, SBX_ERR_UNAVAILABLE, STORE_UNAVAILABLE, NULL,
                      "the database's encoding is %s: sandboxd needs UTF8 (CREATE DATABASE ... "
                      "ENCODING 'UTF8')",
                      enc ? enc : "?");
    free(enc);
    if (!ok)
        return -EPROTONOSUPPORT;
    if (s->base.read_only)
        return pg_schema_check(s, c, err);
    if ((r = pg_exec(s, c, "BEGIN", NULL, NULL, err)) < 0)
        return r;
    r = pg_schema_txn(s, c, err);
    if (r == 0)
        return pg_exec(s, c, "COMMIT", NULL, NULL, err);
    pg_rollback(s, c);
    return r;
}
