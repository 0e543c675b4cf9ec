// SPDX-License-Identifier: MIT
/*
 * workspace — see workspace.h. Memory keys are free-form strings (up to 256
 * bytes); on disk they become "<readable part>-<hash>.json" so that two keys
 * can never share a file and no key can name a path.
 */
#include "session/workspace.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/request.h"
#include "util/buf.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/fmt.h"
#include "util/jdump.h"
#include "util/randid.h"

#define WORKSPACE_MAX_KEY 256

struct workspace_store {
    char *dir;
    int root_fd; /* STATE_DIR/workspaces */
    struct workspace_limits lim;
};

static int ws_mkdirs(const char *path)
{
    _cleanup_free_ char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0700) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(copy, 0700) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int workspace_store_new(const char *state_dir, const struct workspace_limits *lim,
                        struct workspace_store **ret)
{
    _cleanup_free_ char *root = NULL;
    if (asprintf(&root, "%s/workspaces", state_dir) < 0)
        return -ENOMEM;
    int r = ws_mkdirs(root);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "workspace: cannot create %s (set --state-dir)", root);
    struct workspace_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    s->dir = strdup(state_dir);
    s->lim = *lim;
    if (s->root_fd < 0 || !s->dir) {
        r = s->root_fd < 0 ? log_errno(LOG_ERROR, errno, "workspace: cannot open %s", root)
                           : -ENOMEM;
        workspace_store_free(s);
        return r;
    }
    *ret = s;
    return 0;
}

void workspace_store_free(struct workspace_store *s)
{
    if (!s)
        return;
    if (s->root_fd >= 0)
        close(s->root_fd);
    free(s->dir);
    free(s);
}

const char *workspace_store_dir(const struct workspace_store *s)
{
    return s->dir;
}

static bool ws_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

const char *workspace_check_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64)
        return "must be 1-64 characters";
    if (name[0] == '.')
        return "must not start with '.'";
    for (size_t i = 0; i < n; i++)
        if (!ws_name_char(name[i]))
            return "may only contain letters, digits, '.', '_' and '-'";
    return NULL;
}

