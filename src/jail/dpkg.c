// SPDX-License-Identifier: MIT
/*
 * dpkg — see dpkg.h.
 *
 * The status file is a list of stanzas ("Package: x", "Status: install ok
 * installed", "Depends: a (>= 1), b | c", ...); each installed package's
 * files are listed one per line in info/<name>.list (info/<name>:<arch>.list
 * for Multi-Arch: same packages), directories included, each directory
 * before what it contains: a line is a directory when the next line starts
 * with it and a '/'.
 */
#include "jail/dpkg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "util/fdio.h"
#include "util/fmt.h"
#include "util/macros.h"

#define DPKG_SHARE "/usr/share/"

struct dpkg_pkg {
    char *name;
    char *arch;
    char *deps; /* Depends and Pre-Depends, joined by ", " */
    bool owner, data, chosen;
    char **data_paths; /* what it installs under /usr/share and /etc (dpkg.h), NULL-terminated */
    struct dpkg_pkg *same_name; /* other architectures of the same name */
    UT_hash_handle hh;
};

struct dpkg_db {
    struct dpkg_pkg *by_name;
    size_t n;
};

static void dpkg_strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

void dpkg_paths_free(char **paths)
{
    dpkg_strv_free(paths);
}

static void dpkg_db_free(struct dpkg_db *db)
{
    struct dpkg_pkg *p, *tmp;
    HASH_ITER(hh, db->by_name, p, tmp)
    {
        HASH_DEL(db->by_name, p);
        while (p) {
            struct dpkg_pkg *next = p->same_name;
            free(p->name);
            free(p->arch);
            free(p->deps);
            dpkg_strv_free(p->data_paths);
            free(p);
            p = next;
        }
    }
}

/* Append s (copied, n bytes) to the NULL-terminated vector *v of *n entries. */
static int dpkg_strv_add(char ***v, size_t *n, const char *s, size_t len)
{
    char **nv = realloc(*v, (*n + 2) * sizeof(char *));
    if (!nv)
        return -ENOMEM;
    *v = nv;
    if (!(nv[*n] = strndup(s, len)))
        return -ENOMEM;
    nv[++*n] = NULL;
    return 0;
}

/* ---- the status file ---------------------------------------------------------------------- */

struct dpkg_stanza {
    const char *name, *arch, *status;
    size_t name_len, arch_len, status_len;
    char *deps;
};

static int dpkg_append_deps(struct dpkg_stanza *s, const char *v, size_t len)
{
    char *joined = s->deps ? fmt_str("%s, %.*s", s->deps, (int)len, v) : strndup(v, len);
    if (!joined)
        return -ENOMEM;
    free(s->deps);
    s->deps = joined;
    return 0;
}

static int dpkg_stanza_end(struct dpkg_db *db, struct dpkg_stanza *s)
{
    int r = 0;
    static const char installed[] = " installed";
    size_t il = sizeof(installed) - 1;
    bool ok = s->name && s->status && s->status_len >= il &&
              memcmp(s->status + s->status_len - il, installed, il) == 0;
    if (ok) {
        if (db->n >= DPKG_MAX_PACKAGES) {
            r = -E2BIG;
            goto out;
        }
        struct dpkg_pkg *p = calloc(1, sizeof(*p));
        if (!p || !(p->name = strndup(s->name, s->name_len)) ||
            !(p->arch = strndup(s->arch ? s->arch : "", s->arch ? s->arch_len : 0))) {
            if (p) {
                free(p->name);
                free(p);
            }
            r = -ENOMEM;
            goto out;
        }
        p->deps = TAKE_PTR(s->deps);
        struct dpkg_pkg *first = NULL;
        HASH_FIND_STR(db->by_name, p->name, first);
        if (first) {
            p->same_name = first->same_name;
            first->same_name = p;
        } else {
            HASH_ADD_KEYPTR(hh, db->by_name, p->name, strlen(p->name), p);
        }
        db->n++;
    }
out:
    free(s->deps);
    *s = (struct dpkg_stanza){0};
    return r;
}

