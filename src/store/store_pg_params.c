// SPDX-License-Identifier: MIT
/*
 * store_pg_params — the parameters of the PostgreSQL backend's statements and the columns of
 * their results (see store_pg_int.h): every value a client chose goes in as a parameter in
 * binary format with its type named, and comes back in binary format; nothing here builds SQL.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_pg_int.h"

#define BYTEAOID 17
#define INT8OID  20
#define TEXTOID  25

void pg_param_text(struct pg_params *p, const char *s)
{
    pg_param_textn(p, s, strlen(s));
}

void pg_param_textn(struct pg_params *p, const char *s, size_t len)
{
    pg_param_bytes(p, s, len);
    p->types[p->n - 1] = TEXTOID;
}

void pg_param_bytes(struct pg_params *p, const void *data, size_t len)
{
    int i = p->n++;
    p->types[i] = BYTEAOID;
    p->values[i] = len ? data : "";
    p->lengths[i] = (int)len; /* items are capped far below 2 GiB (store_limits) */
    p->formats[i] = 1;
}

void pg_param_int8(struct pg_params *p, int64_t v)
{
    int i = p->n++;
    p->ints[i] = htobe64((uint64_t)v);
    p->types[i] = INT8OID;
    p->values[i] = (const char *)&p->ints[i];
    p->lengths[i] = 8;
    p->formats[i] = 1;
}

void pg_param_null(struct pg_params *p, Oid type)
{
    int i = p->n++;
    p->types[i] = type;
    p->values[i] = NULL;
    p->lengths[i] = 0;
    p->formats[i] = 1;
}

int64_t pg_int8(const PGresult *res, int row, int col)
{
    uint64_t v = 0;
    if (PQgetisnull(res, row, col) || PQgetlength(res, row, col) != 8)
        return 0;
    memcpy(&v, PQgetvalue(res, row, col), 8);
    return (int64_t)be64toh(v);
}

bool pg_isnull(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col);
}

char *pg_bytes(const PGresult *res, int row, int col, size_t *ret_len)
{
    size_t len = (size_t)PQgetlength(res, row, col);
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    memcpy(out, PQgetvalue(res, row, col), len);
    out[len] = '\0';
    if (ret_len)
        *ret_len = len;
    return out;
}
