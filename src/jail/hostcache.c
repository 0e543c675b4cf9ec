// SPDX-License-Identifier: MIT
/*
 * hostcache — see hostcache.h.
 *
 * One file per fingerprint, "<16 hex digits>.cache": the line "sandboxd-hostcache", the entry
 * as one line of JSON, a NUL byte, then the bytecode files back to back (the entry names each
 * by offset and length). One file, so that one rename replaces all of it and a reader never
 * sees half of one entry with half of another.
 *
 * The entry:
 *   {"format": 1, "version": "0.1.0", "exe": ID, "fingerprint": "...", "prefix": "<hex>",
 *    "watch": [[path, ID or null], ...], "python": {...},
 *    "ops": [["bind", path, ID], ["link", target, path], ["stage", path, ID], ...],
 *    "pyc": [[name, offset, length], ...]}
 * where ID is a path's identity as lstat() gives it (hostcache_identity) and null says the
 * path did not exist. "stage" is a file the toolbox copied into its tmpfs; the tmpfs itself is
 * attached after the last operation, as toolbox_add does.
 *
 * Here: opening, loading and using an entry; recording and saving one is hostcache_save.c.
 */
#include "jail/hostcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mount.h>
#include <linux/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jail/hostcache_int.h"
#include "jail/hostdeps.h"
#include "jail/toolbox.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/trust.h"

/* ---- identities and digests -------------------------------------------------------------- */

/* path's identity: what lstat() says of it that changes when it is replaced, written to,
 * re-linked or re-permitted. 0, or -errno from lstat (-ENOENT: missing). */
int hostcache_identity(const char *path, char out[HOSTCACHE_ID_MAX])
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return -errno;
    snprintf(out, HOSTCACHE_ID_MAX, "%" PRIx64 ":%" PRIx64 ":%" PRIx64 ":%lld.%09ld:%lld.%09ld:%o",
             (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
             st.st_ctim.tv_nsec, (unsigned)st.st_mode);
    return 0;
}

static uint64_t hostcache_fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#define HOSTCACHE_FNV_INIT 0xcbf29ce484222325ull

static uint64_t hostcache_fnv_str(uint64_t h, const char *s)
{
    return hostcache_fnv(h, s ? s : "", (s ? strlen(s) : 0) + 1); /* the NUL separates fields */
}

/* A digest of what p holds before discovery adds to it (its first n operations): the kinds,
 * places, sources, sizes, modes and times, not the tmpfs options (a size is no discovery's
 * business). */
void hostcache_digest(const struct mount_plan *p, size_t n, char out[17])
{
    uint64_t h = HOSTCACHE_FNV_INIT;
    for (size_t i = 0; i < n; i++) {
        const struct mount_op *op = &p->ops[i];
        char nums[96];
        snprintf(nums, sizeof(nums), "%d:%zu:%o:%lld.%ld", (int)op->kind,
                 op->kind == MOUNT_OP_TMPFS ? 0 : op->data_len, (unsigned)op->mode,
                 (long long)op->mtime.tv_sec, op->mtime.tv_nsec);
        h = hostcache_fnv_str(h, nums);
        h = hostcache_fnv_str(h, op->dst);
        h = hostcache_fnv_str(h, op->src);
    }
    snprintf(out, 17, "%016" PRIx64, h);
}

/* ---- opening and loading ------------------------------------------------------------------ */

void hostcache_drop_entry(struct hostcache *hc)
{
    json_decref(hc->entry);
    hc->entry = NULL;
    free(hc->file);
    hc->file = NULL;
    hc->blob = NULL;
    hc->blob_len = 0;
}

void hostcache_free(struct hostcache *hc)
{
    if (!hc)
        return;
    (void)hostcache_copy_wait(hc);
    hostcache_drop_entry(hc);
    json_decref(hc->watch);
    json_decref(hc->ops);
    json_decref(hc->python);
    for (size_t i = 0; i < hc->n_pyc; i++) {
        free(hc->pyc[i].name);
        free(hc->pyc[i].data);
    }
    for (size_t i = 0; i < hc->n_copy; i++) {
        free(hc->copy_files[i]);
        free(hc->copy_ids[i]);
    }
    free(hc->copy_files);
    free(hc->copy_ids);
    if (hc->dirfd >= 0)
        close(hc->dirfd);
    toolbox_stage_close(&hc->stage);
    free(hc->dir);
    free(hc->name);
    free(hc->fingerprint);
    free(hc);
}

