// SPDX-License-Identifier: MIT
/* Unit tests: jail/hostdeps (symlink chains resolved as the kernel does, and turned into plan
 * operations only for public targets) and jail/dpkg (the data directories of data-only
 * packages that the owners of a site directory depend on), on trees built in a temporary
 * directory: a fake /etc/alternatives chain, a fake package database. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "jail/dpkg.h"
#include "jail/hostdeps.h"
#include "jail/mount.h"

static char root[256];

static void mk(const char *rel, const char *content, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    /* mkdir -p of the parents */
    for (char *s = path + strlen(root) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            (void)mkdir(path, 0755);
            *s = '/';
        }
    if (!content) {
        assert_int_equal(mkdir(path, mode), 0);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

static void ln(const char *target, const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    assert_int_equal(symlink(target, path), 0);
}

static char *at(const char *rel)
{
    static char path[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/%s", root, rel);
    return path[k];
}

static int setup(void **state)
{
    snprintf(root, sizeof(root), "/tmp/sbx-hostdeps-XXXXXX");
    assert_non_null(mkdtemp(root));
    assert_int_equal(chmod(root, 0755), 0);
    /* Debian's BLAS: lib/libblas.so.3 -> <root>/etc/alternatives/libblas.so.3 ->
     * <root>/lib/blas/libblas.so.3 (inside the bound lib dir), and a link that leaves it. */
    mk("lib/blas/libblas.so.3", "blas", 0644);
    mk("etc/alternatives/.keep", "", 0644);
    ln(at("etc/alternatives/libblas.so.3"), "lib/libblas.so.3");
    ln(at("lib/blas/libblas.so.3"), "etc/alternatives/libblas.so.3");
    mk("opt/llvm/lib/libomp.so.5", "omp", 0644);
    ln("../opt/llvm/lib/libomp.so.5", "lib/libomp.so.5");
    mk("opt/llvm/lib/libunwind.so.1", "unwind", 0644);
    ln("../opt/llvm/lib/libunwind.so.1", "lib/libunwind.so.1");
    /* A package's web assets linked out of the site directory, a private file, a loop. */
    mk("share/js/jquery.min.js", "js", 0644);
    mk("site/pkg/__init__.py", "", 0644);
    ln("../../share/js/jquery.min.js", "site/pkg/jquery.js");
    mk("private/secret.txt", "secret", 0600);
    ln(at("private/secret.txt"), "site/pkg/secret.txt");
    ln("loop-b", "site/pkg/loop-a");
    ln("loop-a", "site/pkg/loop-b");
    ln("missing", "site/pkg/dangling");
    return 0;
}

static int teardown(void **state)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static void resolve_records_every_link_of_a_chain(void **state)
{
    struct hostdeps_chain c;
    assert_int_equal(hostdeps_resolve(at("lib/libblas.so.3"), &c), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.links[0], at("lib/libblas.so.3"));
    assert_string_equal(c.links[1], at("etc/alternatives/libblas.so.3"));
    assert_string_equal(c.texts[1], at("lib/blas/libblas.so.3"));
    assert_string_equal(c.final, at("lib/blas/libblas.so.3"));
    hostdeps_chain_done(&c);
    /* ".." after a link is taken from where the link points, as the kernel does */
    assert_int_equal(hostdeps_resolve(at("lib/libomp.so.5"), &c), 0);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.final, at("opt/llvm/lib/libomp.so.5"));
    hostdeps_chain_done(&c);
    assert_int_equal(hostdeps_resolve(at("site/pkg/loop-a"), &c), -ELOOP);
    assert_int_equal(hostdeps_resolve(at("site/pkg/dangling"), &c), -ENOENT);
}

static bool plan_has_kind(const struct mount_plan *p, const char *dst, enum mount_op_kind kind,
                          const char *src)
{
    while (*dst == '/')
        dst++;
    for (size_t i = 0; i < p->n; i++)
        if (p->ops[i].kind == kind && strcmp(p->ops[i].dst, dst) == 0 &&
            (!src || (p->ops[i].src && strcmp(p->ops[i].src, src) == 0)))
            return true;
    return false;
}

static void links_leaving_the_binds_are_replayed_and_targets_bound(void **state)
{
    struct mount_plan p;
    mount_plan_init(&p);
    struct hostdeps_binds b = {0};
    assert_int_equal(hostdeps_binds_add(&b, at("lib")), 0);
    assert_int_equal(hostdeps_binds_add(&b, at("site")), 0);
    char *roots[] = {strdup(at("lib")), strdup(at("site"))}; /* at() reuses its buffers */
    struct hostdeps_stats st = {0};
    assert_int_equal(hostdeps_add_links(&p, &b, roots, 2, 100000, &st), 0);
    /* the alternatives link is recreated where it is; its target was bound already */
    assert_true(plan_has_kind(&p, at("etc/alternatives/libblas.so.3"), MOUNT_OP_SYMLINK,
                              at("lib/blas/libblas.so.3")));
    assert_false(plan_has_kind(&p, at("lib/blas/libblas.so.3"), MOUNT_OP_BIND, NULL));
    /* targets outside the binds are bound at their own path, once; two or more in one
     * directory: the directory */
    assert_true(plan_has_kind(&p, at("opt/llvm/lib"), MOUNT_OP_BIND, NULL));
    assert_false(plan_has_kind(&p, at("opt/llvm/lib/libomp.so.5"), MOUNT_OP_BIND, NULL));
    assert_true(plan_has_kind(&p, at("share/js/jquery.min.js"), MOUNT_OP_BIND, NULL));
    assert_true(hostdeps_covered(&b, at("share/js/jquery.min.js")));
    /* never a file only its owner may read */
    assert_false(plan_has_kind(&p, at("private/secret.txt"), MOUNT_OP_BIND, NULL));
    assert_false(hostdeps_covered(&b, at("private/secret.txt")));
    assert_true(st.skipped >= 1);
    assert_int_equal(st.binds, 2);
    assert_false(st.truncated);
    /* the walk stops at its limit and says so */
    struct hostdeps_stats st2 = {0};
    assert_int_equal(hostdeps_add_links(&p, &b, roots, 2, 3, &st2), 0);
    assert_true(st2.truncated);
    hostdeps_binds_free(&b);
    mount_plan_done(&p);
    free(roots[0]);
    free(roots[1]);
}

static void dpkg_finds_the_data_of_the_owners_dependencies(void **state)
{
    /* python3-mpl owns files in the site dir and depends on mpl-data (data only), which
     * depends on fonts (data only); libfoo (a library) and tool-data (data, but nobody who
     * owns site files depends on it) contribute nothing; docs never count. */
    mk("dpkg/status",
       "Package: python3-mpl\nStatus: install ok installed\nArchitecture: amd64\n"
       "Depends: libfoo (>= 1), mpl-data | other-data, python3:any\n\n"
       "Package: mpl-data\nStatus: install ok installed\nArchitecture: all\n"
       "Depends: fonts\n\n"
       "Package: fonts\nStatus: install ok installed\nArchitecture: all\n\n"
       "Package: libfoo\nStatus: install ok installed\nArchitecture: amd64\n\n"
       "Package: tool-data\nStatus: install ok installed\nArchitecture: all\n\n"
       "Package: removed-data\nStatus: deinstall ok config-files\nArchitecture: all\n\n",
       0644);
    mk("dpkg/info/python3-mpl.list",
       "/.\n/site\n/site/mpl\n/site/mpl/__init__.py\n/usr/share/doc/python3-mpl/copyright\n", 0644);
    mk("dpkg/info/mpl-data.list",
       "/.\n/etc\n/etc/mplrc\n/usr/share/mpl\n/usr/share/mpl/data\n/usr/share/mpl/data/rc\n"
       "/usr/share/mpl/data/fonts/a.ttf\n/usr/share/doc/mpl-data/changelog.gz\n",
       0644);
    mk("dpkg/info/fonts:all.list",
       "/.\n/usr/share/fonts/truetype/dv\n/usr/share/fonts/truetype/dv/a.ttf\n"
       "/usr/share/fonts/truetype/dv/b.ttf\n/etc/fonts/conf.avail/57-dv.conf\n",
       0644);
    mk("dpkg/info/libfoo:amd64.list", "/.\n/usr/lib/x/libfoo.so.1\n/usr/share/foo/foo.dat\n", 0644);
    mk("dpkg/info/tool-data.list", "/.\n/usr/share/tool/x\n", 0644);
    char **paths = NULL;
    size_t n = 0;
    char *site[] = {"/site"};
    assert_int_equal(dpkg_data_paths(at("dpkg"), site, 1, &paths, &n), 0);
    const char *want[] = {"/etc/fonts/conf.avail", "/etc/mplrc", "/usr/share/fonts/truetype/dv",
                          "/usr/share/mpl/data"};
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(paths[i], want[i]);
    assert_null(paths[n]);
    dpkg_paths_free(paths);
    assert_int_equal(dpkg_data_paths(at("nope"), site, 1, &paths, &n), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resolve_records_every_link_of_a_chain),
        cmocka_unit_test(links_leaving_the_binds_are_replayed_and_targets_bound),
        cmocka_unit_test(dpkg_finds_the_data_of_the_owners_dependencies),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
