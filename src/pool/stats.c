// SPDX-License-Identifier: MIT
/*
 * stats — the pool's figures for /healthz: counters under the lock, and the memory of its
 * zygotes and ready cells from /proc/PID/smaps_rollup (read without the lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool_int.h"
#include "util/fdio.h"
#include "util/macros.h"

json_t *pool_stats(struct pool *p)
{
    pthread_mutex_lock(&p->lock);
    json_t *zs = json_array();
    for (unsigned i = 0; zs && i < p->opt.zygotes; i++) {
        struct zygote *z = &p->zygotes[i];
        if (json_array_append_new(zs, json_pack("{s:i, s:b, s:I, s:I}", "pid", (int)z->proc.pid,
                                                "alive", z->alive, "forks", (json_int_t)z->forks,
                                                "restarts", (json_int_t)z->restarts)) < 0) {
            json_decref(zs);
            zs = NULL; /* "o" fails on it below: NULL, out of memory */
        }
    }
    json_t *o =
        json_pack("{s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
                  "s:I, s:I, s:o}",
                  "enabled", 1, "started", p->started, "target", (json_int_t)p->target, "minSize",
                  (json_int_t)p->opt.size, "maxSize", (json_int_t)p->opt.max_size, "retiredIdle",
                  (json_int_t)p->retired, "ready", (json_int_t)p->n_ready, "starting",
                  (json_int_t)p->n_starting, "hits", (json_int_t)p->hits, "misses",
                  (json_int_t)p->misses, "created", (json_int_t)(p->next_token), "failed",
                  (json_int_t)p->failed, "diedIdle", (json_int_t)p->died_idle, "cellExits",
                  (json_int_t)p->exits, "cellMinorFaults", (json_int_t)p->exit_minflt,
                  "cellReadyMinorFaults", (json_int_t)p->ready_minflt, "zygotes", zs);
    pthread_mutex_unlock(&p->lock);
    return o;
}

/* Rss and Pss of a process in bytes, from /proc/PID/smaps_rollup. */
static int pool_proc_memory(pid_t pid, uint64_t *ret_rss, uint64_t *ret_pss)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
    _cleanup_free_ char *s = NULL;
    int r = fd_read_file(AT_FDCWD, path, 1 << 16, &s, NULL);
    if (r < 0)
        return r;
    const char *rss = strstr(s, "\nRss:");
    const char *pss = strstr(s, "\nPss:");
    if (!rss || !pss)
        return -EBADMSG;
    *ret_rss = strtoull(rss + 5, NULL, 10) * 1024;
    *ret_pss = strtoull(pss + 5, NULL, 10) * 1024;
    return 0;
}

int pool_memory_pids(const struct pool *p, struct pool_pids *ret)
{
    /* Sized to the pool: every live zygote and every ready cell, however many. */
    struct pool_pids pp = {.zygotes = calloc(p->opt.zygotes + 1, sizeof(pid_t)),
                           .cells = calloc((size_t)p->n_ready + 1, sizeof(pid_t))};
    if (!pp.zygotes || !pp.cells) {
        pool_pids_done(&pp);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < p->opt.zygotes; i++)
        if (p->zygotes[i].alive)
            pp.zygotes[pp.n_zygotes++] = p->zygotes[i].proc.pid;
    for (const struct pool_cell *pc = p->ready_head; pc && pp.n_cells < p->n_ready; pc = pc->next)
        if (pc->cell && pc->cell->pid > 0)
            pp.cells[pp.n_cells++] = pc->cell->pid;
    *ret = pp;
    return 0;
}

void pool_pids_done(struct pool_pids *pp)
{
    free(pp->zygotes);
    free(pp->cells);
    *pp = (struct pool_pids){0};
}

json_t *pool_memory(struct pool *p)
{
    struct pool_pids pp;
    pthread_mutex_lock(&p->lock);
    int r = pool_memory_pids(p, &pp);
    pthread_mutex_unlock(&p->lock);
    if (r < 0)
        return NULL;
    /* Read without the lock: a process that exits meanwhile is simply left out. */
    uint64_t zrss = 0, zpss = 0, cpss = 0, rss, pss;
    size_t cells = 0;
    for (size_t i = 0; i < pp.n_zygotes; i++)
        if (pool_proc_memory(pp.zygotes[i], &rss, &pss) == 0) {
            zrss += rss;
            zpss += pss;
        }
    for (size_t i = 0; i < pp.n_cells; i++)
        if (pool_proc_memory(pp.cells[i], &rss, &pss) == 0) {
            cpss += pss;
            cells++;
        }
    pool_pids_done(&pp);
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "zygoteRssBytes", (json_int_t)zrss,
                     "zygotePssBytes", (json_int_t)zpss, "readyCells", (json_int_t)cells,
                     "cellsPssBytes", (json_int_t)cpss, "cellPssBytes",
                     (json_int_t)(cells ? cpss / cells : 0));
}
