// SPDX-License-Identifier: MIT
/*
 * files — see files.h.
 *
 * A replaced file is written under a fresh random name in its directory,
 * then renamed over the old one: a reader in the sandbox never sees half a
 * file, and whatever the sandbox had at that name (a link, a FIFO) is
 * replaced, never followed or opened.
 */
#include "session/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/fsuid.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/macros.h"
#include "util/path.h"
#include "util/randid.h"
#include "util/utf8.h"

#define FILES_UPLOAD_PREFIX ".sandboxd-upload-"

#define FILES_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* Without openat2 (Linux before 5.6, valgrind): every name here is one plain component
 * (path_check_plain), so openat with O_NOFOLLOW refuses a link just the same, and comparing
 * devices refuses a mount crossing. */
static int files_openat_compat(int dirfd, const char *name, int flags, mode_t mode,
                               uint64_t resolve)
{
    if (strchr(name, '/') || strcmp(name, "..") == 0)
        return -EINVAL;
    int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -errno;
    struct stat a, b;
    if ((resolve & RESOLVE_NO_XDEV) &&
        (fstat(dirfd, &a) < 0 || fstat(fd, &b) < 0 || a.st_dev != b.st_dev)) {
        close(fd);
        return -EXDEV;
    }
    return fd;
}

static int files_openat_how(int dirfd, const char *name, int flags, mode_t mode, uint64_t resolve)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = resolve,
    };
    int fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
    if (fd < 0 && errno == ENOSYS)
        return files_openat_compat(dirfd, name, flags, mode, resolve);
    return fd < 0 ? -errno : fd;
}

/* openat2 of one plain name below dirfd that follows nothing and stays on the mount. */
static int files_openat(int dirfd, const char *name, int flags, mode_t mode)
{
    return files_openat_how(dirfd, name, flags, mode, FILES_RESOLVE | RESOLVE_NO_XDEV);
}

int session_files_open_root(pid_t pid, int pidfd, int *ret_fd)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
    _cleanup_close_ int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
    /* Still alive after the open: the pid was the session's, not a recycled one. */
    if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
        return -ENOENT;
    /* The one mount crossing allowed: from the root onto the session's own tmpfs. */
    int fd = files_openat_how(root, "tmp", O_PATH | O_DIRECTORY, 0, FILES_RESOLVE);
    if (fd < 0)
        return fd;
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC) {
        close(fd);
        return -EPROTO;
    }
    *ret_fd = fd;
    return 0;
}

/* Act on the filesystem as the sandbox's uid and gid, on this thread only (fsuid and fsgid are
 * per thread): the session's tmpfs belongs to its user namespace, which maps no other id (a
 * file the host's root tried to create there would fail with EOVERFLOW), and a host that
 * acts as the sandbox's user can do nothing there the sandbox could not. Leaving fsuid 0
 * also drops the file capabilities (CAP_DAC_OVERRIDE...) from the thread until it returns. */
struct files_creds {
    uid_t uid;
    gid_t gid;
};

static int files_become(uid_t uid, gid_t gid, struct files_creds *saved)
{
    saved->gid = (gid_t)setfsgid(gid);
    saved->uid = (uid_t)setfsuid(uid);
    if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid) {
        setfsuid(saved->uid);
        setfsgid(saved->gid);
        return -EPERM;
    }
    return 0;
}

static void files_restore(const struct files_creds *saved)
{
    setfsuid(saved->uid);
    setfsgid(saved->gid);
}

/* The directory holding path's last component (an fd the caller closes) and that component.
 * With create, missing directories are made. Runs as the sandbox (files_become). */
static int files_walk(int workdir, const char *path, bool create, int *ret_dir,
                      const char **ret_name)
{
    if (path_check_plain(path, strlen(path)))
        return -EINVAL;
    int cur = fcntl(workdir, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return -errno;
    const char *comp = path;
    for (const char *slash; (slash = strchr(comp, '/')); comp = slash + 1) {
        char name[256];
        snprintf(name, sizeof(name), "%.*s", (int)(slash - comp), comp);
        int fd = files_openat(cur, name, O_RDONLY | O_DIRECTORY, 0);
        if (fd == -ENOENT && create) {
            if (mkdirat(cur, name, 0755) < 0 && errno != EEXIST)
                fd = -errno;
            else
                fd = files_openat(cur, name, O_RDONLY | O_DIRECTORY, 0);
        }
        close(cur);
        if (fd < 0)
            return fd;
        cur = fd;
    }
    *ret_dir = cur;
    *ret_name = comp;
    return 0;
}

static int files_put(int workdir, const char *path, const void *data, size_t len)
{
    _cleanup_close_ int dir = -1;
    const char *name;
    int r = files_walk(workdir, path, true, &dir, &name);
    if (r < 0)
        return r;
    struct statvfs sv;
    if (fstatvfs(dir, &sv) < 0)
        return -errno;
    if (len > (uint64_t)sv.f_bavail * sv.f_frsize)
        return -ENOSPC; /* refused before a byte is written */
    char tmp[sizeof(FILES_UPLOAD_PREFIX) + 32] = FILES_UPLOAD_PREFIX;
    if ((r = randid_hex(tmp + strlen(tmp), sizeof(tmp) - strlen(tmp), 12)) < 0)
        return r;
    int fd = files_openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return fd;
    r = fd_write_all(fd, data, len, 0);
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && renameat(dir, tmp, dir, name) < 0)
        r = -errno;
    if (r < 0)
        (void)unlinkat(dir, tmp, 0); /* best effort: the sandbox may have removed it already */
    return r == -EFBIG ? -ENOSPC : r;
}

