// SPDX-License-Identifier: MIT
/*
 * mount — see mount.h.
 *
 * Why detached trees: a child in a new mount namespace cannot bind-mount
 * from an fd the parent opened (the source mount lives in the parent's
 * namespace: EINVAL), and resolving host paths itself would run the path
 * walk as the unprivileged sandbox uid. A tree cloned by the parent and
 * moved into place by the child has neither problem; move_mount() accepts a
 * detached tree into a namespace owned by the child's user namespace.
 */
#include "jail/mount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <linux/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jail/confine.h"
#include "jail/steps.h"
#include "util/fdio.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

void mount_plan_init(struct mount_plan *p)
{
    *p = (struct mount_plan){0};
}

void mount_plan_done(struct mount_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->ops[i].dst);
        free(p->ops[i].src);
        free(p->ops[i].data);
        if (p->ops[i].src_fd >= 0)
            close(p->ops[i].src_fd);
    }
    free(p->ops);
    *p = (struct mount_plan){0};
}

const char *mount_op_kind_name(enum mount_op_kind k)
{
    static const char *const names[] = {
        [MOUNT_OP_MKDIR] = "mkdir",        [MOUNT_OP_FILE] = "create-file",
        [MOUNT_OP_SYMLINK] = "symlink",    [MOUNT_OP_TMPFS] = "mount-tmpfs",
        [MOUNT_OP_BIND] = "bind-mount",    [MOUNT_OP_PROC] = "mount-proc",
        [MOUNT_OP_REMOUNT] = "remount-ro", [MOUNT_OP_SEAL] = "seal-ro",
    };
    return (size_t)k < ARRAY_SIZE(names) ? names[k] : "unknown";
}

/* "/usr/lib" -> "usr/lib": targets are applied relative to the new root. */
static char *mount_rel(const char *dst)
{
    while (*dst == '/')
        dst++;
    return strdup(*dst ? dst : ".");
}

bool mount_plan_has(const struct mount_plan *p, const char *dst)
{
    while (*dst == '/')
        dst++;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->ops[i].dst, dst) == 0)
            return true;
    return false;
}

static struct mount_op *mount_plan_push(struct mount_plan *p, enum mount_op_kind kind,
                                        const char *dst)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 32;
        struct mount_op *ops = realloc(p->ops, cap * sizeof(*ops));
        if (!ops)
            return NULL;
        p->ops = ops;
        p->cap = cap;
    }
    char *rel = mount_rel(dst);
    if (!rel)
        return NULL;
    struct mount_op *op = &p->ops[p->n++];
    *op = (struct mount_op){.kind = kind, .dst = rel, .src_fd = -1};
    return op;
}

/* mkdir -p for every ancestor of dst that the plan does not create yet. */
static int mount_plan_parents(struct mount_plan *p, const char *dst)
{
    _cleanup_free_ char *copy = strdup(dst);
    if (!copy)
        return -ENOMEM;
    for (char *s = copy + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (!mount_plan_has(p, copy)) {
            struct mount_op *op = mount_plan_push(p, MOUNT_OP_MKDIR, copy);
            if (!op)
                return -ENOMEM;
            op->mode = 0755;
        }
        *s = '/';
    }
    return 0;
}

int mount_plan_dir(struct mount_plan *p, const char *dst, mode_t mode)
{
    int r = mount_plan_parents(p, dst);
    if (r < 0)
        return r;
    if (mount_plan_has(p, dst))
        return 0;
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_MKDIR, dst);
    if (!op)
        return -ENOMEM;
    op->mode = mode;
    return 0;
}

int mount_plan_file(struct mount_plan *p, const char *dst, const char *content, mode_t mode)
{
    int r = mount_plan_parents(p, dst);
    if (r < 0)
        return r;
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_FILE, dst);
    if (!op)
        return -ENOMEM;
    op->mode = mode;
    op->data = strdup(content ? content : "");
    if (!op->data)
        return -ENOMEM;
    op->data_len = strlen(op->data);
    return 0;
}

