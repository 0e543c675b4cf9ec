// SPDX-License-Identifier: MIT
/*
 * toolbox — see toolbox.h.
 */
#include "jail/toolbox.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fmt.h"
#include "util/log.h"
#include "util/macros.h"

/* What python:3-slim gives a script: POSIX shells, coreutils, the text tools, archives. */
const char *const toolbox_default[] = {
    "sh",      "dash",     "bash",     "cat",      "chmod", "cp",      "date",      "dd",
    "df",      "echo",     "false",    "ln",       "ls",    "mkdir",   "mktemp",    "mv",
    "pwd",     "readlink", "rm",       "rmdir",    "sleep", "sync",    "touch",     "true",
    "uname",   "[",        "base64",   "basename", "cksum", "comm",    "cut",       "dirname",
    "du",      "env",      "expand",   "expr",     "fmt",   "fold",    "head",      "id",
    "install", "join",     "md5sum",   "mkfifo",   "nl",    "nohup",   "nproc",     "od",
    "paste",   "printenv", "printf",   "realpath", "seq",   "sha1sum", "sha256sum", "sha512sum",
    "shuf",    "sort",     "split",    "stat",     "tac",   "tail",    "tee",       "test",
    "timeout", "tr",       "truncate", "tsort",    "uniq",  "unlink",  "wc",        "whoami",
    "yes",     "grep",     "egrep",    "fgrep",    "sed",   "awk",     "find",      "xargs",
    "tar",     "gzip",     "gunzip",   "zcat",     "cmp",   "diff",    "which",     NULL};

void toolbox_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* ---- ELF: DT_NEEDED and DT_RUNPATH -------------------------------------------------------- */

static int elf_read(int fd, void *buf, size_t len, uint64_t off)
{
    if (len > TOOLBOX_ELF_MAX || off > (uint64_t)INT64_MAX)
        return -ENOEXEC;
    ssize_t n = pread(fd, buf, len, (off_t)off);
    return n < 0 ? -errno : (size_t)n == len ? 0 : -ENOEXEC;
}

/* The file offset of virtual address vaddr, through the PT_LOAD segments. */
static int elf_offset(const ElfW(Phdr) * ph, size_t n, uint64_t vaddr, uint64_t *ret)
{
    for (size_t i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
            vaddr - ph[i].p_vaddr < ph[i].p_filesz) {
            *ret = vaddr - ph[i].p_vaddr + ph[i].p_offset;
            return 0;
        }
    return -ENOEXEC;
}

static int elf_dynamic(int fd, const ElfW(Phdr) * ph, size_t nph, char ***ret_needed,
                       char **ret_runpath)
{
    const ElfW(Phdr) *dyn = NULL;
    for (size_t i = 0; i < nph; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn = &ph[i];
    if (!dyn)
        return 0; /* a static program */
    size_t nd = dyn->p_filesz / sizeof(ElfW(Dyn));
    if (nd > TOOLBOX_ELF_MAX / sizeof(ElfW(Dyn)))
        return -ENOEXEC;
    _cleanup_free_ ElfW(Dyn) *d = malloc((nd + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    int r = elf_read(fd, d, nd * sizeof(*d), dyn->p_offset);
    if (r < 0)
        return r;
    uint64_t strtab = 0, strsz = 0, runpath = UINT64_MAX;
    size_t n_needed = 0;
    for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL; i++) {
        if (d[i].d_tag == DT_STRTAB)
            strtab = d[i].d_un.d_ptr;
        else if (d[i].d_tag == DT_STRSZ)
            strsz = d[i].d_un.d_val;
        else if (d[i].d_tag == DT_NEEDED)
            n_needed++;
        else if (d[i].d_tag == DT_RUNPATH || (d[i].d_tag == DT_RPATH && runpath == UINT64_MAX))
            runpath = d[i].d_un.d_val;
    }
    uint64_t stroff;
    if (!strsz || strsz > TOOLBOX_ELF_MAX || elf_offset(ph, nph, strtab, &stroff) < 0)
        return -ENOEXEC;
    _cleanup_free_ char *str = malloc(strsz + 1);
    if (!str)
        return -ENOMEM;
    if ((r = elf_read(fd, str, strsz, stroff)) < 0)
        return r;
    str[strsz] = '\0'; /* a string running off the table ends there */
    char **needed = calloc(n_needed + 1, sizeof(*needed));
    if (!needed)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL; i++) {
        if (d[i].d_tag != DT_NEEDED)
            continue;
        if (d[i].d_un.d_val >= strsz || !(needed[k++] = strdup(str + d[i].d_un.d_val))) {
            toolbox_strv_free(needed);
            return d[i].d_un.d_val >= strsz ? -ENOEXEC : -ENOMEM;
        }
    }
    if (runpath < strsz && !(*ret_runpath = strdup(str + runpath))) {
        toolbox_strv_free(needed);
        return -ENOMEM;
    }
    *ret_needed = needed;
    return 0;
}

int toolbox_elf_needed(const char *file, char ***ret_needed, char **ret_runpath)
{
    *ret_needed = NULL;
    *ret_runpath = NULL;
    _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    ElfW(Ehdr) eh;
    ssize_t n = pread(fd, &eh, sizeof(eh), 0);
    if (n < 0)
        return -errno;
    if ((size_t)n < 4 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        /* a script: its interpreter is a program of its own */
        *ret_needed = calloc(1, sizeof(char *));
        return *ret_needed ? 0 : -ENOMEM;
    }
    bool native_data = eh.e_ident[EI_DATA] ==
                       (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB);
    if ((size_t)n < sizeof(eh) ||
        eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) || !native_data ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum > 256)
        return -ENOEXEC;
    _cleanup_free_ ElfW(Phdr) *ph = calloc(eh.e_phnum + 1u, sizeof(*ph));
    if (!ph)
        return -ENOMEM;
    int r = elf_read(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff);
    if (r < 0)
        return r;
    if ((r = elf_dynamic(fd, ph, eh.e_phnum, ret_needed, ret_runpath)) < 0)
        return r;
    if (!*ret_needed && !(*ret_needed = calloc(1, sizeof(char *))))
        return -ENOMEM;
    return 0;
}