int session_files_put(int workdir, const char *path, const void *data, size_t len, uid_t uid,
                      gid_t gid)
{
    struct files_creds saved;
    int r = files_become(uid, gid, &saved);
    if (r < 0)
        return r;
    r = files_put(workdir, path, data, len);
    files_restore(&saved);
    return r;
}

static int files_open(int workdir, const char *path, uint64_t max, int *ret_fd, uint64_t *ret_size)
{
    _cleanup_close_ int dir = -1;
    const char *name;
    int r = files_walk(workdir, path, false, &dir, &name);
    if (r < 0)
        return r;
    _cleanup_close_ int fd = files_openat(dir, name, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    if (!S_ISREG(st.st_mode))
        return -EINVAL;
    if ((uint64_t)st.st_size > max)
        return -EFBIG;
    *ret_fd = TAKE_FD(fd);
    *ret_size = (uint64_t)st.st_size;
    return 0;
}

int session_files_open(int workdir, const char *path, uint64_t max, uid_t uid, gid_t gid,
                       int *ret_fd, uint64_t *ret_size)
{
    struct files_creds saved;
    int r = files_become(uid, gid, &saved);
    if (r < 0)
        return r;
    r = files_open(workdir, path, max, ret_fd, ret_size);
    files_restore(&saved);
    return r;
}

static int files_delete(int workdir, const char *path)
{
    _cleanup_close_ int dir = -1;
    const char *name;
    int r = files_walk(workdir, path, false, &dir, &name);
    if (r < 0)
        return r;
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    return unlinkat(dir, name, 0) < 0 ? -errno : 0;
}

int session_files_delete(int workdir, const char *path, uid_t uid, gid_t gid)
{
    struct files_creds saved;
    int r = files_become(uid, gid, &saved);
    if (r < 0)
        return r;
    r = files_delete(workdir, path);
    files_restore(&saved);
    return r;
}

static int files_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void files_names_free(char **names)
{
    for (char **p = names; p && *p; p++)
        free(*p);
    free(names);
}

/* At most max names of dirfd (a directory fd, borrowed), sorted, NULL-terminated (caller
 * frees with files_names_free); *ret_more says there were more. NULL when out of memory or
 * unreadable. */
static char **files_names(int dirfd, size_t max, bool *ret_more)
{
    *ret_more = false;
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char **names = calloc(1, sizeof(char *));
    size_t n = 0;
    struct dirent *e;
    while (names && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == max) {
            *ret_more = true;
            break;
        }
        char **nn = realloc(names, (n + 2) * sizeof(*nn));
        if (!nn || !(nn[n] = strdup(e->d_name))) {
            names = nn ? nn : names;
            names[n] = NULL;
            files_names_free(names);
            names = NULL;
            break;
        }
        names = nn;
        names[++n] = NULL;
    }
    closedir(d);
    if (names)
        qsort(names, n, sizeof(char *), files_cmp);
    return names;
}

int session_files_path_set(json_t *obj, const char *path)
{
    size_t len = strlen(path);
    const unsigned char *p = (const unsigned char *)path;
    bool plain = true;
    for (size_t i = 0, n; plain && i < len; i += n)
        plain = (n = utf8_seq_len(p + i, len - i)) != 0;
    if (plain)
        return json_object_set_new(obj, "path", json_stringn(path, len)) < 0 ? -ENOMEM : 0;
    /* Not UTF-8: what JSON cannot carry goes percent-encoded, '%' too, so that the text is
     * the name once decoded, as the server decodes a URL's path (docs/DATA.md). */
    _cleanup_free_ char *out = malloc(3 * len + 1);
    if (!out)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0, n; i < len; i += n) {
        n = utf8_seq_len(p + i, len - i);
        if (n && p[i] != '%') {
            memcpy(out + k, p + i, n);
            k += n;
        } else {
            k += (size_t)snprintf(out + k, 4, "%%%02X", p[i]);
            n = 1;
        }
    }
    if (json_object_set_new(obj, "path", json_stringn(out, k)) < 0 ||
        json_object_set_new(obj, "pathEncoding", json_string("percent")) < 0)
        return -ENOMEM;
    return 0;
}

/* A listing: what it holds and how many more entries it may visit. */
struct files_listing {
    json_t *out;
    size_t budget; /* entries still to visit, directories and everything else included */
    bool truncated;
};

