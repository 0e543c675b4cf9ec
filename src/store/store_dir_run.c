// SPDX-License-Identifier: MIT
/*
 * store_dir_run — the local framework's runtime values in the state
 * directory: the table in memory (store/state.c, with its bounds) is what
 * reads answer from, and every value is also a file
 * STATE_DIR/runstate/<32 hex of BLAKE2b(app, key)>.json holding
 * {app, key, writtenAt, value}, written (temporary file + rename) before the
 * table takes it, removed when the table evicts or expires it, and read
 * back at start, oldest first, so that a restart keeps them. One lock
 * orders a value's file and its place in the table.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/jsonscan.h"
#include "store/store_dir_int.h"
#include "util/buf.h"
#include "util/fdio.h"
#include "util/jdump.h"
#include "util/log.h"
#include "util/macros.h"

#define RUN_FILE_OVERHEAD 512 /* bytes of a value's file besides the value, app and key */

struct store_dir_run {
    struct state_store *mem;
    struct state_limits lim; /* the table's, defaults filled in */
    int dirfd;               /* STATE_DIR/runstate */
    pthread_mutex_t lock;    /* a write: its file and the table together */
};

/* "<32 hex>.json" of (app, key). */
static void run_file(const char *app, const char *key, char out[40])
{
    crypto_generichash_state st;
    unsigned char h[16];
    crypto_generichash_init(&st, NULL, 0, sizeof(h));
    crypto_generichash_update(&st, (const unsigned char *)app, strlen(app) + 1);
    crypto_generichash_update(&st, (const unsigned char *)key, strlen(key));
    crypto_generichash_final(&st, h, sizeof(h));
    sodium_bin2hex(out, 33, h, sizeof(h));
    strcpy(out + 32, ".json");
}

static void run_on_drop(void *userdata, const char *app, const char *key)
{
    struct store_dir_run *run = userdata;
    char file[40];
    run_file(app, key, file);
    if (unlinkat(run->dirfd, file, 0) < 0 && errno != ENOENT)
        log_errno(LOG_WARN, errno, "store: cannot remove the runtime value file %s", file);
}

/* A value's file: {"app":..., "key":..., "writtenAt": ms, "value": text}. */
static int run_doc(const char *app, const char *key, const char *text, size_t len,
                   int64_t written_ms, struct buf *b)
{
    json_t *head =
        json_pack("{s:s, s:s, s:I}", "app", app, "key", key, "writtenAt", (json_int_t)written_ms);
    char *h = head ? jdump(head, JSON_COMPACT, NULL) : NULL;
    json_decref(head);
    if (!h)
        return -ENOMEM;
    size_t hl = strlen(h);
    /* "{...}" becomes "{...,"value":TEXT}" */
    int r = buf_append(b, h, hl - 1);
    free(h);
    if (r == 0)
        r = buf_appends(b, ",\"value\":");
    if (r == 0)
        r = buf_append(b, text, len);
    if (r == 0)
        r = buf_appends(b, "}");
    return r;
}

/* ---- at start: the files, oldest first ----------------------------------------------------- */

struct run_loaded {
    char *app, *key, *text;
    size_t len;
    int64_t written_ms;
};

struct run_load {
    struct store_dir_run *run;
    struct run_loaded *v;
    size_t n, cap;
};

