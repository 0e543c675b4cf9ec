// SPDX-License-Identifier: MIT
/*
 * hostdeps — see hostdeps.h.
 *
 * Why recreate links rather than bind what they point to at the link's
 * path: a bind at /lib/x86_64-linux-gnu/libblas.so.3 would have to sit
 * inside a read-only bind, and a link's text may name other links
 * (libblas.so.3 -> /etc/alternatives/libblas.so.3-x86_64-linux-gnu ->
 * /usr/lib/x86_64-linux-gnu/blas/libblas.so.3). Every path inside the
 * sandbox is its host path, so replaying the chain at the same places makes
 * the kernel resolve it inside exactly as outside, relative links and ".."
 * included.
 */
#include "jail/hostdeps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail/dpkg.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

#define HOSTDEPS_MAX_DEPTH 64 /* directory levels walked below a root */

static bool hostdeps_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

void hostdeps_binds_free(struct hostdeps_binds *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->paths[i]);
    free(b->paths);
    *b = (struct hostdeps_binds){0};
}

bool hostdeps_covered(const struct hostdeps_binds *b, const char *path)
{
    for (size_t i = 0; i < b->n; i++)
        if (hostdeps_within(path, b->paths[i]))
            return true;
    return false;
}

bool hostdeps_covers_any(const struct hostdeps_binds *b, const char *path)
{
    for (size_t i = 0; i < b->n; i++)
        if (hostdeps_within(b->paths[i], path))
            return true;
    return false;
}

int hostdeps_binds_add(struct hostdeps_binds *b, const char *path)
{
    char **paths = realloc(b->paths, (b->n + 1) * sizeof(*paths));
    if (!paths)
        return -ENOMEM;
    b->paths = paths;
    if (!(b->paths[b->n] = strdup(path)))
        return -ENOMEM;
    b->n++;
    return 0;
}

/* ---- resolving one chain ------------------------------------------------------------------ */

void hostdeps_chain_done(struct hostdeps_chain *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->links[i]);
        free(c->texts[i]);
    }
    free(c->final);
    *c = (struct hostdeps_chain){0};
}

static char *hostdeps_readlink(const char *path)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof(buf) - 1);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return strdup(buf);
}

/* A userspace realpath that keeps what it meets: cur is always a canonical directory (no
 * symlink, no "." or ".."), so cur + "/" + name is the canonical place of a link found there. */
int hostdeps_resolve(const char *path, struct hostdeps_chain *ret)
{
    *ret = (struct hostdeps_chain){0};
    char cur[PATH_MAX] = "";                  /* "" is "/" */
    _cleanup_free_ char *rest = strdup(path); /* what is left to resolve */
    if (!rest)
        return -ENOMEM;
    int r = 0;
    for (char *p = rest; r == 0;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, "/");
        char *after = p + n;
        if (n == 1 && p[0] == '.') {
            p = after;
            continue;
        }
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = strrchr(cur, '/');
            if (slash)
                *slash = '\0';
            p = after;
            continue;
        }
        char cand[PATH_MAX];
        if ((size_t)snprintf(cand, sizeof(cand), "%s/%.*s", cur, (int)n, p) >= sizeof(cand)) {
            r = -ENAMETOOLONG;
            break;
        }
        struct stat st;
        if (lstat(cand, &st) < 0) {
            r = -errno;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            if (ret->n >= HOSTDEPS_MAX_HOPS) {
                r = -ELOOP;
                break;
            }
            char *text = hostdeps_readlink(cand);
            char *link = strdup(cand);
            char *next = text ? fmt_str("%s/%s", text, *after ? after : "") : NULL;
            if (!text || !link || !next) {
                free(text);
                free(link);
                free(next);
                r = -ENOMEM;
                break;
            }
            ret->links[ret->n] = link;
            ret->texts[ret->n++] = text;
            if (text[0] == '/')
                cur[0] = '\0';
            free(rest);
            rest = next;
            p = rest;
            continue;
        }
        while (*after == '/')
            after++;
        if (*after && !S_ISDIR(st.st_mode)) {
            r = -ENOTDIR;
            break;
        }
        memcpy(cur, cand, strlen(cand) + 1);
        p = after;
    }
    if (r == 0 && !(ret->final = strdup(*cur ? cur : "/")))
        r = -ENOMEM;
    if (r < 0)
        hostdeps_chain_done(ret);
    return r;
}