/* A file whose content (len bytes, taken over) the parent read from the host. */
static int mount_plan_file_data(struct mount_plan *p, const char *dst, char *data, size_t len,
                                const struct stat *st)
{
    int r = mount_plan_parents(p, dst);
    struct mount_op *op = r == 0 ? mount_plan_push(p, MOUNT_OP_FILE, dst) : NULL;
    if (!op) {
        free(data);
        return r < 0 ? r : -ENOMEM;
    }
    op->mode = st->st_mode & 0755; /* no setuid/setgid bits, nothing writable by others */
    op->mtime = st->st_mtim;
    op->data = data;
    op->data_len = len;
    return 0;
}

int mount_plan_file_take(struct mount_plan *p, const char *dst, char *data, size_t len, mode_t mode)
{
    struct stat st = {.st_mode = mode};
    return mount_plan_file_data(p, dst, data, len, &st);
}

#define MOUNT_COPY_MAX_DEPTH 16

static int mount_plan_copy_at(struct mount_plan *p, int at, const char *name, const char *src,
                              const char *dst, size_t depth, size_t *budget)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return log_errno(LOG_ERROR, errno, "jail: cannot stat '%s'", src);
    if (S_ISREG(st.st_mode)) {
        if ((size_t)st.st_size > *budget)
            return log_errno(LOG_ERROR, EFBIG, "jail: '%s' does not fit what is copied", src);
        char *data = NULL;
        size_t len = 0;
        int r = fd_read_file_flags(at, name, O_NOFOLLOW, *budget, &data, &len);
        if (r < 0)
            return log_errno(LOG_ERROR, -r, "jail: cannot read '%s'", src);
        *budget -= len;
        return mount_plan_file_data(p, dst, data, len, &st);
    }
    if (!S_ISDIR(st.st_mode))
        return 0; /* symlinks, sockets, devices: never part of what sandboxes get */
    if (depth >= MOUNT_COPY_MAX_DEPTH)
        return log_errno(LOG_ERROR, ELOOP, "jail: '%s' is nested too deeply to copy", src);
    int r = mount_plan_dir(p, dst, st.st_mode & 0755);
    if (r < 0)
        return r;
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        r = log_errno(LOG_ERROR, errno, "jail: cannot open the directory '%s'", src);
        if (fd >= 0)
            close(fd);
        return r;
    }
    struct dirent *e;
    while (r == 0 && (errno = 0, e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        _cleanup_free_ char *s = fmt_str("%s/%s", src, e->d_name);
        _cleanup_free_ char *t = fmt_str("%s/%s", dst, e->d_name);
        r = s && t ? mount_plan_copy_at(p, dirfd(d), e->d_name, s, t, depth + 1, budget) : -ENOMEM;
    }
    if (r == 0 && errno)
        r = log_errno(LOG_ERROR, errno, "jail: cannot list '%s'", src);
    closedir(d);
    return r;
}

int mount_plan_copy(struct mount_plan *p, const char *src, const char *dst, size_t max_bytes)
{
    /* The operator's path may be a symlink (an installed library); below it, none is followed. */
    _cleanup_free_ char *real = realpath(src, NULL);
    if (!real)
        return log_errno(LOG_ERROR, errno, "jail: cannot resolve '%s'", src);
    size_t budget = max_bytes;
    return mount_plan_copy_at(p, AT_FDCWD, real, real, dst, 0, &budget);
}

int mount_plan_symlink(struct mount_plan *p, const char *target, const char *dst)
{
    int r = mount_plan_parents(p, dst);
    if (r < 0)
        return r;
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_SYMLINK, dst);
    if (!op)
        return -ENOMEM;
    op->src = strdup(target);
    return op->src ? 0 : -ENOMEM;
}

int mount_plan_tmpfs(struct mount_plan *p, const char *dst, const char *options,
                     unsigned long flags)
{
    int r = mount_plan_dir(p, dst, 0755);
    if (r < 0)
        return r;
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_TMPFS, dst);
    if (!op)
        return -ENOMEM;
    op->flags = flags;
    op->data = strdup(options);
    return op->data ? 0 : -ENOMEM;
}

/* Flags the kernel locks on a mount seen from a user namespace: a path-based bind remount
 * must repeat them or it is refused with EPERM. */