/* Read the cache file, if it is one we may believe: a regular file of ours, writable by nobody
 * else, with a single link, and not too large. 0, -ENOENT, -EPERM (untrusted: why logged),
 * -EFBIG, -errno. */
static int hostcache_read(struct hostcache *hc, char **ret, size_t *ret_len)
{
    _cleanup_close_ int fd =
        openat(hc->dirfd, hc->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 && errno == ELOOP) {
        log_warn("jail: ignoring the host discovery cache %s/%s: it is a symlink; discovering "
                 "again",
                 hc->dir, hc->name);
        return -EPERM;
    }
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
        st.st_nlink != 1) {
        log_warn("jail: ignoring the host discovery cache %s/%s (owner uid %u, mode %04o, %u "
                 "links; it must be a regular file of uid %u that nobody else can write): "
                 "discovering again",
                 hc->dir, hc->name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                 (unsigned)st.st_nlink, (unsigned)geteuid());
        return -EPERM;
    }
    if (st.st_size <= 0 || (uint64_t)st.st_size > HOSTCACHE_MAX_FILE)
        return -EFBIG;
    size_t len = (size_t)st.st_size;
    char *buf = malloc(len + 1);
    if (!buf)
        return -ENOMEM;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            return n < 0 ? -errno : -EBADMSG; /* it shrank */
        }
        got += (size_t)n;
    }
    buf[len] = '\0';
    *ret = buf;
    *ret_len = len;
    return 0;
}

bool hostcache_pyc_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n < 5 || n > 200 || strcmp(name + n - 4, ".pyc") != 0 || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", name[i]))
            return false;
    return true;
}

/* Is the entry well formed, ours (format, version, binary, fingerprint) and within bounds? The
 * names of what is wrong go to the debug log. */
static bool hostcache_entry_ok(const struct hostcache *hc, json_t *e, size_t blob_len)
{
    const char *why = NULL;
    json_t *watch = json_object_get(e, "watch"), *ops = json_object_get(e, "ops");
    json_t *pyc = json_object_get(e, "pyc");
    if (json_integer_value(json_object_get(e, "format")) != HOSTCACHE_FORMAT ||
        !json_is_string(json_object_get(e, "version")) ||
        strcmp(json_string_value(json_object_get(e, "version")), SANDBOXD_VERSION) != 0)
        why = "another format or version";
    else if (!json_is_string(json_object_get(e, "exe")) ||
             strcmp(json_string_value(json_object_get(e, "exe")), hc->exe) != 0)
        why = "another sandboxd binary";
    else if (!json_is_string(json_object_get(e, "fingerprint")) ||
             strcmp(json_string_value(json_object_get(e, "fingerprint")), hc->fingerprint) != 0)
        why = "other options";
    else if (!json_is_string(json_object_get(e, "prefix")) ||
             !json_is_object(json_object_get(e, "python")) || !json_is_array(watch) ||
             !json_is_array(ops) || !json_is_array(pyc) ||
             json_array_size(watch) > HOSTCACHE_MAX_ITEMS ||
             json_array_size(ops) > HOSTCACHE_MAX_ITEMS || json_array_size(pyc) > HOSTCACHE_MAX_PYC)
        why = "malformed";
    size_t i;
    json_t *v;
    json_array_foreach(watch, i, v)
    {
        if (why)
            break;
        json_t *id = json_array_get(v, 1);
        if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(json_array_get(v, 0)) ||
            (!json_is_string(id) && !json_is_null(id)))
            why = "a malformed watched path";
    }
    json_array_foreach(ops, i, v)
    {
        if (why)
            break;
        const char *kind = json_string_value(json_array_get(v, 0));
        bool ok = kind && json_array_size(v) == 3 && json_is_string(json_array_get(v, 1)) &&
                  json_is_string(json_array_get(v, 2));
        if (!ok ||
            (strcmp(kind, "bind") != 0 && strcmp(kind, "link") != 0 && strcmp(kind, "stage") != 0))
            why = "a malformed operation";
        else if (json_string_value(json_array_get(v, strcmp(kind, "link") == 0 ? 2 : 1))[0] != '/')
            why = "an operation on a relative path";
    }
    json_array_foreach(pyc, i, v)
    {
        if (why)
            break;
        const char *name = json_string_value(json_array_get(v, 0));
        json_int_t off = json_integer_value(json_array_get(v, 1));
        json_int_t len = json_integer_value(json_array_get(v, 2));
        if (!name || !hostcache_pyc_name_ok(name) || !json_is_integer(json_array_get(v, 1)) ||
            !json_is_integer(json_array_get(v, 2)) || off < 0 || len < 0 ||
            (uint64_t)off > blob_len || (uint64_t)len > blob_len - (uint64_t)off)
            why = "a malformed bytecode index";
    }
    if (why)
        log_msg(strncmp(why, "another", 7) == 0 || strncmp(why, "other", 5) == 0 ? LOG_DEBUG
                                                                                 : LOG_INFO,
                "jail: the host discovery cache %s/%s is not used (%s): discovering again", hc->dir,
                hc->name, why);
    return !why;
}

