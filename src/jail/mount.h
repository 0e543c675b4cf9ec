// SPDX-License-Identifier: MIT
/*
 * mount — the sandbox filesystem as an ordered list of operations (after
 * bubblewrap): built once in the parent, where allocation and path
 * resolution are allowed, then replayed verbatim by every jail child, which
 * only issues mkdir/mount/symlink/write syscalls on prepared strings.
 *
 * Bind sources are opened O_PATH once by the parent (as the user running
 * sandboxd). For every spawn the parent clones each into a detached mount
 * (open_tree(OPEN_TREE_CLONE)), makes it read-only with mount_setattr(), and
 * the child attaches it with move_mount(). So neither a symlink swapped in
 * later nor an ancestor directory the sandbox uid cannot traverse changes
 * what the sandbox sees, and the read-only flag is set by a process that
 * has real privileges. Targets are relative to the child's working
 * directory, the fresh tmpfs that becomes its root.
 */
#ifndef SANDBOXD_JAIL_MOUNT_H
#define SANDBOXD_JAIL_MOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

enum mount_op_kind {
    MOUNT_OP_MKDIR,
    MOUNT_OP_FILE,    /* create a file with content (also an empty bind target) */
    MOUNT_OP_SYMLINK, /* src = link target */
    MOUNT_OP_TMPFS,   /* data = tmpfs options */
    MOUNT_OP_BIND,    /* attach the detached tree cloned for this spawn */
    MOUNT_OP_PROC,
    MOUNT_OP_REMOUNT, /* bind remount of dst with flags (e.g. /proc/sys read-only) */
    MOUNT_OP_SEAL,    /* remount an existing mount point with flags (read-only /dev) */
};

struct mount_op {
    enum mount_op_kind kind;
    char *dst;
    char *src;
    char *data;
    size_t data_len;
    unsigned long flags;    /* mount flags, or MOUNT_ATTR_* for binds */
    unsigned long ms_flags; /* binds: MS_* flags for the path-based remount (rootless) */
    mode_t mode;
    struct timespec mtime; /* files: set on the created file when tv_sec or tv_nsec != 0 */
    int src_fd;            /* owned: the O_PATH fd of a bind source */
};

struct mount_plan {
    struct mount_op *ops;
    size_t n;
    size_t cap;
};

void mount_plan_init(struct mount_plan *p);
void mount_plan_done(struct mount_plan *p);

/* Builders; every path is an absolute in-sandbox path ("/usr/lib"). Parent directories are
 * created on demand. All return 0 or -errno (and log what failed). */
int mount_plan_dir(struct mount_plan *p, const char *dst, mode_t mode);
int mount_plan_file(struct mount_plan *p, const char *dst, const char *content, mode_t mode);
int mount_plan_symlink(struct mount_plan *p, const char *target, const char *dst);
int mount_plan_tmpfs(struct mount_plan *p, const char *dst, const char *options,
                     unsigned long flags);
/* A file at dst holding data (len bytes, which the plan takes over: freed even on failure), with
 * mode less any setuid, setgid or write bit for others. */
int mount_plan_file_take(struct mount_plan *p, const char *dst, char *data, size_t len,
                         mode_t mode);
/* Copy host path src (a regular file, or a tree of directories and regular files; symlinks
 * and anything else are skipped) to dst in the new root: read now, written by each child into
 * its root tmpfs with the same modes and modification times (so that .pyc files stay valid).
 * Unlike a bind, nothing of the host path shows in /proc/self/mountinfo. At most max_bytes of
 * file data in all (-EFBIG). */
int mount_plan_copy(struct mount_plan *p, const char *src, const char *dst, size_t max_bytes);
/* Read-only bind of host path src at dst (same path when dst is NULL). */
int mount_plan_bind_ro(struct mount_plan *p, const char *src, const char *dst);
/* Read-only attach at dst (a directory) of tree_fd, a detached mount of sandboxd's own (from
 * fsmount(); owned by the plan from the call on, closed even on failure), cloned for every
 * spawn like a bind source; what names it in logs. Only for plans spawned with trees
 * (mount_plan_clone_trees: not rootless), and only where the kernel can clone a detached mount
 * (Linux 6.15 and later; the caller checks). */
int mount_plan_attach_tree(struct mount_plan *p, int tree_fd, const char *what, const char *dst);
/* Read-write bind of a host device node (only /dev/null and friends). */
int mount_plan_bind_dev(struct mount_plan *p, const char *src, const char *dst);
int mount_plan_proc(struct mount_plan *p, const char *dst);
int mount_plan_remount_ro(struct mount_plan *p, const char *dst);
/* Make an existing mount point (one the plan mounted) read-only, keeping its submounts. */
int mount_plan_seal(struct mount_plan *p, const char *dst, unsigned long flags);
/* Does dst (absolute in-sandbox path) already appear as a target? */
bool mount_plan_has(const struct mount_plan *p, const char *dst);

/* Parent side, per spawn: clone every bind source into a detached read-only tree.
 * *ret_fds has one entry per op (-1 for non-binds); free with mount_plan_trees_close.
 * Needs CAP_SYS_ADMIN; rootless callers pass no trees and binds fall back to a path-based
 * bind by the child (which then runs as the same host user as sandboxd). */
int mount_plan_clone_trees(const struct mount_plan *p, int **ret_fds);
void mount_plan_trees_close(const struct mount_plan *p, int *fds);
/* Child side (rootless), before the staging tmpfs hides anything: open every bind source
 * O_PATH into fds[i] (fds has p->n slots). */
int mount_plan_open_sources(const struct mount_plan *p, int *fds, size_t *ret_index);
/* Child side, async-signal-safe: run every op with targets relative to the cwd. For bind op i,
 * fds[i] is a detached tree to attach (detached = true) or an O_PATH source to bind through
 * /proc/self/fd (detached = false). On failure returns -errno and the op's index. */
int mount_plan_apply(const struct mount_plan *p, const int *fds, bool detached, size_t *ret_index);
const char *mount_op_kind_name(enum mount_op_kind k);

#endif