static int run_load_file(struct run_load *x, const char *name)
{
    char *data = NULL;
    size_t len = 0;
    size_t max = x->run->lim.max_value + 2 * x->run->lim.max_key + RUN_FILE_OVERHEAD;
    int r = fd_read_file_flags(x->run->dirfd, name, O_NOFOLLOW, max, &data, &len);
    if (r < 0)
        return r;
    static const char *const value_path[] = {"value", NULL};
    struct jsonscan_result sr;
    const char *why;
    json_t *head = NULL;
    if (jsonscan(data, len, 0, value_path, &sr, &why) == 0 && sr.found)
        head = jsonscan_load_without(data, len, sr.start, sr.end);
    const char *app = json_string_value(json_object_get(head, "app"));
    const char *key = json_string_value(json_object_get(head, "key"));
    json_t *at = json_object_get(head, "writtenAt");
    char expect[40];
    if (app && key)
        run_file(app, key, expect);
    r = -EBADMSG;
    if (app && key && json_is_integer(at) && strcmp(expect, name) == 0) {
        if (x->n == x->cap) {
            size_t cap = x->cap ? 2 * x->cap : 64;
            struct run_loaded *grown = realloc(x->v, cap * sizeof(*grown));
            if (!grown)
                goto out;
            x->v = grown;
            x->cap = cap;
        }
        struct run_loaded *l = &x->v[x->n];
        *l = (struct run_loaded){.app = strdup(app),
                                 .key = strdup(key),
                                 .text = strndup(data + sr.start, sr.end - sr.start),
                                 .len = sr.end - sr.start,
                                 .written_ms = json_integer_value(at)};
        r = l->app && l->key && l->text ? 0 : -ENOMEM;
        x->n++;
    }
out:
    json_decref(head);
    free(data);
    return r;
}

static int run_cmp_time(const void *a, const void *b)
{
    int64_t x = ((const struct run_loaded *)a)->written_ms;
    int64_t y = ((const struct run_loaded *)b)->written_ms;
    return x < y ? -1 : x > y;
}

static int run_nothing(void *userdata, const char *app, const char *key, const char *text,
                       int64_t written_us)
{
    (void)userdata, (void)app, (void)key, (void)text, (void)written_us;
    return 0;
}

static int run_load(struct store_dir_run *run)
{
    DIR *d = store_dir_opendir(run->dirfd);
    if (!d)
        return -errno;
    struct run_load x = {.run = run};
    /* A directory filled behind our back is read only so far: every value the table could
     * hold at the smallest size, twice. */
    size_t cap = 2 * (run->lim.max_bytes / STATE_ENTRY_OVERHEAD);
    int r = 0;
    size_t seen = 0;
    struct dirent *e;
    while (r != -ENOMEM && seen < cap && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l != 37 || strcmp(e->d_name + 32, ".json") != 0)
            continue;
        seen++;
        r = run_load_file(&x, e->d_name);
        if (r < 0 && r != -ENOMEM)
            log_errno(LOG_WARN, r, "store: runtime value file %s skipped", e->d_name);
    }
    closedir(d);
    if (x.n > 1)
        qsort(x.v, x.n, sizeof(*x.v), run_cmp_time);
    for (size_t i = 0; i < x.n; i++) {
        struct run_loaded *l = &x.v[i];
        char *why = NULL;
        if (r != -ENOMEM && l->text) {
            int q = state_store_put_text(run->mem, l->app, l->key, l->text, l->len,
                                         l->written_ms * 1000, false, &why);
            l->text = NULL; /* taken */
            if (q == -ENOMEM)
                r = q;
            free(why);
        }
        free(l->app);
        free(l->key);
        free(l->text);
    }
    free(x.v);
    if (r == -ENOMEM)
        return r;
    /* What expired while sandboxd was away goes now (and its file with it). */
    return state_store_each(run->mem, store_now_ms() * 1000, run_nothing, NULL);
}

