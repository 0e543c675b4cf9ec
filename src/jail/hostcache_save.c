// SPDX-License-Identifier: MIT
/*
 * hostcache_save — recording a discovery's entry while sandboxd builds its mount plan, and
 * saving it: one file written aside and renamed over the old, older files pruned. See
 * hostcache.h and hostcache.c for the file's format.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jail/hostcache_int.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/trust.h"

/* ---- recording and saving ---------------------------------------------------------------- */

/* A new entry replaces whatever was loaded. */
static int hostcache_begin(struct hostcache *hc)
{
    if (hc->recording)
        return 0;
    hostcache_drop_entry(hc);
    hc->watch = json_array();
    hc->ops = json_array();
    if (!hc->watch || !hc->ops)
        return -ENOMEM;
    hc->recording = true;
    return 0;
}

int hostcache_watch(struct hostcache *hc, const char *path)
{
    int r = hostcache_begin(hc);
    if (r < 0)
        return r;
    if (json_array_size(hc->watch) >= HOSTCACHE_MAX_ITEMS)
        return -E2BIG;
    char id[HOSTCACHE_ID_MAX];
    bool missing = hostcache_identity(path, id) < 0;
    json_t *v = json_pack("[s,s?]", path, missing ? NULL : id);
    return v && json_array_append_new(hc->watch, v) == 0 ? 0 : -ENOMEM;
}

void hostcache_set_python(struct hostcache *hc, json_t *python)
{
    if (hostcache_begin(hc) < 0)
        return;
    json_decref(hc->python);
    hc->python = json_incref(python);
}

int hostcache_add_pyc(struct hostcache *hc, const char *name, const void *data, size_t len)
{
    int r = hostcache_begin(hc);
    if (r < 0)
        return r;
    if (!hostcache_pyc_name_ok(name))
        return -EINVAL;
    if (hc->n_pyc >= HOSTCACHE_MAX_PYC)
        return -E2BIG;
    struct hostcache_pyc *c = &hc->pyc[hc->n_pyc];
    if (!(c->name = strdup(name)) || !(c->data = malloc(len ? len : 1))) {
        free(c->name);
        return -ENOMEM;
    }
    memcpy(c->data, data, len);
    c->len = len;
    hc->n_pyc++;
    return 0;
}

/* One operation of discovery as an entry of "ops"; *ret NULL for one a replay recreates by
 * itself (the directories above a path, the empty file a file bind is attached over, the
 * toolbox's tmpfs). -EINVAL for anything else. */
static int hostcache_op(const struct mount_plan *p, size_t i, json_t **ret)
{
    const struct mount_op *op = &p->ops[i];
    const struct mount_op *next = i + 1 < p->n ? &p->ops[i + 1] : NULL;
    *ret = NULL;
    _cleanup_free_ char *path = fmt_str("/%s", op->dst);
    if (!path)
        return -ENOMEM;
    char id[HOSTCACHE_ID_MAX];
    size_t tlen = strlen(TOOLBOX_DIR);
    switch (op->kind) {
    case MOUNT_OP_MKDIR:
        return 0;
    case MOUNT_OP_FILE:
        return op->data_len == 0 && next && next->kind == MOUNT_OP_BIND &&
                       strcmp(next->dst, op->dst) == 0
                   ? 0
                   : -EINVAL;
    case MOUNT_OP_SYMLINK:
        if (strncmp(op->src, TOOLBOX_DIR, tlen) == 0 && strcmp(op->src + tlen, path) == 0) {
            if (hostcache_identity(path, id) < 0)
                return -EINVAL;
            *ret = json_pack("[s,s,s]", "stage", path, id);
        } else {
            *ret = json_pack("[s,s,s]", "link", op->src, path);
        }
        return *ret ? 0 : -ENOMEM;
    case MOUNT_OP_BIND:
        if (op->src[0] != '/' && strcmp(path, TOOLBOX_DIR) == 0)
            return 0;
        if (strcmp(op->src, path) != 0 || op->flags != HOSTCACHE_BIND_SET ||
            hostcache_identity(path, id) < 0)
            return -EINVAL;
        *ret = json_pack("[s,s,s]", "bind", path, id);
        return *ret ? 0 : -ENOMEM;
    default:
        return -EINVAL;
    }
}

int hostcache_record(struct hostcache *hc, const struct mount_plan *p, size_t first)
{
    int r = hostcache_begin(hc);
    if (r < 0)
        return r;
    hostcache_digest(p, first, hc->prefix);
    for (size_t i = first; i < p->n; i++) {
        json_t *v = NULL;
        if ((r = hostcache_op(p, i, &v)) < 0) {
            if (r == -EINVAL)
                log_debug("jail: host discovery planned a %s of '/%s', which the cache cannot "
                          "replay: not cached",
                          mount_op_kind_name(p->ops[i].kind), p->ops[i].dst);
            return r;
        }
        if (v && (json_array_size(hc->ops) >= HOSTCACHE_MAX_ITEMS ||
                  json_array_append_new(hc->ops, v) < 0))
            return -E2BIG;
    }
    return 0;
}