static void hostcache_load(struct hostcache *hc)
{
    char *file = NULL;
    size_t len = 0;
    int r = hostcache_read(hc, &file, &len);
    if (r < 0) {
        if (r != -ENOENT && r != -EPERM)
            log_info("jail: the host discovery cache %s/%s cannot be read (%s): discovering "
                     "again",
                     hc->dir, hc->name, r == -EFBIG ? "empty, or too large" : strerror(-r));
        return;
    }
    size_t magic = sizeof(HOSTCACHE_MAGIC) - 1;
    char *nul = len > magic ? memchr(file + magic, '\0', len - magic) : NULL;
    json_error_t jerr;
    json_t *e = NULL;
    if (nul && memcmp(file, HOSTCACHE_MAGIC, magic) == 0)
        e = json_loadb(file + magic, (size_t)(nul - file) - magic, JSON_REJECT_DUPLICATES, &jerr);
    if (!e || !json_is_object(e) || !hostcache_entry_ok(hc, e, len - (size_t)(nul - file) - 1)) {
        if (!e || !json_is_object(e))
            log_info("jail: the host discovery cache %s/%s is corrupt: discovering again", hc->dir,
                     hc->name);
        json_decref(e);
        free(file);
        return;
    }
    hc->file = file;
    hc->entry = e;
    hc->blob = nul + 1;
    hc->blob_len = len - (size_t)(nul - file) - 1;
}

int hostcache_open(const char *dir, const char *fingerprint, struct hostcache **ret)
{
    *ret = NULL;
    _cleanup_sbx_error_ struct sbx_error err = {0};
    int r = trust_make_dir(dir, &err);
    if (r < 0) {
        log_warn("jail: no host discovery cache: %s (a directory of uid %u that nobody else can "
                 "write is needed); discovering the host at every start",
                 err.message ? err.message : strerror(-r), (unsigned)geteuid());
        return r;
    }
    struct hostcache *hc = calloc(1, sizeof(*hc));
    if (!hc)
        return -ENOMEM;
    hc->stage.root = -1;
    hc->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (hc->dirfd < 0) {
        r = log_errno(LOG_WARN, errno, "jail: no host discovery cache: cannot open %s", dir);
        hostcache_free(hc);
        return r;
    }
    /* Our binary is part of the key: another build, or a rebuild, has its own entry. */
    _cleanup_free_ char *exe = realpath("/proc/self/exe", NULL);
    if (!exe || hostcache_identity(exe, hc->exe) < 0)
        snprintf(hc->exe, sizeof(hc->exe), "?");
    if (!(hc->dir = strdup(dir)) ||
        !(hc->fingerprint = fmt_str("%sexe=%s\n", fingerprint, exe ? exe : "?")) ||
        !(hc->name = fmt_str("%016" PRIx64 ".cache",
                             hostcache_fnv_str(hostcache_fnv_str(HOSTCACHE_FNV_INIT, hc->exe),
                                               hc->fingerprint)))) {
        hostcache_free(hc);
        return -ENOMEM;
    }
    hostcache_load(hc);
    *ret = hc;
    return 0;
}

/* ---- using an entry ---------------------------------------------------------------------- */