static int dpkg_read_status(struct dpkg_db *db, const char *dir)
{
    _cleanup_free_ char *path = fmt_str("%s/status", dir);
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (!path)
        return -ENOMEM;
    int r = fd_read_file(AT_FDCWD, path, DPKG_MAX_FILE, &text, &len);
    if (r < 0)
        return r;
    struct dpkg_stanza s = {0};
    bool in_deps = false;
    for (const char *line = text, *end = text + len; line < end && r == 0;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
        if (n == 0) {
            r = dpkg_stanza_end(db, &s);
            in_deps = false;
        } else if (line[0] == ' ' || line[0] == '\t') {
            if (in_deps) /* a folded Depends line */
                r = dpkg_append_deps(&s, line, n);
        } else {
            const char *colon = memchr(line, ':', n);
            size_t klen = colon ? (size_t)(colon - line) : n;
            const char *v = colon ? colon + 1 : line + n;
            while (v < line + n && *v == ' ')
                v++;
            size_t vlen = (size_t)(line + n - v);
            in_deps = false;
#define DPKG_KEY(k) (klen == sizeof(k) - 1 && memcmp(line, k, klen) == 0)
            if (DPKG_KEY("Package")) {
                s.name = v;
                s.name_len = vlen;
            } else if (DPKG_KEY("Architecture")) {
                s.arch = v;
                s.arch_len = vlen;
            } else if (DPKG_KEY("Status")) {
                s.status = v;
                s.status_len = vlen;
            } else if (DPKG_KEY("Depends") || DPKG_KEY("Pre-Depends")) {
                in_deps = true;
                r = dpkg_append_deps(&s, v, vlen);
            }
#undef DPKG_KEY
        }
        line += n + 1;
    }
    if (r == 0)
        r = dpkg_stanza_end(db, &s);
    else
        free(s.deps);
    return r;
}

/* ---- the file lists ----------------------------------------------------------------------- */

static bool dpkg_has_prefix(const char *s, size_t len, const char *prefix, size_t plen)
{
    return len > plen && memcmp(s, prefix, plen) == 0 && s[plen] == '/';
}

static bool dpkg_excluded(const char *f, size_t len)
{
    static const char *const docs[] = {"doc",     "doc-base", "man",   "info",
                                       "lintian", "bug",      "locale"};
    const char *rest = f + sizeof(DPKG_SHARE) - 1;
    size_t rlen = len - (sizeof(DPKG_SHARE) - 1);
    size_t top = strcspn(rest, "/");
    if (top > rlen)
        top = rlen;
    for (size_t i = 0; i < ARRAY_SIZE(docs); i++)
        if (top == strlen(docs[i]) && memcmp(rest, docs[i], top) == 0)
            return true;
    return false;
}

/* Fold file f (len bytes, under base: "/usr/share/" or "/etc/") into the per-<base><name>
 * common directories in *v: "/usr/share/fonts/truetype/dejavu/a.ttf" and ".../dejavu/b.ttf"
 * give "/usr/share/fonts/truetype/dejavu"; a file directly in base stays itself. */
static int dpkg_fold(char ***v, size_t *n, const char *f, size_t len, size_t base)
{
    const char *slash = memrchr(f, '/', len);
    size_t dlen = (size_t)(slash - f);
    if (dlen < base) /* directly in base: the file itself */
        return dpkg_strv_add(v, n, f, len);
    size_t top = base + strcspn(f + base, "/");
    for (size_t i = 0; i < *n; i++) {
        char *c = (*v)[i];
        size_t clen = strlen(c);
        if (clen < top || memcmp(c, f, top) != 0 || (c[top] != '/' && c[top] != '\0'))
            continue;
        /* Same <base><name>: keep the longest common run of whole components. */
        size_t k = top;
        while (k < clen && k < dlen && c[k] == f[k])
            k++;
        if (!((k == clen || c[k] == '/') && (k == dlen || f[k] == '/')))
            while (k > top && c[k] != '/')
                k--;
        c[k] = '\0';
        return 0;
    }
    return dpkg_strv_add(v, n, f, dlen);
}

