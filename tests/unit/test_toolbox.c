// SPDX-License-Identifier: MIT
/* Unit tests: jail/toolbox — DT_NEEDED and RUNPATH read from ELF files (the host's programs, a
 * hand-built file, and broken ones), and the plan operations that place a program, its links
 * and its libraries, refusing a setuid one: a bind per file, or copies in one tmpfs reached
 * through symlinks where this process and kernel can have that. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "jail/hostdeps.h"
#include "jail/mount.h"
#include "jail/toolbox.h"

static bool has(char **v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static void needs_of_host_programs(void **state)
{
    char **needed = NULL, *runpath = NULL;
    assert_int_equal(toolbox_elf_needed("/usr/bin/bash", &needed, &runpath), 0);
    assert_true(has(needed, "libc.so.6"));
    assert_null(runpath);
    toolbox_strv_free(needed);
    assert_int_equal(toolbox_elf_needed("/nonexistent/program", &needed, &runpath), -ENOENT);
    assert_null(needed);
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

/* A minimal dynamic ELF of this machine: one PT_LOAD over the file at address 0x1000, one
 * PT_DYNAMIC, two DT_NEEDED and a DT_RUNPATH. strsz and needed_off let a test break it. */
static void build_elf(const char *path, uint64_t strsz, uint64_t needed_off)
{
    static const char strtab[] = "\0libone.so.1\0libtwo.so.2\0$ORIGIN/../lib";
    struct {
        ElfW(Ehdr) eh;
        ElfW(Phdr) ph[2];
        ElfW(Dyn) dyn[6];
        char str[sizeof(strtab)];
    } f;
    memset(&f, 0, sizeof(f));
    memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
    f.eh.e_ident[EI_CLASS] = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
    f.eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
    f.eh.e_ident[EI_VERSION] = EV_CURRENT;
    f.eh.e_type = ET_DYN;
    f.eh.e_phoff = offsetof(__typeof__(f), ph);
    f.eh.e_phentsize = sizeof(ElfW(Phdr));
    f.eh.e_phnum = 2;
    f.eh.e_ehsize = sizeof(ElfW(Ehdr));
    f.ph[0] = (ElfW(Phdr)){.p_type = PT_LOAD,
                           .p_offset = 0,
                           .p_vaddr = 0x1000,
                           .p_filesz = sizeof(f),
                           .p_memsz = sizeof(f)};
    f.ph[1] = (ElfW(Phdr)){.p_type = PT_DYNAMIC,
                           .p_offset = offsetof(__typeof__(f), dyn),
                           .p_vaddr = 0x1000 + offsetof(__typeof__(f), dyn),
                           .p_filesz = sizeof(f.dyn)};
    f.dyn[0] = (ElfW(Dyn)){.d_tag = DT_STRTAB, .d_un.d_ptr = 0x1000 + offsetof(__typeof__(f), str)};
    f.dyn[1] = (ElfW(Dyn)){.d_tag = DT_STRSZ, .d_un.d_val = strsz};
    f.dyn[2] = (ElfW(Dyn)){.d_tag = DT_NEEDED, .d_un.d_val = needed_off};
    f.dyn[3] = (ElfW(Dyn)){.d_tag = DT_NEEDED, .d_un.d_val = 13};
    f.dyn[4] = (ElfW(Dyn)){.d_tag = DT_RUNPATH, .d_un.d_val = 25};
    f.dyn[5] = (ElfW(Dyn)){.d_tag = DT_NULL};
    memcpy(f.str, strtab, sizeof(strtab));
    write_file(path, &f, sizeof(f), 0755);
}

static void needs_of_built_and_broken_files(void **state)
{
    char dir[] = "/tmp/sbx-toolbox-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/prog", dir);
    char **needed = NULL, *runpath = NULL;

    build_elf(path, 40, 1);
    assert_int_equal(toolbox_elf_needed(path, &needed, &runpath), 0);
    assert_string_equal(needed[0], "libone.so.1");
    assert_string_equal(needed[1], "libtwo.so.2");
    assert_null(needed[2]);
    assert_string_equal(runpath, "$ORIGIN/../lib");
    toolbox_strv_free(needed);
    free(runpath);

    build_elf(path, 40, 4000); /* a name outside the string table */
    assert_int_equal(toolbox_elf_needed(path, &needed, &runpath), -ENOEXEC);
    assert_null(needed);
    build_elf(path, (uint64_t)TOOLBOX_ELF_MAX + 1, 1); /* a table larger than the cap */
    assert_int_equal(toolbox_elf_needed(path, &needed, &runpath), -ENOEXEC);

    /* truncated: the ELF header of bash, and nothing after it */
    unsigned char head[200];
    int fd = open("/usr/bin/bash", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, head, sizeof(head)), (ssize_t)sizeof(head));
    close(fd);
    write_file(path, head, 20, 0755);
    assert_int_equal(toolbox_elf_needed(path, &needed, &runpath), -ENOEXEC);

    /* a script: nothing to load, its interpreter is a program of its own */
    write_file(path, "#!/bin/sh\necho hi\n", 18, 0755);
    assert_int_equal(toolbox_elf_needed(path, &needed, &runpath), 0);
    assert_null(needed[0]);
    toolbox_strv_free(needed);
    unlink(path);
    rmdir(dir);
}

