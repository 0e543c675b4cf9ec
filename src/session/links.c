// SPDX-License-Identifier: MIT
/*
 * links — see links.h.
 */
#include "session/links.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"
#include "util/randid.h"

struct session_links {
    int dir;    /* O_PATH of the directory */
    char *path; /* its host path */
};

/* A tmpfs: a symlink there costs a few microseconds. On a disk file system it is an inode
 * allocated and freed per session, and an allocator can be slow under that churn: ext4
 * without a journal scans its group's recently deleted inodes on every allocation (~0.3 ms of
 * each session start measured with bench/coldstart_bench.py). */
static bool links_on_tmpfs(const char *dir)
{
    struct statfs sf;
    return statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

/* mkdtemp under the first usable of: $XDG_RUNTIME_DIR and /dev/shm when they are a tmpfs,
 * then $TMPDIR, then /tmp. */
static char *links_mkdtemp(void)
{
    const struct {
        const char *dir;
        bool tmpfs_only;
    } where[] = {
        {getenv("XDG_RUNTIME_DIR"), true},
        {"/dev/shm", true},
        {getenv("TMPDIR"), false},
        {"/tmp", false},
    };
    int err = ENOENT;
    for (size_t i = 0; i < ARRAY_SIZE(where); i++) {
        const char *dir = where[i].dir;
        if (!dir || dir[0] != '/' || (where[i].tmpfs_only && !links_on_tmpfs(dir)))
            continue;
        char *path = fmt_str("%s/sandboxd-workdirs-XXXXXX", dir);
        if (!path) {
            errno = ENOMEM;
            return NULL;
        }
        if (mkdtemp(path)) /* mode 0700: only this user may traverse the links */
            return path;
        err = errno;
        log_errno(LOG_DEBUG, err, "sessions: cannot make a directory under %s", dir);
        free(path);
    }
    errno = err;
    return NULL;
}

int session_links_new(struct session_links **ret)
{
    _cleanup_free_ char *path = links_mkdtemp();
    if (!path)
        return log_errno(LOG_ERROR, errno,
                         "sessions: cannot make a directory for the sessions' links (under "
                         "$XDG_RUNTIME_DIR, /dev/shm, $TMPDIR or /tmp)");
    struct session_links *l = calloc(1, sizeof(*l));
    int dir = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (!l || dir < 0) {
        int r = dir < 0 ? -errno : -ENOMEM;
        if (dir >= 0)
            close(dir);
        free(l);
        (void)rmdir(path); /* just made, empty */
        return r;
    }
    l->dir = dir;
    l->path = TAKE_PTR(path);
    *ret = l;
    return 0;
}

void session_links_free(struct session_links *l)
{
    if (!l)
        return;
    /* Every session ended before this: whatever is left is a link of ours. */
    int fd = openat(l->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_type == DT_LNK)
                (void)unlinkat(l->dir, e->d_name, 0); /* best effort: the rmdir says */
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    if (rmdir(l->path) < 0)
        log_errno(LOG_WARN, errno, "sessions: cannot remove %s", l->path);
    close(l->dir);
    free(l->path);
    free(l);
}

int session_links_add(struct session_links *l, pid_t pid, char ret_name[SESSION_LINK_NAME + 1],
                      char **ret_path)
{
    char name[SESSION_LINK_NAME + 1], target[64];
    int r = randid_hex(name, sizeof(name), SESSION_LINK_NAME / 2);
    if (r < 0)
        return r;
    snprintf(target, sizeof(target), "/proc/%d/root/tmp", (int)pid);
    char *path = fmt_str("%s/%s", l->path, name);
    if (!path)
        return -ENOMEM;
    if (symlinkat(target, l->dir, name) < 0) {
        r = -errno;
        free(path);
        return r;
    }
    memcpy(ret_name, name, sizeof(name));
    *ret_path = path;
    return 0;
}

void session_links_remove(struct session_links *l, const char *name)
{
    if (!l || !name || !*name)
        return;
    if (unlinkat(l->dir, name, 0) < 0 && errno != ENOENT)
        log_errno(LOG_WARN, errno, "sessions: cannot remove the link %s/%s", l->path, name);
}