/* ---- the closure -------------------------------------------------------------------------- */

struct toolbox {
    struct mount_plan *p;
    struct hostdeps_binds *b;
    const char *const *libdirs;
    struct hostdeps_stats st;
    char *seen[TOOLBOX_MAX_LIBS]; /* sonames looked for */
    size_t n_seen;
    struct toolbox_stage stage; /* root -1: a bind per file */
};

/* ---- the stage: one tmpfs of copies ------------------------------------------------------- */

/* A tmpfs of sandboxd's own, attached nowhere on the host: its root, or -errno when this
 * process may not make one (no CAP_SYS_ADMIN) or the kernel cannot clone a detached mount for
 * every spawn (before Linux 6.15: EINVAL), which is tried here once. */
static int toolbox_stage_mount(void)
{
    _cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return -errno;
    char size[32];
    snprintf(size, sizeof(size), "%llu", (unsigned long long)TOOLBOX_STAGE_MAX);
    if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
        syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
        syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return -errno;
    _cleanup_close_ int mnt =
        (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (mnt < 0)
        return -errno;
    _cleanup_close_ int probe =
        (int)syscall(SYS_open_tree, mnt, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (probe < 0)
        return -errno;
    return TAKE_FD(mnt);
}

/* Copy host file path (absolute, regular) into the stage at the same path, its mode without
 * any write bit for others and its times kept: 0 or -errno (nothing left behind). */
static int toolbox_stage_write(int root, const char *path, size_t *bytes)
{
    _cleanup_close_ int in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (in < 0)
        return -errno;
    struct stat st;
    if (fstat(in, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || path[0] != '/')
        return -EINVAL;
    _cleanup_free_ char *rel = strdup(path + 1);
    if (!rel)
        return -ENOMEM;
    for (char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        int r = mkdirat(root, rel, 0755) < 0 && errno != EEXIST ? -errno : 0;
        *s = '/';
        if (r < 0)
            return r;
    }
    _cleanup_close_ int out =
        openat(root, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return -errno;
    int r = 0;
    off_t off = 0;
    while (r == 0 && off < st.st_size) {
        ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));
        if (n < 0 && errno != EINTR)
            r = -errno;
        else if (n == 0)
            r = -EIO; /* it shrank while copied */
    }
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    if (r == 0 && (fchmod(out, st.st_mode & 0755) < 0 || futimens(out, times) < 0))
        r = -errno;
    if (r < 0) {
        unlinkat(root, rel, 0);
        return r;
    }
    *bytes += (size_t)st.st_size;
    return 0;
}

int toolbox_stage_open(struct toolbox_stage *ret)
{
    int fd = toolbox_stage_mount();
    *ret = (struct toolbox_stage){.root = fd < 0 ? -1 : fd};
    return fd < 0 ? fd : 0;
}

int toolbox_stage_copy(struct toolbox_stage *s, const char *final)
{
    int r = toolbox_stage_write(s->root, final, &s->bytes);
    if (r == 0)
        s->files++;
    return r;
}

int toolbox_stage_link(struct mount_plan *p, const char *final)
{
    _cleanup_free_ char *target = fmt_str("%s%s", TOOLBOX_DIR, final);
    return target ? mount_plan_symlink(p, target, final) : -ENOMEM;
}

int toolbox_stage_place(struct toolbox_stage *s, struct mount_plan *p, const char *final)
{
    int r = toolbox_stage_copy(s, final);
    return r < 0 ? r : toolbox_stage_link(p, final);
}

int toolbox_stage_seal(int root)
{
    /* The copies stay as they are: read-only for every clone made from here on. */
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
    if (syscall(SYS_mount_setattr, root, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0)
        return log_errno(LOG_ERROR, errno, "toolbox: cannot make its tmpfs read-only");
    return 0;
}

int toolbox_stage_attach(struct toolbox_stage *s, struct mount_plan *p)
{
    if (s->root < 0 || !s->files)
        return 0;
    int r = toolbox_stage_seal(s->root);
    if (r < 0)
        return r;
    int fd = TAKE_FD(s->root);
    return mount_plan_attach_tree(p, fd, "the toolbox's tmpfs", TOOLBOX_DIR);
}

void toolbox_stage_close(struct toolbox_stage *s)
{
    if (s->root >= 0)
        close(s->root);
    s->root = -1;
}

/* hostdeps_placer: final copied into the stage, and a symlink to the copy at its path (a
 * symlink is a file of the jail's root tmpfs, no mount); a bind when it cannot be copied. */
static int toolbox_stage_placer(void *ctx, struct mount_plan *p, const char *final)
{
    struct toolbox *t = ctx;
    int r = toolbox_stage_place(&t->stage, p, final);
    if (r == -ENOMEM || r == 0)
        return r;
    log_warn("toolbox: %s not copied (%s): bound on its own", final, strerror(-r));
    return mount_plan_bind_ro(p, final, NULL);
}

/* Make path (a program or library) and the links leading to it resolve inside the sandbox as
 * on the host; its canonical path in ret_final (caller frees). 0, -EPERM when it is setuid or
 * setgid, -EACCES when it could not be bound (not public, in the way), -ENOENT, -ENOMEM. */
static int toolbox_place(struct toolbox *t, const char *path, char **ret_final)
{
    struct hostdeps_chain c = {0};
    int r = hostdeps_resolve(path, &c);
    struct stat st;
    if (r == 0 && (stat(c.final, &st) < 0 || !S_ISREG(st.st_mode)))
        r = -ENOENT;
    if (r == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
        r = -EPERM; /* inert under nosuid and no_new_privs; still never handed out */
    bool dir;
    if (r == 0)
        r = hostdeps_apply_chain(
            t->p, t->b, &c,
            t->stage.root >= 0 ? &(struct hostdeps_placer){toolbox_stage_placer, t} : NULL, &t->st,
            &dir);
    if (r == 0 && !hostdeps_covered(t->b, c.final))
        r = -EACCES;
    if (r == 0)
        *ret_final = TAKE_PTR(c.final);
    hostdeps_chain_done(&c);
    return r;
}

/* Where soname lies for a file in dir origin with runpath: RUNPATH ($ORIGIN expanded), then
 * the library directories. NULL when nowhere (caller frees). */
static char *toolbox_find_lib(struct toolbox *t, const char *soname, const char *origin,
                              const char *runpath)
{
    char path[PATH_MAX];
    _cleanup_free_ char *rp = runpath ? strdup(runpath) : NULL;
    char *save = NULL;
    for (char *dir = rp ? strtok_r(rp, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
        bool o = strncmp(dir, "$ORIGIN", 7) == 0 || strncmp(dir, "${ORIGIN}", 9) == 0;
        const char *rest = o ? dir + (dir[1] == '{' ? 9 : 7) : dir;
        int n = snprintf(path, sizeof(path), "%s%s/%s", o ? origin : "", rest, soname);
        if (n > 0 && (size_t)n < sizeof(path) && path[0] == '/' && access(path, F_OK) == 0)
            return strdup(path);
    }
    for (size_t i = 0; t->libdirs && t->libdirs[i]; i++) {
        int n = snprintf(path, sizeof(path), "%s/%s", t->libdirs[i], soname);
        if (n > 0 && (size_t)n < sizeof(path) && access(path, F_OK) == 0)
            return strdup(path);
    }
    return NULL;
}

/* The libraries file needs, and theirs, placed in the sandbox (breadth first, each soname
 * once, TOOLBOX_MAX_LIBS in all). */
static int toolbox_libs(struct toolbox *t, const char *program, const char *file)
{
    char **needed = NULL, *runpath = NULL;
    int r = toolbox_elf_needed(file, &needed, &runpath);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        log_debug("toolbox: %s: no ELF dynamic section read (%s)", file, strerror(-r));
        return 0;
    }
    _cleanup_free_ char *origin = strdup(file);
    char *slash = origin ? strrchr(origin, '/') : NULL;
    if (slash)
        *slash = '\0';
    for (size_t i = 0; r == 0 && origin && needed[i]; i++) {
        bool seen = false;
        for (size_t k = 0; k < t->n_seen && !seen; k++)
            seen = strcmp(t->seen[k], needed[i]) == 0;
        if (seen)
            continue;
        if (t->n_seen == TOOLBOX_MAX_LIBS) {
            log_warn("toolbox: more than %d shared libraries; %s and later ones not checked",
                     TOOLBOX_MAX_LIBS, needed[i]);
            break;
        }
        if (!(t->seen[t->n_seen] = strdup(needed[i]))) {
            r = -ENOMEM;
            break;
        }
        const char *soname = t->seen[t->n_seen++];
        _cleanup_free_ char *lib = toolbox_find_lib(t, soname, origin, runpath);
        char *final = NULL;
        int pr = lib ? toolbox_place(t, lib, &final) : -ENOENT;
        if (pr == -ENOMEM)
            r = pr;
        else if (pr < 0)
            log_warn("toolbox: %s needs %s, which %s: it may not run in the sandbox", program,
                     soname, lib ? "cannot be bound" : "is not found on the host");
        else
            r = toolbox_libs(t, program, final);
        free(final);
    }
    if (!origin && r == 0)
        r = -ENOMEM;
    toolbox_strv_free(needed);
    free(runpath);
    return r;
}

/* The host path of program name (or name itself when it is a path), or NULL. */
static char *toolbox_which(const char *name)
{
    if (strchr(name, '/'))
        return name[0] == '/' ? strdup(name) : NULL;
    static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        char path[PATH_MAX];
        struct stat st;
        int n = snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
        if (n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            (st.st_mode & S_IXOTH))
            return strdup(path);
    }
    return NULL;
}

static int toolbox_program(struct toolbox *t, const char *name, bool quiet, size_t *ret_added)
{
    _cleanup_free_ char *path = toolbox_which(name);
    char *final = NULL;
    int r = path ? toolbox_place(t, path, &final) : -ENOENT;
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        if (!quiet || r == -EPERM)
            log_warn("toolbox: not adding '%s': %s", name,
                     r == -EPERM    ? "it is setuid or setgid, which the sandbox never gets"
                     : r == -EACCES ? "it is not world-readable, or lies where it cannot be bound"
                                    : "no such program on the host");
        return 0;
    }
    (*ret_added)++;
    r = toolbox_libs(t, name, final);
    free(final);
    return r;
}

int toolbox_add(struct mount_plan *p, struct hostdeps_binds *b, bool with_default,
                const char *const *extra, const char *const *libdirs, bool may_stage)
{
    struct toolbox *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    *t = (struct toolbox){.p = p, .b = b, .libdirs = libdirs, .stage = {.root = -1}};
    bool any = with_default || (extra && extra[0]);
    int sr = any && may_stage ? toolbox_stage_open(&t->stage) : 0;
    if (sr < 0)
        log_info("toolbox: a bind per file (%s: %s)",
                 sr == -EINVAL ? "this kernel cannot clone a detached mount (Linux < 6.15)"
                               : "no tmpfs of its own",
                 strerror(-sr));
    size_t added = 0;
    int r = 0;
    for (size_t i = 0; r == 0 && with_default && toolbox_default[i]; i++)
        r = toolbox_program(t, toolbox_default[i], true, &added);
    for (size_t i = 0; r == 0 && extra && extra[i]; i++)
        r = toolbox_program(t, extra[i], false, &added);
    if (r == 0)
        r = toolbox_stage_attach(&t->stage, p);
    if (r == 0 && any)
        log_info("toolbox: %zu programs, %zu libraries looked at (%zu links, %zu files copied "
                 "into one tmpfs, %zu KiB; %zu binds)",
                 added, t->n_seen, t->st.symlinks, t->stage.files, t->stage.bytes >> 10,
                 t->st.binds - t->stage.files);
    toolbox_stage_close(&t->stage);
    for (size_t i = 0; i < t->n_seen; i++)
        free(t->seen[i]);
    free(t);
    return r;
}