bool hostcache_fresh(const struct hostcache *hc)
{
    if (!hc || !hc->entry)
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(hc->entry, "watch"), i, v)
    {
        const char *path = json_string_value(json_array_get(v, 0));
        const char *was = json_string_value(json_array_get(v, 1)); /* NULL: was missing */
        char now[HOSTCACHE_ID_MAX];
        int r = hostcache_identity(path, now);
        if (r < 0 && r != -ENOENT)
            return false;
        if ((r == -ENOENT) != !was || (was && strcmp(was, now) != 0)) {
            log_info("jail: %s changed since the host discovery cache was made: discovering "
                     "again",
                     path);
            return false;
        }
    }
    return true;
}

json_t *hostcache_python(const struct hostcache *hc)
{
    return hc && hc->entry ? json_object_get(hc->entry, "python") : NULL;
}

/* Why path may not be replayed: NULL when it is still what was recorded, public, and (for a file
 * copied into the toolbox) a regular file that is neither setuid nor setgid. */
static const char *hostcache_refuse(const char *path, const char *id, bool staged)
{
    char now[HOSTCACHE_ID_MAX];
    bool dir = false;
    if (hostcache_identity(path, now) < 0 || strcmp(now, id) != 0)
        return "changed since the host discovery cache was made";
    if (!hostdeps_is_public(path, &dir))
        return "is not public (a cache file naming it is wrong)";
    struct stat st;
    if (staged &&
        (dir || lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & (S_ISUID | S_ISGID))))
        return "is no plain program file (a cache file naming it is wrong)";
    return NULL;
}

/* Does the host link at path still read target? */
static bool hostcache_link_same(const char *path, const char *target)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof(buf) - 1);
    if (n < 0)
        return false;
    buf[n] = '\0';
    return strcmp(buf, target) == 0;
}

int hostcache_replay(struct hostcache *hc, struct mount_plan *p)
{
    if (!hc || !hc->entry)
        return -ESTALE;
    int64_t start = clock_mono_us();
    char prefix[17];
    hostcache_digest(p, p->n, prefix);
    if (strcmp(prefix, json_string_value(json_object_get(hc->entry, "prefix"))) != 0) {
        log_info("jail: the sandbox's file system changed since the host discovery cache was "
                 "made: discovering again");
        return -ESTALE;
    }
    struct toolbox_stage stage = {.root = -1};
    size_t binds = 0, links = 0, linked = 0;
    int r = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(hc->entry, "ops"), i, v)
    {
        const char *kind = json_string_value(json_array_get(v, 0));
        const char *a = json_string_value(json_array_get(v, 1));
        const char *b = json_string_value(json_array_get(v, 2));
        const char *why = NULL, *what = kind[0] == 'l' ? b : a;
        if (strcmp(kind, "link") == 0) {
            if (!hostcache_link_same(b, a))
                why = "changed since the host discovery cache was made";
            else if ((r = mount_plan_symlink(p, a, b)) == 0)
                links++;
        } else if (kind[0] == 's' && hc->copying) {
            if ((r = toolbox_stage_link(p, a)) == 0)
                linked++; /* copied by the copier, which checks it */
        } else if ((why = hostcache_refuse(a, b, kind[0] == 's'))) {
        } else if (kind[0] == 'b') {
            if ((r = mount_plan_bind_ro(p, a, NULL)) == 0)
                binds++;
        } else if (stage.root < 0 && toolbox_stage_open(&stage) < 0) {
            why = "cannot be copied: no tmpfs for the toolbox";
        } else if (toolbox_stage_place(&stage, p, a) < 0) {
            why = "cannot be copied into the toolbox";
        }
        if (why) {
            log_info("jail: %s %s: discovering again", what, why);
            r = -ESTALE;
        }
        if (r < 0)
            break;
    }
    size_t staged = stage.files + linked;
    if (r == 0)
        r = toolbox_stage_attach(&stage, p);
    toolbox_stage_close(&stage);
    if (r == 0 && linked) {
        /* The copier's stage, still being filled; sealed when it is done (copy_wait). */
        int fd = fcntl(hc->stage.root, F_DUPFD_CLOEXEC, 3);
        r = fd < 0 ? -errno : mount_plan_attach_tree(p, fd, "the toolbox's tmpfs", TOOLBOX_DIR);
    }
    if (r < 0)
        return r == -ENOMEM ? r : -ESTALE;
    log_info("jail: host discovery replayed from %s/%s in %.1f ms: %zu paths bound, %zu "
             "symlinks, %zu files %s the toolbox's tmpfs%s",
             hc->dir, hc->name, (double)(clock_mono_us() - start) / 1000.0, binds, links, staged,
             linked ? "being copied into" : "copied into", linked ? " meanwhile" : "");
    return 0;
}