static unsigned long mount_locked_flags(int fd)
{
    struct statvfs sv;
    if (fstatvfs(fd, &sv) < 0)
        return 0;
    unsigned long f = 0;
    if (sv.f_flag & ST_NOSUID)
        f |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV)
        f |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC)
        f |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME)
        f |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME)
        f |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME)
        f |= MS_RELATIME;
    return f;
}

static unsigned long mount_attr_to_ms(unsigned long attr)
{
    unsigned long f = 0;
    if (attr & MOUNT_ATTR_RDONLY)
        f |= MS_RDONLY;
    if (attr & MOUNT_ATTR_NOSUID)
        f |= MS_NOSUID;
    if (attr & MOUNT_ATTR_NODEV)
        f |= MS_NODEV;
    if (attr & MOUNT_ATTR_NOEXEC)
        f |= MS_NOEXEC;
    return f;
}

static int mount_plan_bind(struct mount_plan *p, const char *src, const char *dst,
                           unsigned long flags)
{
    if (!dst)
        dst = src;
    _cleanup_close_ int fd = open(src, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return log_errno(LOG_ERROR, errno, "jail: cannot open bind source '%s'", src);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return log_errno(LOG_ERROR, errno, "jail: cannot stat bind source '%s'", src);
    int r = S_ISDIR(st.st_mode) ? mount_plan_dir(p, dst, 0755) : mount_plan_file(p, dst, "", 0644);
    if (r < 0)
        return r;
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_BIND, dst);
    if (!op)
        return -ENOMEM;
    if (!(op->src = strdup(src)))
        return -ENOMEM;
    op->flags = flags;
    op->ms_flags = mount_attr_to_ms(flags) | mount_locked_flags(fd);
    op->src_fd = TAKE_FD(fd);
    return 0;
}

int mount_plan_attach_tree(struct mount_plan *p, int tree_fd, const char *what, const char *dst)
{
    _cleanup_close_ int fd = tree_fd;
    int r = mount_plan_dir(p, dst, 0755);
    if (r < 0)
        return r;
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_BIND, dst);
    if (!op)
        return -ENOMEM;
    if (!(op->src = strdup(what)))
        return -ENOMEM;
    op->flags = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    op->ms_flags = mount_attr_to_ms(op->flags);
    op->src_fd = TAKE_FD(fd);
    return 0;
}

int mount_plan_bind_ro(struct mount_plan *p, const char *src, const char *dst)
{
    return mount_plan_bind(p, src, dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

int mount_plan_bind_dev(struct mount_plan *p, const char *src, const char *dst)
{
    return mount_plan_bind(p, src, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
}

int mount_plan_clone_trees(const struct mount_plan *p, int **ret_fds)
{
    int *fds = malloc((p->n ? p->n : 1) * sizeof(int));
    if (!fds)
        return -ENOMEM;
    for (size_t i = 0; i < p->n; i++)
        fds[i] = -1;
    for (size_t i = 0; i < p->n; i++) {
        const struct mount_op *op = &p->ops[i];
        if (op->kind != MOUNT_OP_BIND)
            continue;
        int fd = (int)syscall(SYS_open_tree, op->src_fd, "",
                              AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (fd < 0) {
            int r = log_errno(LOG_ERROR, errno, "jail: open_tree(%s) failed", op->src);
            mount_plan_trees_close(p, fds);
            return r;
        }
        fds[i] = fd;
        struct mount_attr attr = {.attr_set = op->flags};
        if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) <
            0) {
            int r = log_errno(LOG_ERROR, errno, "jail: mount_setattr(%s) failed", op->src);
            mount_plan_trees_close(p, fds);
            return r;
        }
    }
    *ret_fds = fds;
    return 0;
}

void mount_plan_trees_close(const struct mount_plan *p, int *fds)
{
    if (!fds)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

int mount_plan_proc(struct mount_plan *p, const char *dst)
{
    int r = mount_plan_dir(p, dst, 0555);
    if (r < 0)
        return r;
    return mount_plan_push(p, MOUNT_OP_PROC, dst) ? 0 : -ENOMEM;
}

int mount_plan_remount_ro(struct mount_plan *p, const char *dst)
{
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_REMOUNT, dst);
    if (!op)
        return -ENOMEM;
    op->flags = CONFINE_PROC_RO_FLAGS;
    return 0;
}

int mount_plan_seal(struct mount_plan *p, const char *dst, unsigned long flags)
{
    struct mount_op *op = mount_plan_push(p, MOUNT_OP_SEAL, dst);
    if (!op)
        return -ENOMEM;
    op->flags = MS_RDONLY | flags;
    return 0;
}

/* "/proc/self/fd/N" without snprintf (not async-signal-safe). */
static void mount_fd_path(int fd, char out[32])
{
    static const char prefix[] = "/proc/self/fd/";
    char digits[12];
    int n = 0;
    unsigned v = (unsigned)fd;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < (int)sizeof(digits));
    size_t k = 0;
    for (; prefix[k]; k++)
        out[k] = prefix[k];
    while (n)
        out[k++] = digits[--n];
    out[k] = '\0';
}

int mount_plan_open_sources(const struct mount_plan *p, int *fds, size_t *ret_index)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->ops[i].kind != MOUNT_OP_BIND)
            continue;
        if (p->ops[i].src[0] != '/') { /* a tree of sandboxd's (mount_plan_attach_tree) */
            *ret_index = i;
            return -EINVAL;
        }
        fds[i] = open(p->ops[i].src, O_PATH | O_CLOEXEC);
        if (fds[i] < 0) {
            *ret_index = i;
            return -errno;
        }
    }
    return 0;
}