/* ---- turning chains into plan operations ------------------------------------------------- */

bool hostdeps_is_public(const char *path, bool *ret_dir)
{
    static const char *const never[] = {"/proc", "/sys", "/dev", "/run"};
    for (size_t i = 0; i < ARRAY_SIZE(never); i++)
        if (hostdeps_within(path, never[i]))
            return false;
    struct stat st;
    if (strcmp(path, "/") == 0 || lstat(path, &st) < 0)
        return false;
    *ret_dir = S_ISDIR(st.st_mode);
    if (!S_ISREG(st.st_mode) && !*ret_dir)
        return false;
    if (!(st.st_mode & S_IROTH) || (*ret_dir && !(st.st_mode & S_IXOTH)))
        return false;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *slash = strrchr(dir, '/'); slash && slash != dir; slash = strrchr(dir, '/')) {
        *slash = '\0';
        if (stat(dir, &st) < 0 || !(st.st_mode & S_IXOTH))
            return false;
    }
    return true;
}

/* Can dst be added to the plan: nothing there yet, and every ancestor the plan has is a plain
 * directory (not a file, a link, or a tmpfs or proc mount the sandbox owns)? */
static bool hostdeps_plan_free(const struct mount_plan *p, const char *dst)
{
    const char *rel = dst;
    while (*rel == '/')
        rel++;
    size_t len = strlen(rel);
    for (size_t i = 0; i < p->n; i++) {
        const struct mount_op *op = &p->ops[i];
        size_t n = strlen(op->dst);
        if (n == len && strcmp(op->dst, rel) == 0)
            return false;
        if (n < len && strncmp(op->dst, rel, n) == 0 && rel[n] == '/' && op->kind != MOUNT_OP_MKDIR)
            return false;
    }
    return true;
}

/* Does path exist inside the sandbox as it does on the host? */
static bool hostdeps_present(const struct mount_plan *p, const struct hostdeps_binds *b,
                             const char *path)
{
    return hostdeps_covered(b, path) || mount_plan_has(p, path);
}

int hostdeps_apply_chain(struct mount_plan *p, struct hostdeps_binds *b,
                         const struct hostdeps_chain *c, const struct hostdeps_placer *placer,
                         struct hostdeps_stats *st, bool *ret_new_dir)
{
    *ret_new_dir = false;
    bool dir = false;
    bool final_present = hostdeps_covered(b, c->final);
    bool leaves = !final_present;
    for (size_t i = 0; i < c->n && !leaves; i++)
        leaves = !hostdeps_present(p, b, c->links[i]);
    if (!leaves)
        return 0;
    st->links++;
    if (!final_present &&
        (!hostdeps_is_public(c->final, &dir) || (dir && hostdeps_covers_any(b, c->final)) ||
         !hostdeps_plan_free(p, c->final))) {
        log_debug("jail: not binding '%s' (reached through '%s'): not public, or in the way",
                  c->final, c->links[0]);
        st->skipped++;
        return 0;
    }
    for (size_t i = 0; i < c->n; i++)
        if (!hostdeps_present(p, b, c->links[i]) && !hostdeps_plan_free(p, c->links[i])) {
            st->skipped++;
            return 0;
        }
    for (size_t i = 0; i < c->n; i++) {
        if (hostdeps_present(p, b, c->links[i]))
            continue;
        int r = mount_plan_symlink(p, c->texts[i], c->links[i]);
        if (r < 0)
            return r;
        st->symlinks++;
    }
    if (final_present)
        return 0;
    int r = placer && !dir ? placer->place(placer->ctx, p, c->final)
                           : mount_plan_bind_ro(p, c->final, NULL);
    if (r < 0)
        return r;
    if ((r = hostdeps_binds_add(b, c->final)) < 0)
        return r;
    st->binds++;
    *ret_new_dir = dir;
    return 0;
}

/* ---- the walk ----------------------------------------------------------------------------- */

struct hostdeps_walk {
    struct mount_plan *plan;
    struct hostdeps_binds *binds;
    struct hostdeps_stats *st;
    size_t max_entries;
    char **queue; /* directories to walk: the roots, then directories bound on the way */
    size_t n_queue;
    struct hostdeps_chain *chains; /* found by the walk of the current round, not applied yet */
    size_t n_chains;
};