int store_dir_run_open(struct store_dir *ds)
{
    struct store_dir_run *run = calloc(1, sizeof(*run));
    if (!run)
        return -ENOMEM;
    run->dirfd = -1;
    pthread_mutex_init(&run->lock, NULL);
    ds->run = run;
    int r = state_store_new(&ds->base.run, &run->mem);
    if (r < 0)
        return r;
    run->lim = ds->base.run; /* the defaults filled in (store_new) */
    bool read_only = ds->base.read_only;
    if (!read_only && mkdirat(ds->state_fd, "runstate", 0700) < 0 && errno != EEXIST)
        return log_errno(LOG_ERROR, errno, "store: cannot make %s/runstate", ds->dir);
    run->dirfd = openat(ds->state_fd, "runstate", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (run->dirfd < 0 && read_only && errno == ENOENT)
        return 0; /* only read, and it never had one: no runtime values */
    if (run->dirfd < 0)
        return log_errno(LOG_ERROR, errno, "store: cannot open %s/runstate", ds->dir);
    /* Only read: what expires or is evicted goes from memory, its file stays. */
    if (!read_only)
        state_store_on_drop(run->mem, run_on_drop, run);
    r = run_load(run);
    return r < 0 ? log_errno(LOG_ERROR, r, "store: cannot read %s/runstate", ds->dir) : 0;
}

void store_dir_run_close(struct store_dir *ds)
{
    struct store_dir_run *run = ds->run;
    if (!run)
        return;
    if (run->mem)
        state_store_on_drop(run->mem, NULL, NULL); /* freeing the table removes no file */
    state_store_free(run->mem);
    if (run->dirfd >= 0)
        close(run->dirfd);
    pthread_mutex_destroy(&run->lock);
    free(run);
    ds->run = NULL;
}

int store_dir_run_set(struct store *s, const char *app, const char *key, const char *text,
                      size_t len, int64_t written_ms, bool only_new, struct sbx_error *err)
{
    struct store_dir_run *run = ((struct store_dir *)s)->run;
    int64_t at = written_ms > 0 ? written_ms : store_now_ms();
    char file[40];
    run_file(app, key, file);
    struct buf b;
    /* \uXXXX escapes make a name at most 6 times longer */
    buf_init(&b, len + 6 * (strlen(app) + strlen(key)) + RUN_FILE_OVERHEAD);
    int r = run_doc(app, key, text, len, at, &b);
    char *copy = r == 0 ? strndup(text, len) : NULL;
    if (!copy) {
        buf_free(&b);
        return store_fail(err, -ENOMEM, "runtime value");
    }
    pthread_mutex_lock(&run->lock);
    char *old = NULL;
    size_t old_len;
    if (only_new &&
        state_store_get_text(run->mem, app, key, store_now_ms() * 1000, &old, &old_len) == 0) {
        free(old);
        r = -EEXIST;
        sbx_error_set(err, SBX_ERR_CONFLICT, "EXISTS", NULL,
                      "there is a value of that key already");
    }
    /* The file first: a value the table holds is always one a restart finds again. */
    if (r == 0 && (r = store_dir_write(run->dirfd, file, b.data, b.len, true)) < 0)
        store_fail(err, r, "runtime value");
    if (r == 0) {
        char *why = NULL;
        r = state_store_put_text(run->mem, app, key, TAKE_PTR(copy), len, at * 1000, false, &why);
        if (r < 0) {
            (void)unlinkat(run->dirfd, file, 0); /* the table refused it: no file either */
            sbx_error_set(err, r == -E2BIG ? SBX_ERR_TOO_LARGE : SBX_ERR_INTERNAL,
                          r == -E2BIG ? "TOO_LARGE" : "INTERNAL", NULL, "%s",
                          why ? why : strerror(-r));
        }
        free(why);
    }
    pthread_mutex_unlock(&run->lock);
    free(copy);
    buf_free(&b);
    return r;
}

int store_dir_run_get(struct store *s, const char *app, const char *key, char **ret_text,
                      size_t *ret_len, struct sbx_error *err)
{
    struct store_dir_run *run = ((struct store_dir *)s)->run;
    int r = state_store_get_text(run->mem, app, key, store_now_ms() * 1000, ret_text, ret_len);
    return r == -ENOMEM ? store_fail(err, r, "runtime value") : r;
}

struct run_each {
    store_run_fn fn;
    void *userdata;
};

static int run_each_one(void *userdata, const char *app, const char *key, const char *text,
                        int64_t written_us)
{
    struct run_each *x = userdata;
    return x->fn(x->userdata, app, key, text, written_us / 1000);
}

int store_dir_each_run(struct store *s, store_run_fn fn, void *userdata, struct sbx_error *err)
{
    struct store_dir_run *run = ((struct store_dir *)s)->run;
    struct run_each x = {.fn = fn, .userdata = userdata};
    int r = state_store_each(run->mem, store_now_ms() * 1000, run_each_one, &x);
    if (r < 0 && !err->message)
        store_fail(err, r, "runtime values");
    return r;
}