/* The directory fd of ws/sub, created on demand. */
static int ws_dir(struct workspace_store *s, const char *ws, const char *sub)
{
    if (workspace_check_name(ws))
        return -EINVAL;
    if (mkdirat(s->root_fd, ws, 0700) < 0 && errno != EEXIST)
        return -errno;
    _cleanup_close_ int wfd = openat(s->root_fd, ws, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (wfd < 0)
        return -errno;
    if (mkdirat(wfd, sub, 0700) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(wfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Atomic replace of dirfd/name with data. */
static int ws_write(int dirfd, const char *name, const void *data, size_t len)
{
    char tmp[32] = ".tmp-";
    int r = randid_hex(tmp + 5, sizeof(tmp) - 5, 8);
    if (r < 0)
        return r;
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    r = fd_write_all(fd, data, len, 0);
    if (r == 0 && fdatasync(fd) < 0)
        r = -errno;
    close(fd);
    if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
        r = -errno;
    if (r < 0)
        (void)unlinkat(dirfd, tmp, 0); /* best effort: the write already failed */
    return r;
}

/* Total size of the regular files in the workspace's memory, tools and files. */
static size_t ws_usage(struct workspace_store *s, const char *ws)
{
    size_t total = 0;
    static const char *const subs[] = {"memory", "tools", "files"};
    for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
        int fd = ws_dir(s, ws, subs[i]);
        if (fd < 0)
            continue;
        DIR *d = fdopendir(fd);
        if (!d) {
            close(fd);
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            struct stat st;
            if (e->d_name[0] != '.' &&
                fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                total += (size_t)st.st_size;
        }
        closedir(d);
    }
    return total;
}

static size_t ws_count(int dirfd_, const char *suffix)
{
    int fd = dup(dirfd_);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    size_t n = 0, sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] != '.' && l > sl && strcmp(e->d_name + l - sl, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static char *ws_now(void)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char *out = malloc(32);
    if (out)
        strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

/* "<up to 40 safe chars>-<16 hex of BLAKE2b(key)>.json" */
static int ws_key_file(const char *key, char out[96])
{
    unsigned char h[8];
    crypto_generichash(h, sizeof(h), (const unsigned char *)key, strlen(key), NULL, 0);
    size_t k = 0;
    for (const char *p = key; *p && k < 40; p++)
        out[k++] = ws_name_char(*p) && *p != '.' ? *p : '_';
    out[k++] = '-';
    sodium_bin2hex(out + k, 17, h, sizeof(h));
    strcpy(out + k + 16, ".json");
    return 0;
}

static int ws_read_json(int dirfd_, const char *name, size_t max, json_t **ret)
{
    char *data = NULL;
    size_t len = 0;
    int r = fd_read_file_flags(dirfd_, name, O_NOFOLLOW, max, &data, &len);
    if (r < 0)
        return r;
    json_error_t err;
    *ret = json_loadb(data, len, JSON_ALLOW_NUL, &err); /* what jdump wrote, \u0000 included */
    free(data);
    return *ret ? 0 : -EBADMSG;
}

int workspace_memory(struct workspace_store *s, const char *ws, json_t *req, json_t **ret_payload,
                     char **ret_error)
{
    *ret_payload = NULL;
    *ret_error = NULL;
    const char *op = json_string_value(json_object_get(req, "op"));
    if (!op)
        return fmt_error(ret_error, EINVAL, "memory: no operation");
    _cleanup_close_ int dfd = ws_dir(s, ws, "memory");
    if (dfd < 0)
        return fmt_error(ret_error, -dfd, "memory: workspace unavailable: %s", strerror(-dfd));
    if (strcmp(op, "list") == 0) {
        json_t *list = json_array();
        int fd = dup(dfd);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;
        while (d && (e = readdir(d))) {
            size_t l = strlen(e->d_name);
            if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
                continue;
            json_t *doc = NULL;
            if (ws_read_json(dfd, e->d_name, s->lim.max_value * 2 + 65536, &doc) == 0)
                json_array_append_new(
                    list, json_pack("{s:O?, s:O?, s:O?, s:O?}", "key", json_object_get(doc, "key"),
                                    "metadata", json_object_get(doc, "metadata"), "createdAt",
                                    json_object_get(doc, "createdAt"), "updatedAt",
                                    json_object_get(doc, "updatedAt")));
            json_decref(doc);
        }
        if (d)
            closedir(d);
        else if (fd >= 0)
            close(fd);
        *ret_payload = json_pack("{s:o}", "memories", list);
        return 0;
    }
    const char *key = json_string_value(json_object_get(req, "key"));
    if (!key || !*key || strlen(key) > WORKSPACE_MAX_KEY)
        return fmt_error(ret_error, EINVAL, "memory: the key must be a string of 1-%d bytes",
                         WORKSPACE_MAX_KEY);
    char file[96];
    ws_key_file(key, file);
    if (strcmp(op, "save") == 0) {
        json_t *value = json_object_get(req, "value");
        json_t *meta = json_object_get(req, "metadata");
        struct buf vb; /* only its size is needed: the cap stops a large value early */
        buf_init(&vb, s->lim.max_value);
        int vr = value ? jdump_buf(value, JSON_COMPACT, &vb) : 0;
        size_t vlen = value ? vb.len : 4;
        buf_free(&vb);
        if (vr == -E2BIG || vlen > s->lim.max_value)
            return fmt_error(ret_error, EFBIG, "memory: the value of %s is over %zu bytes", key,
                             s->lim.max_value);
        if (vr < 0)
            return fmt_error(ret_error, ENOMEM, "memory: out of memory");
        json_t *old = NULL;
        bool exists = ws_read_json(dfd, file, s->lim.max_value * 2 + 65536, &old) == 0;
        if (!exists && ws_count(dfd, ".json") >= s->lim.max_entries) {
            json_decref(old);
            return fmt_error(ret_error, ENOSPC, "memory: the workspace holds %zu memories (limit)",
                             s->lim.max_entries);
        }
        if (ws_usage(s, ws) + vlen > s->lim.max_bytes) {
            json_decref(old);
            return fmt_error(ret_error, ENOSPC, "memory: the workspace is full (%zu bytes)",
                             s->lim.max_bytes);
        }
        _cleanup_free_ char *now = ws_now();
        json_t *created = old ? json_object_get(old, "createdAt") : NULL;
        if (!meta || json_is_null(meta))
            meta = old ? json_object_get(old, "metadata") : NULL; /* kept unless replaced */
        json_t *doc =
            json_pack("{s:s, s:O, s:o, s:o, s:s}", "key", key, "value", value ? value : json_null(),
                      "metadata", meta && json_is_object(meta) ? json_incref(meta) : json_object(),
                      "createdAt", created ? json_incref(created) : json_string(now ? now : ""),
                      "updatedAt", now ? now : "");
        json_decref(old);
        char *text = doc ? jdump(doc, JSON_INDENT(2), NULL) : NULL;
        json_decref(doc);
        if (!text)
            return fmt_error(ret_error, ENOMEM, "memory: out of memory");
        int r = ws_write(dfd, file, text, strlen(text));
        free(text);
        if (r < 0)
            return fmt_error(ret_error, -r, "memory: cannot save %s: %s", key, strerror(-r));
        *ret_payload = json_pack("{s:b}", "saved", 1);
        return 0;
    }
    json_t *doc = NULL;
    int r = ws_read_json(dfd, file, s->lim.max_value * 2 + 65536, &doc);
    bool found = r == 0 && json_is_object(doc);
    if (strcmp(op, "load") == 0) {
        *ret_payload = json_pack("{s:b, s:O?}", "found", found, "value",
                                 found ? json_object_get(doc, "value") : NULL);
    } else if (strcmp(op, "info") == 0) {
        json_t *info = NULL;
        if (found) {
            info = json_deep_copy(doc);
            json_object_del(info, "value");
        }
        *ret_payload = json_pack("{s:b, s:o?}", "found", found, "info", info);
    } else if (strcmp(op, "delete") == 0) {
        bool deleted = found && unlinkat(dfd, file, 0) == 0;
        *ret_payload = json_pack("{s:b}", "deleted", deleted);
    } else {
        json_decref(doc);
        return fmt_error(ret_error, EINVAL, "memory: unknown operation '%s'", op);
    }
    json_decref(doc);
    return 0;
}

int workspace_save_tool(struct workspace_store *s, const char *ws, const char *name,
                        const char *source, char **ret_error)
{
    *ret_error = NULL;
    if (!request_is_identifier(name))
        return fmt_error(ret_error, EINVAL, "save_tool: '%s' is not a Python identifier", name);
    size_t len = strlen(source);
    if (len > 256 * 1024)
        return fmt_error(ret_error, EFBIG, "save_tool: the source of %s is too large", name);
    _cleanup_close_ int dfd = ws_dir(s, ws, "tools");
    if (dfd < 0)
        return fmt_error(ret_error, -dfd, "save_tool: workspace unavailable");
    char file[300];
    snprintf(file, sizeof(file), "%s.py", name);
    if (faccessat(dfd, file, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
        ws_count(dfd, ".py") >= s->lim.max_entries)
        return fmt_error(ret_error, ENOSPC, "save_tool: too many saved tools");
    if (ws_usage(s, ws) + len > s->lim.max_bytes)
        return fmt_error(ret_error, ENOSPC, "save_tool: the workspace is full");
    int r = ws_write(dfd, file, source, len);
    return r < 0 ? fmt_error(ret_error, -r, "save_tool: %s", strerror(-r)) : 0;
}

static int ws_cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

json_t *workspace_tools(struct workspace_store *s, const char *ws)
{
    json_t *out = json_array();
    _cleanup_close_ int dfd = ws_dir(s, ws, "tools");
    if (dfd < 0)
        return out;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return out;
    }
    char *names[4096];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < ARRAY_SIZE(names)) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] != '.' && l > 3 && strcmp(e->d_name + l - 3, ".py") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(char *), ws_cmp_name);
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        _cleanup_close_ int tfd = openat(dfd, names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct buf b;
        buf_init(&b, 256 * 1024);
        char chunk[16384];
        ssize_t r;
        while (tfd >= 0 && (r = read(tfd, chunk, sizeof(chunk))) > 0)
            if (buf_append(&b, chunk, (size_t)r) < 0)
                break;
        names[i][strlen(names[i]) - 3] = '\0';
        if (tfd >= 0 && b.data)
            json_array_append_new(out, json_pack("{s:s, s:s}", "name", names[i], "source", b.data));
        buf_free(&b);
        free(names[i]);
    }
    return out;
}

static const char *ws_check_file_name(const char *name)
{
    const char *why = workspace_check_name(name);
    return why ? why : (strlen(name) > 128 ? "is too long" : NULL);
}

int workspace_save_file(struct workspace_store *s, const char *ws, const char *name,
                        const void *data, size_t len, json_t **ret_payload, char **ret_error)
{
    *ret_payload = NULL;
    *ret_error = NULL;
    const char *why = ws_check_file_name(name);
    if (why)
        return fmt_error(ret_error, EINVAL, "save_file: the name %s", why);
    if (len > s->lim.max_file)
        return fmt_error(ret_error, EFBIG, "save_file: %zu bytes is over the limit of %zu", len,
                         s->lim.max_file);
    _cleanup_close_ int dfd = ws_dir(s, ws, "files");
    if (dfd < 0)
        return fmt_error(ret_error, -dfd, "save_file: workspace unavailable");
    if (faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
        ws_count(dfd, "") >= s->lim.max_entries)
        return fmt_error(ret_error, ENOSPC, "save_file: too many files");
    if (ws_usage(s, ws) + len > s->lim.max_bytes)
        return fmt_error(ret_error, ENOSPC, "save_file: the workspace is full");
    int r = ws_write(dfd, name, data, len);
    if (r < 0)
        return fmt_error(ret_error, -r, "save_file: %s", strerror(-r));
    *ret_payload = json_pack("{s:s, s:I}", "path", name, "size", (json_int_t)len);
    return 0;
}

json_t *workspace_files(struct workspace_store *s, const char *ws)
{
    json_t *out = json_array();
    _cleanup_close_ int dfd = ws_dir(s, ws, "files");
    int fd = dfd >= 0 ? dup(dfd) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return out;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode))
            continue;
        struct tm tm;
        char when[32];
        gmtime_r(&st.st_mtime, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_array_append_new(out, json_pack("{s:s, s:I, s:s}", "name", e->d_name, "size",
                                             (json_int_t)st.st_size, "modifiedAt", when));
    }
    closedir(d);
    return out;
}