static int hostdeps_enqueue(struct hostdeps_walk *w, const char *dir)
{
    char **q = realloc(w->queue, (w->n_queue + 1) * sizeof(*q));
    if (!q)
        return -ENOMEM;
    w->queue = q;
    if (!(q[w->n_queue] = strdup(dir)))
        return -ENOMEM;
    w->n_queue++;
    return 0;
}

/* Keep the chain of the link at path when it leaves what the plan has. */
static int hostdeps_link(struct hostdeps_walk *w, const char *path)
{
    struct hostdeps_chain c;
    int r = hostdeps_resolve(path, &c);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0; /* dangling or looping: nothing to make reachable */
    bool leaves = !hostdeps_covered(w->binds, c.final);
    for (size_t i = 0; i < c.n && !leaves; i++)
        leaves = !hostdeps_present(w->plan, w->binds, c.links[i]);
    if (!leaves) {
        hostdeps_chain_done(&c);
        return 0;
    }
    struct hostdeps_chain *v = realloc(w->chains, (w->n_chains + 1) * sizeof(*v));
    if (!v) {
        hostdeps_chain_done(&c);
        return -ENOMEM;
    }
    w->chains = v;
    w->chains[w->n_chains++] = c;
    return 0;
}

static int hostdeps_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where two or more of the files the chains reach share a directory, bind the directory once
 * rather than each file (a bind is a mount in every cold spawn): Debian's
 * /etc/fonts/conf.avail links two dozen files out of /usr/share/fontconfig/conf.avail. */
