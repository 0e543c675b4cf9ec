// SPDX-License-Identifier: MIT
/*
 * reuse — see reuse.h.
 *
 * The idle interpreters form one list, most recently used first; a lookup
 * scans it (it holds at most --reuse-max-idle entries, 4096 at most). A
 * sweeper thread retires interpreters idle for longer than --reuse-idle-s,
 * so that a pool that grew for a burst shrinks when the burst is over.
 */
#include "pool/reuse.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utlist.h>

#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/thread.h"

#define REUSE_SWEEP_US   1000000
#define REUSE_HASH_BYTES 16

struct reuse_idle {
    char *key;
    char *app_id;
    struct cell *cell;
    unsigned uses;
    int64_t since_us;
    struct reuse_idle *prev, *next; /* utlist DL, most recent first */
};

struct reuse {
    bool all;
    char **apps;
    size_t n_apps;
    unsigned max_executions, max_idle;
    int64_t idle_us;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* the sweeper's wake-up: its stop */
    struct thread_group sweeper;
    struct reuse_idle *idle;
    size_t n_idle;
    uint64_t reused, misses, retired_executions, retired_idle, retired_lru, retired_load_code,
        retired_error, retired_dead;
};

static void reuse_idle_free(struct reuse_idle *e)
{
    if (!e)
        return;
    cell_free(e->cell);
    free(e->key);
    free(e->app_id);
    free(e);
}

/* Unlink e (lock held) onto *gone, to be freed after unlocking. */
static void reuse_unlink(struct reuse *r, struct reuse_idle *e, struct reuse_idle **gone)
{
    DL_DELETE(r->idle, e);
    r->n_idle--;
    DL_APPEND(*gone, e);
}

static void reuse_free_list(struct reuse_idle *gone)
{
    struct reuse_idle *e, *tmp;
    DL_FOREACH_SAFE(gone, e, tmp)
    {
        DL_DELETE(gone, e);
        reuse_idle_free(e);
    }
}

static void *reuse_sweep(void *arg)
{
    struct reuse *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!thread_group_stopping(&r->sweeper)) {
        /* A timeout is the normal wake; after a stop the last sweep still runs. */
        (void)thread_group_wait(&r->sweeper, clock_mono_us() + REUSE_SWEEP_US);
        struct reuse_idle *gone = NULL;
        int64_t now = clock_mono_us();
        /* The oldest are at the tail. */
        while (r->idle && now - r->idle->prev->since_us >= r->idle_us) {
            reuse_unlink(r, r->idle->prev, &gone);
            r->retired_idle++;
        }
        if (gone) {
            pthread_mutex_unlock(&r->lock);
            reuse_free_list(gone);
            pthread_mutex_lock(&r->lock);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static int reuse_parse_apps(struct reuse *r, const char *csv, char **ret_error)
{
    if (strcmp(csv, "*") == 0) {
        r->all = true;
        return 0;
    }
    for (const char *s = csv; *s;) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n > REUSE_APP_MAX) {
            *ret_error =
                fmt_str("--warm-reuse: an appId must have 1 to %d characters", REUSE_APP_MAX);
            return -EINVAL;
        }
        if (r->n_apps >= REUSE_MAX_APPS) {
            *ret_error = fmt_str("--warm-reuse: at most %d appIds", REUSE_MAX_APPS);
            return -EINVAL;
        }
        char **grown = realloc(r->apps, (r->n_apps + 1) * sizeof(char *));
        if (!grown)
            return -ENOMEM;
        r->apps = grown;
        if (!(r->apps[r->n_apps] = strndup(s, n)))
            return -ENOMEM;
        r->n_apps++;
        s += n + (s[n] == ',');
    }
    if (!r->n_apps) {
        *ret_error = fmt_str("--warm-reuse: expected appIds separated by commas, or *");
        return -EINVAL;
    }
    return 0;
}

/* What reuse_new built besides the sweeper and the idle list. */
static void reuse_destroy(struct reuse *r)
{
    for (size_t i = 0; i < r->n_apps; i++)
        free(r->apps[i]);
    free(r->apps);
    thread_group_done(&r->sweeper);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

int reuse_new(const struct reuse_options *opt, struct reuse **ret, char **ret_error)
{
    *ret_error = NULL;
    struct reuse *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->max_executions = opt->max_executions ? opt->max_executions : 1;
    r->max_idle = opt->max_idle;
    r->idle_us = opt->idle_us;
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cond, &ca);
    pthread_condattr_destroy(&ca);
    int err = thread_group_init(&r->sweeper, "reuse sweeper", 1, &r->lock, &r->cond, -1);
    if (err == 0)
        err = reuse_parse_apps(r, opt->apps ? opt->apps : "", ret_error);
    if (err == 0)
        err = thread_group_start(&r->sweeper, reuse_sweep, r);
    if (err < 0) {
        reuse_destroy(r);
        return err;
    }
    *ret = r;
    return 0;
}

void reuse_free(struct reuse *r)
{
    if (!r)
        return;
    thread_group_stop(&r->sweeper);
    reuse_free_list(r->idle);
    reuse_destroy(r);
}

bool reuse_wants(const struct reuse *r, const char *app_id)
{
    if (!r || !app_id || !*app_id)
        return false;
    if (r->all)
        return true;
    for (size_t i = 0; i < r->n_apps; i++)
        if (strcmp(r->apps[i], app_id) == 0)
            return true;
    return false;
}