/* The copier: every file of the toolbox the entry recorded, checked and copied into the
 * stage, while the caller plans the rest. */
static void *hostcache_copier(void *arg)
{
    struct hostcache *hc = arg;
    int r = 0;
    for (size_t i = 0; i < hc->n_copy && r == 0; i++) {
        const char *why = hostcache_refuse(hc->copy_files[i], hc->copy_ids[i], true);
        if (!why && toolbox_stage_copy(&hc->stage, hc->copy_files[i]) < 0)
            why = "cannot be copied into the toolbox";
        if (why) {
            log_info("jail: %s %s: discovering again", hc->copy_files[i], why);
            r = -ESTALE;
        }
    }
    hc->copy_result = r;
    return NULL;
}

int hostcache_copy_start(struct hostcache *hc)
{
    if (!hc || !hc->entry || hc->copying)
        return 0;
    json_t *ops = json_object_get(hc->entry, "ops");
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(ops, i, v) n +=
        strcmp(json_string_value(json_array_get(v, 0)), "stage") == 0;
    if (!n)
        return 0;
    /* The thread gets copies of its strings: it never touches the entry, which is this one's. */
    if (!(hc->copy_files = calloc(n, sizeof(char *))) ||
        !(hc->copy_ids = calloc(n, sizeof(char *))))
        return -ENOMEM;
    json_array_foreach(ops, i, v)
    {
        if (strcmp(json_string_value(json_array_get(v, 0)), "stage") != 0)
            continue;
        hc->copy_files[hc->n_copy] = strdup(json_string_value(json_array_get(v, 1)));
        hc->copy_ids[hc->n_copy] = strdup(json_string_value(json_array_get(v, 2)));
        if (!hc->copy_files[hc->n_copy++] || !hc->copy_ids[hc->n_copy - 1])
            return -ENOMEM;
    }
    if (toolbox_stage_open(&hc->stage) < 0)
        return 0; /* the replay tries again and, failing too, discovers */
    if (pthread_create(&hc->copier, NULL, hostcache_copier, hc) != 0) {
        toolbox_stage_close(&hc->stage);
        return 0; /* the replay copies them itself */
    }
    hc->copying = true;
    return 0;
}

int hostcache_copy_wait(struct hostcache *hc)
{
    if (!hc || !hc->copying)
        return 0;
    (void)pthread_join(hc->copier, NULL); /* only fails for a thread that is not joinable */
    hc->copying = false;
    int r = hc->copy_result;
    if (r == 0 && toolbox_stage_seal(hc->stage.root) < 0)
        r = -ESTALE;
    toolbox_stage_close(&hc->stage); /* the plan holds its own */
    return r;
}

int hostcache_add_bytecode(const struct hostcache *hc, struct mount_plan *p, const char *dir)
{
    if (!hc)
        return 0;
    size_t n = hc->entry ? json_array_size(json_object_get(hc->entry, "pyc")) : hc->n_pyc;
    for (size_t i = 0; i < n; i++) {
        const char *name;
        const char *data;
        size_t len;
        if (hc->entry) {
            json_t *v = json_array_get(json_object_get(hc->entry, "pyc"), i);
            name = json_string_value(json_array_get(v, 0));
            data = hc->blob + json_integer_value(json_array_get(v, 1)); /* checked at load */
            len = (size_t)json_integer_value(json_array_get(v, 2));
        } else {
            name = hc->pyc[i].name;
            data = hc->pyc[i].data;
            len = hc->pyc[i].len;
        }
        _cleanup_free_ char *dst = fmt_str("%s/%s", dir, name);
        if (!dst)
            return -ENOMEM;
        if (mount_plan_has(p, dst))
            continue; /* the runtime brought its own */
        char *copy = malloc(len ? len : 1);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, data, len);
        int r = mount_plan_file_take(p, dst, copy, len, 0644);
        if (r < 0)
            return r;
    }
    return 0;
}
