// SPDX-License-Identifier: MIT
/*
 * workspace — see workspace.h: the store, open workspaces and their index,
 * the quota, saved tools and files. Memories are in wsmemory.c.
 */
#include "session/workspace.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/request.h"
#include "app/tenant.h"
#include "session/workspace_int.h"
#include "util/buf.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/path.h"
#include "util/randid.h"
#include "util/trust.h"

static const char *const ws_kind_dir[WS_KINDS] = {"memory", "tools", "files", "runs"};

struct workspace_store {
    char *dir;
    int state_fd; /* STATE_DIR */
    int root_fd;  /* STATE_DIR/workspaces: the operator's workspaces */
    struct workspace_limits lim;
    pthread_mutex_t lock; /* open, accounts */
    struct workspace *open;
    struct ws_account *accounts; /* by tenant, made on first use (wsshare.c) */
};

int workspace_store_new(const char *state_dir, const struct workspace_limits *lim,
                        struct workspace_store **ret)
{
    _cleanup_free_ char *root = NULL;
    if (asprintf(&root, "%s/workspaces", state_dir) < 0)
        return -ENOMEM;
    _cleanup_sbx_error_ struct sbx_error why = {0};
    int r = trust_make_dir(root, &why);
    if (r < 0)
        return log_errno(LOG_ERROR, r, "workspace: %s (set --state-dir)",
                         why.message ? why.message : "cannot create the store");
    struct workspace_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    pthread_mutex_init(&s->lock, NULL);
    s->state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    s->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    /* Absolute: the file:// URLs of kept files are made of it (workspace_keep_file). */
    s->dir = realpath(state_dir, NULL);
    s->lim = *lim;
    if (s->state_fd < 0 || s->root_fd < 0 || !s->dir) {
        r = s->state_fd < 0 || s->root_fd < 0
                ? log_errno(LOG_ERROR, errno, "workspace: cannot open %s", root)
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
    if (s->open)
        log_warn("workspace: %u workspaces still open at exit", HASH_COUNT(s->open));
    ws_account_free_all(&s->accounts);
    if (s->root_fd >= 0)
        close(s->root_fd);
    if (s->state_fd >= 0)
        close(s->state_fd);
    pthread_mutex_destroy(&s->lock);
    free(s->dir);
    free(s);
}

const struct workspace_limits *ws_limits(const struct workspace *w)
{
    return &w->store->lim;
}

const char *ws_kind_name(enum ws_kind k)
{
    return ws_kind_dir[k];
}

struct workspace_share workspace_share_of(const struct tenant *t)
{
    return (struct workspace_share){.max_bytes = (size_t)tenant_quota_mb(t) << 20,
                                    .max_workspaces = tenant_max_workspaces(t)};
}

size_t workspace_max_workspaces(const struct workspace_store *s,
                                const struct workspace_share *share)
{
    return share && share->max_workspaces ? share->max_workspaces : s->lim.tenant_workspaces;
}

const char *workspace_check_name(const char *name)
{
    return path_check_name(name);
}

char *workspace_key(const char *tenant, const char *name)
{
    return tenant ? fmt_str("%s/%s", tenant, name) : strdup(name);
}

const char *workspace_key_name(const char *key)
{
    const char *slash = strchr(key, '/');
    return slash ? slash + 1 : key;
}

/* key is "name" or "tenant/name", each part a valid name: -EINVAL when not. */
static int ws_check_key(const char *key, char ret_tenant[WORKSPACE_MAX_KEY_LEN + 1])
{
    const char *slash = strchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : 0;
    if (n > WORKSPACE_MAX_KEY_LEN)
        return -EINVAL;
    memcpy(ret_tenant, key, n);
    ret_tenant[n] = '\0';
    if (slash && workspace_check_name(ret_tenant))
        return -EINVAL;
    return workspace_check_name(workspace_key_name(key)) ? -EINVAL : 0;
}

/* ---- opening ------------------------------------------------------------------------------ */

static void ws_entry_free(struct ws_entry *e)
{
    if (!e)
        return;
    free(e->file);
    json_decref(e->info);
    free(e);
}

static void ws_forget_index(struct workspace *w)
{
    for (int k = 0; k < WS_KINDS; k++) {
        struct ws_entry *e, *tmp;
        HASH_ITER(hh, w->entries[k], e, tmp)
        {
            HASH_DEL(w->entries[k], e);
            ws_entry_free(e);
        }
        w->count[k] = 0;
    }
    w->bytes = 0;
    w->indexed = false;
}

static void ws_free(struct workspace *w)
{
    ws_forget_index(w);
    for (int k = 0; k < WS_KINDS; k++)
        if (w->dirfd[k] >= 0)
            close(w->dirfd[k]);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* The directory dirfd/name (O_PATH, a new fd), created first when create is set. */
static int ws_subdir(int dirfd_, const char *name, bool create)
{
    if (create && mkdirat(dirfd_, name, 0700) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(dirfd_, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* The directory holding the workspaces of tenant ("": the operator's), a new fd: a tenant's
 * are under STATE_DIR/tenants/<tenant>/workspaces, so no name can reach another's. */
static int ws_parent(struct workspace_store *s, const char *tenant, bool create)
{
    if (!*tenant) {
        int fd = fcntl(s->root_fd, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
    }
    _cleanup_close_ int all = ws_subdir(s->state_fd, "tenants", create);
    if (all < 0)
        return all;
    _cleanup_close_ int mine = ws_subdir(all, tenant, create);
    return mine < 0 ? mine : ws_subdir(mine, "workspaces", create);
}

static int ws_opendirs(struct workspace *w, int parent, bool create)
{
    _cleanup_close_ int wfd = ws_subdir(parent, workspace_key_name(w->key), create);
    if (wfd < 0)
        return wfd;
    for (int k = 0; k < WS_KINDS; k++) {
        if (mkdirat(wfd, ws_kind_dir[k], 0700) < 0 && errno != EEXIST)
            return -errno;
        w->dirfd[k] = openat(wfd, ws_kind_dir[k], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (w->dirfd[k] < 0)
            return -errno;
    }
    return 0;
}

/* Open w's directories below the directory of its tenant (lock held), and for a tenant's
 * workspace its part of the tenant's account: a workspace the tenant does not have yet is
 * made only within its maxWorkspaces. */
static int ws_open_locked(struct workspace_store *s, struct workspace *w, const char *tenant,
                          const struct workspace_share *share, bool create)
{
    _cleanup_close_ int parent = ws_parent(s, tenant, create);
    if (parent < 0)
        return parent;
    if (!*tenant)
        return ws_opendirs(w, parent, create);
    int r = ws_account_get(&s->accounts, tenant, parent, &s->lim, share, &w->account);
    if (r < 0)
        return r;
    const char *name = workspace_key_name(w->key);
    r = ws_account_space(w->account, name, create, &w->space);
    if (r == -EDQUOT)
        return r;
    bool counted = r == 0;
    r = ws_opendirs(w, parent, create);
    if (r == 0 && !counted) /* made now, or by someone else since the account was counted */
        r = ws_account_add(w->account, name, &w->space);
    return r;
}

int workspace_open(struct workspace_store *s, const char *key, const struct workspace_share *share,
                   bool create, struct workspace **ret)
{
    char tenant[WORKSPACE_MAX_KEY_LEN + 1];
    if (ws_check_key(key, tenant) < 0)
        return -EINVAL;
    pthread_mutex_lock(&s->lock);
    struct workspace *w = NULL;
    HASH_FIND_STR(s->open, key, w);
    if (w) {
        w->refs++;
        pthread_mutex_unlock(&s->lock);
        *ret = w;
        return 0;
    }
    int r = -ENOMEM;
    w = calloc(1, sizeof(*w));
    if (w) {
        w->store = s;
        w->refs = 1;
        snprintf(w->key, sizeof(w->key), "%s", key);
        for (int k = 0; k < WS_KINDS; k++)
            w->dirfd[k] = -1;
        pthread_mutex_init(&w->lock, NULL);
        r = ws_open_locked(s, w, tenant, share, create);
    }
    if (r < 0) {
        pthread_mutex_unlock(&s->lock);
        if (w)
            ws_free(w);
        return r;
    }
    HASH_ADD_STR(s->open, key, w);
    pthread_mutex_unlock(&s->lock);
    *ret = w;
    return 0;
}

void workspace_close(struct workspace *w)
{
    if (!w)
        return;
    struct workspace_store *s = w->store;
    pthread_mutex_lock(&s->lock);
    bool last = --w->refs == 0;
    if (last)
        HASH_DEL(s->open, w);
    pthread_mutex_unlock(&s->lock);
    /* The index goes with the last user: a workspace nobody uses costs no memory. */
    if (last)
        ws_free(w);
}

const char *workspace_name(const struct workspace *w)
{
    return workspace_key_name(w->key);
}

/* ---- the index ---------------------------------------------------------------------------- */

static const char *ws_kind_suffix(enum ws_kind k)
{
    return k == WS_MEMORY ? ".json" : k == WS_TOOLS ? ".py" : "";
}

static bool ws_has_suffix(const char *name, const char *suffix)
{
    size_t l = strlen(name), sl = strlen(suffix);
    return l > sl && strcmp(name + l - sl, suffix) == 0;
}

DIR *ws_opendir(int dirfd)
{
    /* A file description of its own: reading it moves no offset another reader shares. */
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return d;
}

int ws_scan(int dirfd, enum ws_kind k, size_t cap, ws_scan_fn fn, void *userdata)
{
    DIR *d = ws_opendir(dirfd);
    if (!d)
        return -errno;
    int r = 0;
    size_t n = 0;
    struct dirent *e;
    /* A directory filled behind our back is read only so far. */
    while (r == 0 && n < cap && (e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.' || !ws_has_suffix(e->d_name, ws_kind_suffix(k)) ||
            fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        r = fn(userdata, e->d_name, &st);
        n++;
    }
    closedir(d);
    return r;
}

struct ws_index_scan {
    struct workspace *w;
    enum ws_kind k;
};

static int ws_index_entry(void *userdata, const char *name, const struct stat *st)
{
    struct ws_index_scan *x = userdata;
    struct ws_entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->file = strdup(name))) {
        free(e);
        return -ENOMEM;
    }
    e->size = (size_t)st->st_size;
    e->modified = st->st_mtime;
    HASH_ADD_KEYPTR(hh, x->w->entries[x->k], e->file, strlen(e->file), e);
    x->w->count[x->k]++;
    x->w->bytes += e->size;
    return 0;
}

int ws_index(struct workspace *w)
{
    if (w->indexed)
        return 0;
    const struct workspace_limits *lim = ws_limits(w);
    for (int k = 0; k < WS_KINDS; k++) {
        struct ws_index_scan x = {.w = w, .k = k};
        int r = ws_scan(w->dirfd[k], k, 2 * lim->max_entries, ws_index_entry, &x);
        if (r < 0) {
            ws_forget_index(w);
            return r;
        }
    }
    w->indexed = true;
    /* What is on disk now is what the tenant's account has for this workspace. */
    ws_account_recount(w->account, w->space, w->bytes);
    return 0;
}

struct ws_entry *ws_find(struct workspace *w, enum ws_kind k, const char *file)
{
    struct ws_entry *e = NULL;
    HASH_FIND_STR(w->entries[k], file, e);
    return e;
}

/* Atomic replace of dirfd/name with data; durable (fdatasync before the rename) when sync. */
static int ws_write(int dirfd, const char *name, const void *data, size_t len, bool sync)
{
    char tmp[32] = ".tmp-";
    int r = randid_hex(tmp + 5, sizeof(tmp) - 5, 8);
    if (r < 0)
        return r;
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    r = fd_write_all(fd, data, len, 0);
    if (r == 0 && sync && fdatasync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno; /* a full disk may only show here (NFS, some FUSE) */
    if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
        r = -errno;
    if (r < 0)
        (void)unlinkat(dirfd, tmp, 0); /* best effort: the write already failed */
    return r;
}

int ws_store(struct workspace *w, enum ws_kind k, const char *file, const void *data, size_t len,
             const char *what, struct ws_entry **ret_entry, char **ret_error)
{
    const struct workspace_limits *lim = ws_limits(w);
    struct ws_entry *e = ws_find(w, k, file);
    if (!e && w->count[k] >= lim->max_entries)
        return fmt_error(ret_error, EDQUOT, "%s: the workspace holds %zu %s, the limit", what,
                         w->count[k], ws_kind_dir[k]);
    size_t old = e ? e->size : 0, after = w->bytes - old + len;
    if (after > lim->max_bytes)
        return fmt_error(ret_error, EDQUOT,
                         "%s: the workspace is full (%zu of %zu bytes used; this needs %zu)", what,
                         w->bytes, lim->max_bytes, len);
    /* The tenant's share is charged first: the charge is the check (wsshare.c). */
    size_t grows = len > old ? len - old : 0;
    int r = ws_account_reserve(w->account, w->space, grows, what, ret_error);
    if (r < 0)
        return r;
    struct ws_entry *fresh = NULL;
    if (!e && (!(fresh = calloc(1, sizeof(*fresh))) || !(fresh->file = strdup(file)))) {
        free(fresh);
        ws_account_refund(w->account, w->space, grows);
        return fmt_error(ret_error, ENOMEM, "%s: out of memory", what);
    }
    /* The copies of execution folders are not worth a disk flush each (one or two per run of
     * --compat code-execution-mode): a crash of the machine may lose the last ones. */
    r = ws_write(w->dirfd[k], file, data, len, k != WS_RUNS);
    if (r < 0) {
        ws_entry_free(fresh);
        ws_account_refund(w->account, w->space, grows);
        return fmt_error(ret_error, -r, "%s: %s", what, strerror(-r));
    }
    ws_account_refund(w->account, w->space, old > len ? old - len : 0);
    if (fresh) {
        e = fresh;
        HASH_ADD_KEYPTR(hh, w->entries[k], e->file, strlen(e->file), e);
        w->count[k]++;
    }
    w->bytes = after;
    e->size = len;
    e->modified = time(NULL);
    json_decref(e->info);
    e->info = NULL;
    *ret_entry = e;
    return 0;
}

int ws_remove(struct workspace *w, enum ws_kind k, const char *file)
{
    struct ws_entry *e = ws_find(w, k, file);
    if (!e)
        return -ENOENT;
    if (unlinkat(w->dirfd[k], file, 0) < 0 && errno != ENOENT)
        return -errno;
    HASH_DEL(w->entries[k], e);
    w->count[k]--;
    w->bytes -= e->size;
    ws_account_refund(w->account, w->space, e->size);
    ws_entry_free(e);
    return 0;
}

/* ws_store() under the lock, the index built first. */
static int ws_save(struct workspace *w, enum ws_kind k, const char *file, const void *data,
                   size_t len, const char *what, char **ret_error)
{
    struct ws_entry *e;
    pthread_mutex_lock(&w->lock);
    int r = ws_index(w);
    if (r < 0)
        r = fmt_error(ret_error, -r, "%s: workspace unavailable: %s", what, strerror(-r));
    else
        r = ws_store(w, k, file, data, len, what, &e, ret_error);
    pthread_mutex_unlock(&w->lock);
    return r;
}

int ws_delete(struct workspace *w, enum ws_kind k, const char *file)
{
    pthread_mutex_lock(&w->lock);
    int r = ws_index(w);
    if (r == 0)
        r = ws_remove(w, k, file);
    pthread_mutex_unlock(&w->lock);
    return r;
}

void ws_timestamp(time_t t, char out[32])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *workspace_usage(struct workspace *w)
{
    pthread_mutex_lock(&w->lock);
    json_t *o =
        ws_index(w) < 0
            ? json_object()
            : json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "bytes", (json_int_t)w->bytes, "maxBytes",
                        (json_int_t)ws_limits(w)->max_bytes, "memories",
                        (json_int_t)w->count[WS_MEMORY], "tools", (json_int_t)w->count[WS_TOOLS],
                        "files", (json_int_t)w->count[WS_FILES], "runFiles",
                        (json_int_t)w->count[WS_RUNS]);
    if (o && w->account)
        json_object_set_new(o, "tenant", ws_account_usage(w->account));
    pthread_mutex_unlock(&w->lock);
    return o;
}

/* ---- saved tools -------------------------------------------------------------------------- */

/* Names a saved tool may not take: the session's own (they would replace what every client of
 * the workspace calls). Python's builtins are refused by the runtime, which knows them. */
static const char *ws_tool_name_problem(const char *name)
{
    static const char *const reserved[] = {"save_memory",
                                           "load_memory",
                                           "delete_memory",
                                           "list_memories",
                                           "update_memory",
                                           "memory_exists",
                                           "get_memory_info",
                                           "save_tool",
                                           "save_file",
                                           "list_execution_files",
                                           "list_tools",
                                           "search_tool_docs",
                                           "query_tool_docs",
                                           "list_servers",
                                           "describe_server",
                                           "capability_summary",
                                           "MCPError",
                                           "mcp",
                                           "mcp_servers",
                                           "LOADED_MCP_SERVERS",
                                           "ApprovalDenied",
                                           "NOT_SENT",
                                           "help"};
    if (!request_is_identifier(name) || strlen(name) > WORKSPACE_MAX_NAME)
        return "is not a Python identifier of at most 128 characters";
    if (strncmp(name, "mcp_", 4) == 0 || strncmp(name, "__", 2) == 0)
        return "is reserved (mcp_* and __* belong to the session)";
    for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
        if (strcmp(name, reserved[i]) == 0)
            return "is one of the session's own names";
    return NULL;
}

/* The first line that is not blank or a comment starts a function definition. */
static bool ws_tool_looks_like_def(const char *src)
{
    const char *p = src;
    for (;;) {
        p += strspn(p, " \t\r\n\f");
        if (*p != '#')
            break;
        p += strcspn(p, "\n");
    }
    return strncmp(p, "def ", 4) == 0 || strncmp(p, "async def ", 10) == 0;
}

int workspace_save_tool(struct workspace *w, const char *name, const char *source, char **ret_error)
{
    *ret_error = NULL;
    const char *why = ws_tool_name_problem(name);
    if (why)
        return fmt_error(ret_error, EINVAL, "save_tool: '%.128s' %s", name, why);
    size_t len = strlen(source);
    if (len > WORKSPACE_MAX_TOOL)
        return fmt_error(ret_error, EFBIG, "save_tool: the source of %s is %zu bytes (limit %u)",
                         name, len, WORKSPACE_MAX_TOOL);
    if (!ws_tool_looks_like_def(source))
        return fmt_error(ret_error, EINVAL,
                         "save_tool: a saved tool is one function definition (def or async def, "
                         "no decorator)");
    char file[WORKSPACE_MAX_NAME + 8];
    snprintf(file, sizeof(file), "%s.py", name);
    return ws_save(w, WS_TOOLS, file, source, len, "save_tool", ret_error);
}

static int ws_cmp_file(const struct ws_entry *a, const struct ws_entry *b)
{
    return strcmp(a->file, b->file);
}

int workspace_tools(struct workspace *w, json_t **ret_tools, char **ret_error)
{
    *ret_tools = NULL;
    *ret_error = NULL;
    json_t *out = json_array();
    pthread_mutex_lock(&w->lock);
    int r = ws_index(w);
    if (r < 0) {
        pthread_mutex_unlock(&w->lock);
        json_decref(out);
        return fmt_error(ret_error, -r, "tools: workspace unavailable: %s", strerror(-r));
    }
    HASH_SORT(w->entries[WS_TOOLS], ws_cmp_file);
    for (struct ws_entry *e = w->entries[WS_TOOLS]; e && out; e = e->hh.next) {
        char *src = NULL;
        size_t len = 0;
        if (fd_read_file_flags(w->dirfd[WS_TOOLS], e->file, O_NOFOLLOW, WORKSPACE_MAX_TOOL, &src,
                               &len) < 0)
            continue; /* removed or replaced behind our back: not a tool now */
        char when[32];
        ws_timestamp(e->modified, when);
        json_t *t = json_pack("{s:s%, s:s%, s:I, s:s}", "name", e->file, strlen(e->file) - 3,
                              "source", src, len, "size", (json_int_t)len, "modifiedAt", when);
        free(src);
        if (t)
            json_array_append_new(out, t);
    }
    pthread_mutex_unlock(&w->lock);
    *ret_tools = out;
    return out ? 0 : -ENOMEM;
}

int workspace_delete_tool(struct workspace *w, const char *name)
{
    if (!request_is_identifier(name) || strlen(name) > WORKSPACE_MAX_NAME)
        return -ENOENT;
    char file[WORKSPACE_MAX_NAME + 8];
    snprintf(file, sizeof(file), "%s.py", name);
    return ws_delete(w, WS_TOOLS, file);
}

/* ---- files -------------------------------------------------------------------------------- */

int workspace_save_file(struct workspace *w, const char *name, const void *data, size_t len,
                        json_t **ret_payload, char **ret_error)
{
    *ret_payload = NULL;
    *ret_error = NULL;
    const char *why = workspace_check_name(name);
    if (!why && strlen(name) > WORKSPACE_MAX_NAME)
        why = "is too long";
    if (why)
        return fmt_error(ret_error, EINVAL, "save_file: the name %s", why);
    if (len > ws_limits(w)->max_file)
        return fmt_error(ret_error, EFBIG, "save_file: %zu bytes is over the limit of %zu", len,
                         ws_limits(w)->max_file);
    int r = ws_save(w, WS_FILES, name, data, len, "save_file", ret_error);
    if (r == 0)
        *ret_payload = json_pack("{s:s, s:I}", "path", name, "size", (json_int_t)len);
    return r;
}

/* ---- files of sessions' execution folders ------------------------------------------------ */

int workspace_keep_file(struct workspace *w, const char *session, const char *path,
                        const void *data, size_t len, json_t **ret_payload, char **ret_error)
{
    *ret_payload = NULL;
    *ret_error = NULL;
    /* "<session>_<path with '/' as '_'>": one directory, names of [A-Za-z0-9._-] only, so that
     * nothing the sandbox sends can name another place. */
    char name[WORKSPACE_MAX_RUN_NAME + 1];
    int n = snprintf(name, sizeof(name), "%s_%s", session, path);
    const char *why = n <= 0 || (size_t)n >= sizeof(name) ? "is too long" : NULL;
    for (char *p = name; !why && *p; p++) {
        if (*p == '/')
            *p = '_';
        else if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            why = "may only contain letters, digits, '.', '_', '-' and '/'";
    }
    if (!why && (name[0] == '.' || strstr(path, "..")))
        why = "may not start with '.' nor hold \"..\"";
    if (why)
        return fmt_error(ret_error, EINVAL, "keep_file: the path %s", why);
    if (len > ws_limits(w)->max_file)
        return fmt_error(ret_error, EFBIG, "keep_file: %zu bytes is over the limit of %zu", len,
                         ws_limits(w)->max_file);
    int r = ws_save(w, WS_RUNS, name, data, len, "keep_file", ret_error);
    if (r < 0)
        return r;
    struct workspace_store *s = w->store;
    char tenant[WORKSPACE_MAX_KEY_LEN + 1];
    bool own = ws_check_key(w->key, tenant) == 0 && tenant[0];
    char *host =
        fmt_str("%s/%s%s%sworkspaces/%s/%s/%s", s->dir, own ? "tenants/" : "", own ? tenant : "",
                own ? "/" : "", workspace_key_name(w->key), ws_kind_dir[WS_RUNS], name);
    *ret_payload =
        host ? json_pack("{s:s, s:I, s:s}", "name", name, "size", (json_int_t)len, "hostPath", host)
             : NULL;
    free(host);
    return *ret_payload ? 0 : fmt_error(ret_error, ENOMEM, "keep_file: out of memory");
}

int workspace_files(struct workspace *w, json_t **ret_payload, char **ret_error)
{
    *ret_payload = NULL;
    *ret_error = NULL;
    json_t *list = json_array();
    pthread_mutex_lock(&w->lock);
    int r = ws_index(w);
    if (r == 0) {
        HASH_SORT(w->entries[WS_FILES], ws_cmp_file);
        for (struct ws_entry *e = w->entries[WS_FILES]; e && r == 0; e = e->hh.next) {
            char when[32];
            ws_timestamp(e->modified, when);
            if (json_array_append_new(list, json_pack("{s:s, s:I, s:s}", "name", e->file, "size",
                                                      (json_int_t)e->size, "modifiedAt", when)) < 0)
                r = -ENOMEM; /* not a listing that leaves a file out */
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (r < 0) {
        json_decref(list);
        return fmt_error(ret_error, -r, "files: workspace unavailable: %s", strerror(-r));
    }
    *ret_payload = json_pack("{s:o}", "files", list);
    return 0;
}