/* Classify package p from its file list. */
static int dpkg_read_list(struct dpkg_pkg *p, const char *dir, char *const *site_dirs,
                          size_t n_site)
{
    _cleanup_free_ char *path = fmt_str("%s/info/%s.list", dir, p->name);
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    if (!path)
        return -ENOMEM;
    int r = fd_read_file(AT_FDCWD, path, DPKG_MAX_FILE, &text, &len);
    if (r == -ENOENT && *p->arch) {
        free(path);
        if (!(path = fmt_str("%s/info/%s:%s.list", dir, p->name, p->arch)))
            return -ENOMEM;
        r = fd_read_file(AT_FDCWD, path, DPKG_MAX_FILE, &text, &len);
    }
    if (r == -ENOENT)
        return 0; /* no files (a metapackage) */
    if (r < 0)
        return r;
    size_t n_paths = 0, n_files = 0;
    bool data = true;
    for (const char *line = text, *end = text + len; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
        const char *next = line + n + 1;
        size_t next_len = 0;
        if (next < end) {
            const char *nnl = memchr(next, '\n', (size_t)(end - next));
            next_len = nnl ? (size_t)(nnl - next) : (size_t)(end - next);
        }
        bool is_dir = next < end && dpkg_has_prefix(next, next_len, line, n);
        for (size_t i = 0; i < n_site && !p->owner; i++)
            p->owner = dpkg_has_prefix(line, n, site_dirs[i], strlen(site_dirs[i]));
        if (n > 0 && line[0] == '/' && !is_dir && !(n == 2 && line[1] == '.')) {
            n_files++;
            bool share = dpkg_has_prefix(line, n, "/usr/share", 10);
            bool etc = !share && dpkg_has_prefix(line, n, "/etc", 4);
            if (!share && !etc)
                data = false;
            else if (etc || !dpkg_excluded(line, n))
                r = dpkg_fold(&p->data_paths, &n_paths, line, n, share ? 11 : 5);
            if (r < 0)
                return r;
        }
        line = next;
    }
    p->data = data && n_files > 0;
    return 0;
}

/* ---- the closure -------------------------------------------------------------------------- */

/* The first installed alternative of one dependency ("b | c (>= 2)"), or NULL. */
static struct dpkg_pkg *dpkg_pick(struct dpkg_db *db, const char *alt, size_t len)
{
    const char *p = alt, *end = alt + len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '|'))
            p++;
        size_t n = 0;
        while (p + n < end && !strchr(" (:|[<", p[n]))
            n++;
        if (n) {
            struct dpkg_pkg *found = NULL;
            HASH_FIND(hh, db->by_name, p, n, found);
            if (found)
                return found;
        }
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar)
            break;
        p = bar + 1;
    }
    return NULL;
}

/* Mark the data-only packages p depends on, and theirs. Depth-first with an explicit stack so
 * a long chain cannot exhaust the C stack. */
static int dpkg_mark(struct dpkg_db *db, struct dpkg_pkg *start)
{
    struct dpkg_pkg **stack = malloc((db->n + 1) * sizeof(*stack));
    if (!stack)
        return -ENOMEM;
    size_t top = 0;
    stack[top++] = start;
    while (top) {
        struct dpkg_pkg *p = stack[--top];
        for (const char *d = p->deps; d && *d;) {
            size_t n = strcspn(d, ",");
            struct dpkg_pkg *q = dpkg_pick(db, d, n);
            for (; q; q = q->same_name)
                if (q->data && !q->chosen && top < db->n) {
                    q->chosen = true;
                    stack[top++] = q;
                }
            d += n + (d[n] == ',');
        }
    }
    free(stack);
    return 0;
}

static int dpkg_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int dpkg_data_paths(const char *dpkg_dir, char *const *site_dirs, size_t n_site, char ***ret,
                    size_t *ret_n)
{
    struct dpkg_db db = {0};
    char **out = NULL;
    size_t n_out = 0;
    int r = dpkg_read_status(&db, dpkg_dir);
    struct dpkg_pkg *p, *tmp, *q;
    HASH_ITER(hh, db.by_name, p, tmp)
    {
        for (q = p; q && r == 0; q = q->same_name)
            r = dpkg_read_list(q, dpkg_dir, site_dirs, n_site);
    }
    HASH_ITER(hh, db.by_name, p, tmp)
    {
        for (q = p; q && r == 0; q = q->same_name)
            if (q->owner)
                r = dpkg_mark(&db, q);
    }
    HASH_ITER(hh, db.by_name, p, tmp)
    {
        for (q = p; q && r == 0; q = q->same_name)
            for (char **s = q->chosen ? q->data_paths : NULL; s && *s && r == 0; s++)
                r = dpkg_strv_add(&out, &n_out, *s, strlen(*s));
    }
    dpkg_db_free(&db);
    if (r < 0) {
        dpkg_strv_free(out);
        return r;
    }
    if (!out && !(out = calloc(1, sizeof(char *))))
        return -ENOMEM;
    qsort(out, n_out, sizeof(char *), dpkg_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n_out; i++) {
        if (k && strcmp(out[k - 1], out[i]) == 0)
            free(out[i]);
        else
            out[k++] = out[i];
    }
    out[k] = NULL;
    *ret = out;
    *ret_n = k;
    return 0;
}