static void places_programs_links_and_libraries(void **state)
{
    char dir[] = "/tmp/sbx-toolbox-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0755), 0);
    char suid[256];
    snprintf(suid, sizeof(suid), "%s/suid-prog", dir);
    write_file(suid, "#!/bin/sh\n", 10, 04755);

    struct mount_plan p;
    mount_plan_init(&p);
    struct hostdeps_binds b = {0};
    const char *libdirs[] = {"/usr/lib/x86_64-linux-gnu",
                             "/lib/x86_64-linux-gnu",
                             "/usr/lib/aarch64-linux-gnu",
                             "/usr/lib64",
                             "/lib64",
                             NULL};
    const char *extra[] = {"/usr/bin/sh", "bash", suid, "no-such-program-anywhere", NULL};
    assert_int_equal(toolbox_add(&p, &b, false, extra, libdirs, false), 0);
    char sh[PATH_MAX], bash[PATH_MAX];
    assert_non_null(realpath("/usr/bin/sh", sh));
    assert_non_null(realpath("/usr/bin/bash", bash));
    assert_true(hostdeps_covered(&b, sh));   /* dash, where sh leads */
    assert_true(hostdeps_covered(&b, bash)); /* found on the PATH */
    assert_true(mount_plan_has(&p, "/usr/bin/sh") || strcmp(sh, "/usr/bin/sh") == 0);
    char **needed = NULL, *runpath = NULL;
    assert_int_equal(toolbox_elf_needed(bash, &needed, &runpath), 0);
    bool libc = false;
    for (size_t i = 0; i < b.n; i++)
        libc = libc || strstr(b.paths[i], "/libc.so.6") || strstr(b.paths[i], "/libc-");
    assert_true(libc); /* the closure: bash's libc, bound since nothing bound it before */
    toolbox_strv_free(needed);
    free(runpath);
    assert_false(hostdeps_covered(&b, suid)); /* setuid: refused */
    assert_false(mount_plan_has(&p, suid));
    hostdeps_binds_free(&b);
    mount_plan_done(&p);
    unlink(suid);
    rmdir(dir);
}

/* Can this process have the toolbox as one tmpfs: make a tmpfs of its own (root) and clone
 * the detached mount (Linux 6.15 and later; not under valgrind, which lacks fsopen)? Then the
 * toolbox must be one; elsewhere a bind per file. tests/attacks/test_toolbox.py holds a real
 * server to the kernel version. */
static bool stage_expected(void)
{
    int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return false;
    int mnt = syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0
                  ? -1
                  : (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
    int clone = mnt < 0 ? -1
                        : (int)syscall(SYS_open_tree, mnt, "",
                                       AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    bool ok = clone >= 0;
    const int fds[] = {clone, mnt, fs};
    for (size_t i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return ok;
}

/* The last op at dst (a bind comes after the empty file it is attached over). */
static const struct mount_op *op_at(const struct mount_plan *p, const char *dst)
{
    for (size_t i = p->n; i-- > 0;)
        if (strcmp(p->ops[i].dst, dst + 1) == 0) /* ops hold paths relative to the new root */
            return &p->ops[i];
    return NULL;
}

static void copies_in_one_tmpfs_behind_symlinks(void **state)
{
    struct mount_plan p;
    mount_plan_init(&p);
    struct hostdeps_binds b = {0};
    const char *libdirs[] = {"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", NULL};
    assert_int_equal(toolbox_add(&p, &b, true, NULL, libdirs, true), 0);
    size_t binds = 0;
    const struct mount_op *tree = NULL;
    for (size_t i = 0; i < p.n; i++)
        if (p.ops[i].kind == MOUNT_OP_BIND) {
            binds++;
            if (p.ops[i].src[0] != '/')
                tree = &p.ops[i];
        }
    char bash[PATH_MAX];
    assert_non_null(realpath("/usr/bin/bash", bash));
    const struct mount_op *at = op_at(&p, bash);
    assert_non_null(at);
    if (!stage_expected()) {
        assert_null(tree); /* a bind per file */
        assert_int_equal(at->kind, MOUNT_OP_BIND);
        assert_true(binds > 10);
        goto out;
    }
    assert_non_null(tree);
    assert_int_equal(binds, 1); /* the whole default list: one mount */
    assert_string_equal(tree->dst, TOOLBOX_DIR + 1);
    assert_int_equal(at->kind, MOUNT_OP_SYMLINK);
    char target[PATH_MAX + sizeof(TOOLBOX_DIR)];
    snprintf(target, sizeof(target), "%s%s", TOOLBOX_DIR, bash);
    assert_string_equal(at->src, target);
    /* The copy: same bytes count, no set-id or group/other write bits, read-only tmpfs. */
    struct stat host, copy;
    assert_int_equal(stat(bash, &host), 0);
    int fd = openat(tree->src_fd, bash + 1, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &copy), 0);
    close(fd);
    assert_int_equal(copy.st_size, host.st_size);
    assert_int_equal(copy.st_mode & 07777, host.st_mode & 0755);
    assert_int_equal(copy.st_mtim.tv_sec, host.st_mtim.tv_sec);
    errno = 0;
    assert_true(openat(tree->src_fd, "new-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644) < 0);
    assert_int_equal(errno, EROFS);
out:
    hostdeps_binds_free(&b);
    mount_plan_done(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(needs_of_host_programs),
        cmocka_unit_test(needs_of_built_and_broken_files),
        cmocka_unit_test(places_programs_links_and_libraries),
        cmocka_unit_test(copies_in_one_tmpfs_behind_symlinks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