char *reuse_key(const struct reuse_owner *owner, const char *app_id, const char *script,
                const char *content_b64, const char *profile)
{
    unsigned char h[REUSE_HASH_BYTES];
    char hex[2 * REUSE_HASH_BYTES + 1];
    crypto_generichash(h, sizeof(h), (const unsigned char *)content_b64, strlen(content_b64), NULL,
                       0);
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    /* NUL-separated parts could not be told apart from a name holding the separator; the
     * lengths make the key unambiguous. The operator's tenant is the empty name, which no
     * tenant has (tenant names are 1 to 64 characters). */
    const char *tenant = owner->tenant ? owner->tenant : "";
    return fmt_str("%zu:%s %zu:%s %zu:%s %zu:%s %s %s", strlen(tenant), tenant,
                   strlen(owner->endpoint), owner->endpoint, strlen(app_id), app_id, strlen(script),
                   script, hex, profile ? profile : "default");
}

char *reuse_key_limits(const char *key, uint64_t memory_mb)
{
    return fmt_str("%s %llu", key, (unsigned long long)memory_mb);
}

/* A kept interpreter that died (or wrote something unasked) must not be handed out. */
static bool reuse_cell_usable(struct cell *c)
{
    struct pollfd pfd[2] = {{.fd = c->pidfd, .events = POLLIN},
                            {.fd = c->proto_fd, .events = POLLIN}};
    int n = poll(pfd, 2, 0);
    return n == 0 && !frame_reader_ready(&c->reader);
}

struct cell *reuse_take(struct reuse *r, const char *key, unsigned *ret_uses)
{
    struct reuse_idle *gone = NULL, *found = NULL;
    pthread_mutex_lock(&r->lock);
    struct reuse_idle *e, *tmp;
    DL_FOREACH_SAFE(r->idle, e, tmp)
    {
        if (strcmp(e->key, key) != 0)
            continue;
        reuse_unlink(r, e, &gone);
        if (reuse_cell_usable(e->cell)) {
            DL_DELETE(gone, e);
            found = e;
            break;
        }
        r->retired_dead++;
    }
    if (found)
        r->reused++;
    else
        r->misses++;
    pthread_mutex_unlock(&r->lock);
    reuse_free_list(gone);
    if (!found)
        return NULL;
    struct cell *c = TAKE_PTR(found->cell);
    *ret_uses = found->uses;
    reuse_idle_free(found);
    return c;
}

void reuse_put(struct reuse *r, const char *app_id, const char *key, struct cell *c, unsigned uses)
{
    if (uses >= r->max_executions || !r->max_idle) {
        pthread_mutex_lock(&r->lock);
        r->retired_executions += uses >= r->max_executions;
        pthread_mutex_unlock(&r->lock);
        cell_free(c);
        return;
    }
    struct reuse_idle *e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key)) || !(e->app_id = strdup(app_id))) {
        log_warn("reuse: out of memory; the interpreter is retired");
        if (e) {
            free(e->key);
            free(e);
        }
        cell_free(c);
        return;
    }
    e->cell = c;
    e->uses = uses;
    e->since_us = clock_mono_us();
    struct reuse_idle *gone = NULL;
    pthread_mutex_lock(&r->lock);
    DL_PREPEND(r->idle, e);
    r->n_idle++;
    while (r->n_idle > r->max_idle) {
        reuse_unlink(r, r->idle->prev, &gone);
        r->retired_lru++;
    }
    pthread_mutex_unlock(&r->lock);
    reuse_free_list(gone);
}

void reuse_note_retired_error(struct reuse *r)
{
    pthread_mutex_lock(&r->lock);
    r->retired_error++;
    pthread_mutex_unlock(&r->lock);
}

size_t reuse_retire_app(struct reuse *r, const char *app_id)
{
    if (!r)
        return 0;
    struct reuse_idle *gone = NULL, *e, *tmp;
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    DL_FOREACH_SAFE(r->idle, e, tmp)
    {
        if (strcmp(e->app_id, app_id) != 0)
            continue;
        reuse_unlink(r, e, &gone);
        n++;
    }
    r->retired_load_code += n;
    pthread_mutex_unlock(&r->lock);
    reuse_free_list(gone);
    return n;
}

json_t *reuse_stats(struct reuse *r)
{
    if (!r)
        return json_pack("{s:b}", "enabled", 0);
    json_t *apps = json_array();
    if (r->all)
        json_array_append_new(apps, json_string("*"));
    for (size_t i = 0; i < r->n_apps; i++)
        json_array_append_new(apps, json_string(r->apps[i]));
    pthread_mutex_lock(&r->lock);
    json_t *o = json_pack("{s:b, s:o, s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
                          "enabled", 1, "apps", apps, "idle", (json_int_t)r->n_idle, "maxIdle",
                          (json_int_t)r->max_idle, "reused", (json_int_t)r->reused, "misses",
                          (json_int_t)r->misses, "maxExecutions", (json_int_t)r->max_executions,
                          "retired", "executions", (json_int_t)r->retired_executions, "idle",
                          (json_int_t)r->retired_idle, "lru", (json_int_t)r->retired_lru,
                          "loadCode", (json_int_t)r->retired_load_code, "error",
                          (json_int_t)r->retired_error, "dead", (json_int_t)r->retired_dead);
    pthread_mutex_unlock(&r->lock);
    return o;
}
