// SPDX-License-Identifier: MIT
/*
 * migrate_store — `sandboxd migrate`'s copy of one state store into another (a state
 * directory into PostgreSQL, or back): see migrate_store.c. Called by cmd/migrate.c.
 */
#ifndef SANDBOXD_CMD_MIGRATE_STORE_H
#define SANDBOXD_CMD_MIGRATE_STORE_H

struct migrate_store_opts {
    const char *from_dir, *from_url; /* the source: one of them */
    const char *to_dir, *to_url;     /* the destination: one of them */
    const char *password_file;       /* the database's password (either side), or NULL */
};

/* Copy everything, report each item on stdout; the exit status (0: nothing failed). */
int migrate_stores(const struct migrate_store_opts *o);

#endif