static int hostdeps_coalesce(struct hostdeps_walk *w)
{
    char **dirs = calloc(w->n_chains + 1, sizeof(char *));
    size_t n = 0;
    int r = dirs ? 0 : -ENOMEM;
    for (size_t i = 0; i < w->n_chains && r == 0; i++) {
        const char *f = w->chains[i].final;
        struct stat st;
        if (hostdeps_covered(w->binds, f) || lstat(f, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (!(dirs[n] = strndup(f, (size_t)(strrchr(f, '/') - f))))
            r = -ENOMEM;
        else
            n++;
    }
    qsort(dirs, n, sizeof(char *), hostdeps_cmp);
    for (size_t i = 0; i + 1 < n && r == 0; i++) {
        bool dir = false;
        if (strcmp(dirs[i], dirs[i + 1]) != 0 || !*dirs[i] || hostdeps_covered(w->binds, dirs[i]))
            continue;
        if (!hostdeps_is_public(dirs[i], &dir) || !dir || hostdeps_covers_any(w->binds, dirs[i]) ||
            !hostdeps_plan_free(w->plan, dirs[i]))
            continue; /* the files are bound one by one */
        if ((r = mount_plan_bind_ro(w->plan, dirs[i], NULL)) == 0 &&
            (r = hostdeps_binds_add(w->binds, dirs[i])) == 0 &&
            (r = hostdeps_enqueue(w, dirs[i])) == 0)
            w->st->binds++;
    }
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
    return r;
}

/* Apply the chains of this round, then forget them. */
static int hostdeps_apply_all(struct hostdeps_walk *w)
{
    int r = hostdeps_coalesce(w);
    for (size_t i = 0; i < w->n_chains; i++) {
        bool new_dir = false;
        if (r == 0)
            r = hostdeps_apply_chain(w->plan, w->binds, &w->chains[i], NULL, w->st, &new_dir);
        if (r == 0 && new_dir)
            r = hostdeps_enqueue(w, w->chains[i].final);
        hostdeps_chain_done(&w->chains[i]);
    }
    free(w->chains);
    w->chains = NULL;
    w->n_chains = 0;
    return r;
}

static int hostdeps_walk_dir(struct hostdeps_walk *w, int dfd, const char *path, unsigned depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0; /* unreadable: what we cannot list, the sandbox cannot either */
    }
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (++w->st->scanned > w->max_entries) {
            w->st->truncated = true;
            break;
        }
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        if (type != DT_LNK && type != DT_DIR)
            continue;
        _cleanup_free_ char *child = fmt_str("%s/%s", path, e->d_name);
        if (!child) {
            r = -ENOMEM;
            break;
        }
        if (type == DT_LNK) {
            r = hostdeps_link(w, child);
        } else if (depth < HOSTDEPS_MAX_DEPTH) {
            int fd = openat(dirfd(d), e->d_name,
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (fd >= 0)
                r = hostdeps_walk_dir(w, fd, child, depth + 1);
        }
    }
    closedir(d);
    return r;
}

int hostdeps_add_links(struct mount_plan *p, struct hostdeps_binds *b, char *const *roots,
                       size_t n_roots, size_t max_entries, struct hostdeps_stats *st)
{
    struct hostdeps_walk w = {.plan = p, .binds = b, .st = st, .max_entries = max_entries};
    int r = 0;
    for (size_t i = 0; i < n_roots && r == 0; i++)
        r = hostdeps_enqueue(&w, roots[i]);
    /* Rounds: walk what is queued, then apply what it found (which may bind directories,
     * queued for the next round: links inside them count too). */
    for (size_t done = 0; done < w.n_queue && r == 0 && !st->truncated;) {
        for (size_t end = w.n_queue; done < end && r == 0 && !st->truncated; done++) {
            int fd =
                open(w.queue[done], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (fd >= 0)
                r = hostdeps_walk_dir(&w, fd, strcmp(w.queue[done], "/") == 0 ? "" : w.queue[done],
                                      0);
        }
        int ar = hostdeps_apply_all(&w);
        if (r == 0)
            r = ar;
    }
    for (size_t i = 0; i < w.n_queue; i++)
        free(w.queue[i]);
    free(w.queue);
    return r;
}

int hostdeps_add_packages(struct mount_plan *p, struct hostdeps_binds *b, const char *dpkg_dir,
                          char *const *site_dirs, size_t n_site, struct hostdeps_stats *st)
{
    char **paths = NULL;
    size_t n = 0;
    int r = dpkg_data_paths(dpkg_dir, site_dirs, n_site, &paths, &n);
    if (r == -ENOENT)
        return 0; /* not a Debian system: nothing to learn here */
    if (r < 0) {
        if (r == -ENOMEM)
            return r;
        log_errno(LOG_WARN, r, "jail: cannot read the package database %s", dpkg_dir);
        return 0;
    }
    /* Sorted: a parent comes before what it contains, which it then covers. */
    for (size_t i = 0; i < n && r == 0; i++) {
        bool dir = false;
        if (hostdeps_covered(b, paths[i]))
            continue;
        if (!hostdeps_is_public(paths[i], &dir) || (dir && hostdeps_covers_any(b, paths[i])) ||
            !hostdeps_plan_free(p, paths[i])) {
            st->skipped++;
            continue;
        }
        if ((r = mount_plan_bind_ro(p, paths[i], NULL)) == 0 &&
            (r = hostdeps_binds_add(b, paths[i])) == 0)
            st->binds++;
    }
    dpkg_paths_free(paths);
    return r;
}

int hostdeps_add(struct mount_plan *p, struct hostdeps_binds *b, const char *dpkg_dir,
                 char *const *site_dirs)
{
    struct hostdeps_stats st = {0};
    size_t nsite = 0;
    while (site_dirs && site_dirs[nsite])
        nsite++;
    int64_t start = clock_mono_us();
    int r = hostdeps_add_packages(p, b, dpkg_dir, site_dirs, nsite, &st);
    if (r < 0)
        return r;
    /* The walk adds binds (and their directories to its own queue): walk a snapshot. */
    size_t nroots = b->n;
    char **roots = calloc(nroots + 1, sizeof(char *));
    if (!roots)
        return -ENOMEM;
    for (size_t i = 0; i < nroots && r == 0; i++)
        if (!(roots[i] = strdup(b->paths[i])))
            r = -ENOMEM;
    if (r == 0)
        r = hostdeps_add_links(p, b, roots, nroots, HOSTDEPS_MAX_ENTRIES, &st);
    for (size_t i = 0; i < nroots; i++)
        free(roots[i]);
    free(roots);
    if (r < 0)
        return r;
    if (st.truncated)
        log_warn("jail: stopped looking for symlinks after %zu directory entries; links beyond "
                 "them may not resolve inside the sandbox",
                 st.scanned);
    log_info("jail: %zu entries of the interpreter's directories looked at in %lld ms: %zu "
             "links leave them; %zu symlinks recreated, %zu paths bound, %zu refused",
             st.scanned, (long long)(clock_mono_us() - start) / 1000, st.links, st.symlinks,
             st.binds, st.skipped);
    return 0;
}