static bool hostcache_older(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Remove leftovers of interrupted saves, and the oldest entries (other options, other builds)
 * past HOSTCACHE_KEEP, never name. Best effort: a file left only takes space. */
static void hostcache_prune(struct hostcache *hc)
{
    int fd = openat(hc->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct {
        char name[NAME_MAX + 1];
        struct timespec mtime;
    } kept[HOSTCACHE_KEEP - 1]; /* the newest others seen so far (ours is the last one) */
    size_t n = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        struct stat st;
        if (fstatat(hc->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (e->d_name[0] == '.' && len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) {
            if (st.st_mtim.tv_sec < now - 60)
                (void)unlinkat(hc->dirfd, e->d_name, 0);
            continue;
        }
        if (len < 6 || strcmp(e->d_name + len - 6, ".cache") != 0 ||
            strcmp(e->d_name, hc->name) == 0)
            continue;
        size_t at = n;
        if (n == ARRAY_SIZE(kept)) {
            at = 0;
            for (size_t i = 1; i < n; i++)
                if (hostcache_older(&kept[i].mtime, &kept[at].mtime))
                    at = i;
            if (hostcache_older(&st.st_mtim, &kept[at].mtime)) {
                (void)unlinkat(hc->dirfd, e->d_name, 0);
                continue;
            }
            (void)unlinkat(hc->dirfd, kept[at].name, 0);
        } else {
            n++;
        }
        memcpy(kept[at].name, e->d_name, len + 1); /* d_name holds at most NAME_MAX */
        kept[at].mtime = st.st_mtim;
    }
    closedir(d);
}

int hostcache_save(struct hostcache *hc)
{
    if (!hc->recording || !hc->python || !*hc->prefix)
        return -EINVAL;
    size_t off = 0;
    json_t *pyc = json_array();
    for (size_t i = 0; pyc && i < hc->n_pyc; i++) {
        if (json_array_append_new(pyc, json_pack("[s,I,I]", hc->pyc[i].name, (json_int_t)off,
                                                 (json_int_t)hc->pyc[i].len)) < 0) {
            json_decref(pyc);
            pyc = NULL;
        }
        off += hc->pyc[i].len;
    }
    json_t *e = pyc ? json_pack("{s:i, s:s, s:s, s:s, s:s, s:O, s:O, s:O, s:o}", "format",
                                HOSTCACHE_FORMAT, "version", SANDBOXD_VERSION, "exe", hc->exe,
                                "fingerprint", hc->fingerprint, "prefix", hc->prefix, "watch",
                                hc->watch, "python", hc->python, "ops", hc->ops, "pyc", pyc)
                    : NULL;
    _cleanup_free_ char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    _cleanup_free_ char *tmp = fmt_str(".%s.%d.tmp", hc->name, (int)getpid());
    if (!text || !tmp)
        return -ENOMEM;
    if (strlen(text) + off + sizeof(HOSTCACHE_MAGIC) + 2 > HOSTCACHE_MAX_FILE)
        return log_errno(LOG_WARN, EFBIG, "jail: the host discovery cache would exceed %u bytes",
                         HOSTCACHE_MAX_FILE);
    int fd = openat(hc->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                    0600);
    if (fd < 0)
        return log_errno(LOG_WARN, errno, "jail: cannot write the host discovery cache in %s",
                         hc->dir);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        (void)unlinkat(hc->dirfd, tmp, 0);
        return -ENOMEM;
    }
    fputs(HOSTCACHE_MAGIC, f);
    fputs(text, f);
    fputc('\0', f);
    for (size_t i = 0; i < hc->n_pyc; i++)
        fwrite(hc->pyc[i].data, 1, hc->pyc[i].len, f);
    int r = ferror(f) ? -EIO : 0;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    if (r == 0 && renameat(hc->dirfd, tmp, hc->dirfd, hc->name) < 0)
        r = -errno;
    if (r < 0) {
        (void)unlinkat(hc->dirfd, tmp, 0);
        return log_errno(LOG_WARN, -r, "jail: cannot write the host discovery cache %s/%s", hc->dir,
                         hc->name);
    }
    hostcache_prune(hc);
    log_info("jail: host discovery saved to %s/%s (%zu watched paths, %zu operations, %zu "
             "bytecode files)",
             hc->dir, hc->name, json_array_size(hc->watch), json_array_size(hc->ops), hc->n_pyc);
    return 0;
}