static void files_list_entry(int dirfd, const char *name, const char *rel, unsigned depth,
                             struct files_listing *l);

static void files_list_dir(int dirfd, const char *prefix, unsigned depth, struct files_listing *l)
{
    bool more;
    char **names = files_names(dirfd, l->budget, &more);
    if (!names) {
        l->truncated = true; /* unreadable here, or out of memory: the listing is not whole */
        return;
    }
    l->truncated |= more;
    /* Every name read counts, whatever it is, before anything below it is read. */
    for (char **p = names; *p; p++)
        l->budget--;
    for (char **p = names; *p; p++) {
        if (strncmp(*p, FILES_UPLOAD_PREFIX, strlen(FILES_UPLOAD_PREFIX)) == 0)
            continue;
        _cleanup_free_ char *rel = *prefix ? fmt_str("%s/%s", prefix, *p) : strdup(*p);
        if (!rel) {
            l->truncated = true;
            continue;
        }
        files_list_entry(dirfd, *p, rel, depth, l);
    }
    files_names_free(names);
}

static void files_list_entry(int dirfd, const char *name, const char *rel, unsigned depth,
                             struct files_listing *l)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return; /* gone meanwhile */
    if (S_ISDIR(st.st_mode)) {
        if (depth + 1 >= PATH_MAX_DEPTH) {
            l->truncated = true;
            return;
        }
        int fd = files_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
        if (fd >= 0) {
            files_list_dir(fd, rel, depth + 1, l);
            close(fd);
        }
        return;
    }
    if (!S_ISREG(st.st_mode))
        return;
    char when[32];
    struct tm tm;
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&st.st_mtim.tv_sec, &tm));
    json_t *f = json_pack("{s:I, s:s}", "size", (json_int_t)st.st_size, "modified", when);
    if (!f || session_files_path_set(f, rel) < 0 || json_array_append_new(l->out, f) < 0)
        l->truncated = true;
}

static int files_list(int workdir, json_t **ret)
{
    _cleanup_close_ int fd = files_openat(workdir, ".", O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    struct statvfs sv;
    if (fstatvfs(fd, &sv) < 0)
        return -errno;
    struct files_listing l = {.out = json_array(), .budget = SESSION_FILES_MAX_LIST};
    if (!l.out)
        return -ENOMEM;
    files_list_dir(fd, "", 0, &l);
    *ret = json_pack("{s:o, s:b, s:I, s:I}", "files", l.out, "truncated", l.truncated, "usedBytes",
                     (json_int_t)((sv.f_blocks - sv.f_bfree) * sv.f_frsize), "quotaBytes",
                     (json_int_t)(sv.f_blocks * sv.f_frsize));
    return *ret ? 0 : -ENOMEM;
}

int session_files_list(int workdir, uid_t uid, gid_t gid, json_t **ret)
{
    struct files_creds saved;
    int r = files_become(uid, gid, &saved);
    if (r < 0)
        return r;
    r = files_list(workdir, ret);
    files_restore(&saved);
    return r;
}

void session_files_error(int r, const char *raw_path, struct sbx_error *ret)
{
    /* A JSON message carries UTF-8 only: a name that is not is shown repaired. */
    _cleanup_free_ char *path = utf8_sanitize(raw_path, strlen(raw_path), NULL);
    if (!path) {
        sbx_error_set(ret, SBX_ERR_INTERNAL, "INTERNAL", NULL, "out of memory");
        return;
    }
    switch (r) {
    case -ENOENT:
        sbx_error_set(ret, SBX_ERR_NOT_FOUND, "NOT_FOUND", "path", "no file %s", path);
        break;
    case -EISDIR:
        sbx_error_set(ret, SBX_ERR_CONFLICT, "IS_A_DIRECTORY", "path", "%s is a directory", path);
        break;
    case -ENOTDIR:
    case -ELOOP:
    case -EXDEV:
        sbx_error_set(ret, SBX_ERR_CONFLICT, "NOT_A_PLAIN_PATH", "path",
                      "%s goes through something that is not a plain directory (a symlink, "
                      "a file)",
                      path);
        break;
    case -EACCES:
    case -EPERM:
        sbx_error_set(ret, SBX_ERR_FORBIDDEN, "FORBIDDEN", "path",
                      "the session's own permissions do not allow this on %s", path);
        break;
    case -EINVAL:
        sbx_error_set(ret, SBX_ERR_INVALID, "INVALID_REQUEST", "path",
                      "%s is not a regular file, or not a plain relative path", path);
        break;
    case -ENOSPC:
    case -EFBIG:
        sbx_error_set(ret, SBX_ERR_TOO_LARGE, "QUOTA_EXCEEDED", "path",
                      "%s does not fit in the session's working directory (its quota is the "
                      "size of its /tmp, --tmp-size-mb; GET .../files shows what is used)",
                      path);
        break;
    default:
        sbx_error_set(ret, SBX_ERR_INTERNAL, "INTERNAL", NULL, "file operation failed: %s",
                      strerror(-r));
    }
}