static int mount_apply_one(const struct mount_op *op, int fd, bool detached)
{
    switch (op->kind) {
    case MOUNT_OP_MKDIR:
        if (mkdir(op->dst, op->mode) < 0 && errno != EEXIST)
            return -errno;
        return 0;
    case MOUNT_OP_FILE: {
        int out = open(op->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, op->mode);
        if (out < 0)
            return -errno;
        size_t off = 0;
        while (off < op->data_len) {
            ssize_t w = write(out, op->data + off, op->data_len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                int e = w < 0 ? errno : EIO;
                close(out);
                return -e;
            }
            off += (size_t)w;
        }
        if (op->mtime.tv_sec || op->mtime.tv_nsec) {
            const struct timespec times[2] = {op->mtime, op->mtime};
            if (futimens(out, times) < 0) {
                int e = errno;
                close(out);
                return -e;
            }
        }
        close(out);
        return 0;
    }
    case MOUNT_OP_SYMLINK:
        if (symlink(op->src, op->dst) < 0)
            return -errno;
        return 0;
    case MOUNT_OP_TMPFS:
        return steps_mount("tmpfs", op->dst, "tmpfs", op->flags, op->data);
    case MOUNT_OP_BIND:
        if (fd < 0)
            return -EBADF;
        if (detached) {
            if (syscall(SYS_move_mount, fd, "", AT_FDCWD, op->dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;
            return 0;
        }
        {
            /* Rootless: bind the source the child opened itself (in its own mount namespace,
             * as the same host user as sandboxd), then make it read-only. */
            char src[32];
            mount_fd_path(fd, src);
            int r = steps_mount(src, op->dst, NULL, MS_BIND | MS_REC, NULL);
            if (r < 0)
                return r;
            return steps_mount(NULL, op->dst, NULL, MS_REMOUNT | MS_BIND | op->ms_flags, NULL);
        }
    case MOUNT_OP_PROC:
        return steps_mount("proc", op->dst, "proc", CONFINE_PROC_FLAGS, NULL);
    case MOUNT_OP_REMOUNT:
        return steps_bind_remount(op->dst, op->flags);
    case MOUNT_OP_SEAL:
        return steps_mount(NULL, op->dst, NULL, MS_REMOUNT | MS_BIND | op->flags, NULL);
    }
    return -EINVAL;
}

int mount_plan_apply(const struct mount_plan *p, const int *fds, bool detached, size_t *ret_index)
{
    for (size_t i = 0; i < p->n; i++) {
        int r = mount_apply_one(&p->ops[i], fds ? fds[i] : -1, detached);
        if (r < 0) {
            *ret_index = i;
            return r;
        }
    }
    return 0;
}
