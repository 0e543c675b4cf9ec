// SPDX-License-Identifier: MIT
/*
 * toolbox — the programs a shell script expects (/bin/sh, bash, coreutils,
 * grep, sed, awk, find, tar, gzip, ...), found in every jail at their host
 * paths so that code written for a container (upstream's python:3-slim) that
 * shells out works. Each program is found on the host (/usr/local/bin,
 * /usr/bin, /bin), its symlinks recreated (/usr/bin/awk ->
 * /etc/alternatives/awk -> mawk), and so are the shared libraries it needs,
 * read from its ELF dynamic section, and theirs, when the jail lacks them
 * (usually they lie in the library directories it binds already).
 *
 * One mount, however many programs: every cell copies its mount namespace
 * at fork and tears it down at exit, so a bind per file (86 for the default
 * list) cost each pooled execution about 0.6 ms of CPU. The files are copied
 * at start-up into one tmpfs of sandboxd's own (fsopen/fsmount: attached
 * nowhere on the host, so nothing to clean up; about 8 MiB for the default
 * list, held while sandboxd runs), read-only, attached in every jail at
 * TOOLBOX_DIR; each host path is a symlink into it, made in the jail's root
 * tmpfs. Where that cannot be had (rootless, or a kernel before 6.15, which
 * cannot clone a detached mount) each file is bound on its own, as before.
 *
 * It never hands out a setuid or setgid program, nor anything that is not
 * world-readable; programs run under the same jail, limits and seccomp
 * filter as the interpreter (no_new_privs and nosuid hold for them). Parent
 * side, at start-up (jail_config_init); logs what it skipped.
 */
#ifndef SANDBOXD_JAIL_TOOLBOX_H
#define SANDBOXD_JAIL_TOOLBOX_H

#include <stddef.h>

#include "jail/hostdeps.h"
#include "jail/mount.h"

#define TOOLBOX_MAX_LIBS  512          /* shared libraries looked at per start, at most */
#define TOOLBOX_MAX_EXTRA 256          /* --toolbox-add entries */
#define TOOLBOX_ELF_MAX   (1u << 20)   /* bytes of headers and dynamic section read per file */
#define TOOLBOX_STAGE_MAX (256u << 20) /* bytes of copies in the toolbox's tmpfs */
#define TOOLBOX_DIR       "/sandboxd/toolbox" /* where the jail attaches it */

/* The names of the default toolbox (NULL-terminated, static). */
extern const char *const toolbox_default[];

/* The sonames file needs (DT_NEEDED, in order) and its RUNPATH or RPATH, read from its ELF
 * headers: 0 with *ret_needed (NULL-terminated; caller frees with toolbox_strv_free) and
 * *ret_runpath (caller frees; NULL when none); -ENOEXEC when file is not an ELF file of this
 * machine, or a dynamic section that does not fit; -errno when it cannot be read. A static
 * program or a script gives an empty list. */
int toolbox_elf_needed(const char *file, char ***ret_needed, char **ret_runpath);
void toolbox_strv_free(char **v);

/* The tmpfs of copies (above), for toolbox_add and for replaying what it placed
 * (jail/hostcache.h). */
struct toolbox_stage {
    int root; /* the tmpfs's root (owned), or -1 */
    size_t files, bytes;
};

/* A fresh tmpfs of sandboxd's own: 0, or -errno when this process may not make one (no
 * CAP_SYS_ADMIN) or the kernel cannot clone a detached mount for every spawn (before Linux 6.15:
 * -EINVAL); then ret->root is -1. */
int toolbox_stage_open(struct toolbox_stage *ret);
/* Copy final (the canonical host path of a regular file) into the stage at its own path: 0 or
 * -errno (nothing left behind). Touches nothing but the stage: one thread may fill a stage
 * while another plans (jail/hostcache.h). */
int toolbox_stage_copy(struct toolbox_stage *s, const char *final);
/* Add to p the symlink at final that leads to its copy in the stage. 0 or -ENOMEM. */
int toolbox_stage_link(struct mount_plan *p, const char *final);
/* Both: 0 or -errno (the file could not be copied; nothing added to p). */
int toolbox_stage_place(struct toolbox_stage *s, struct mount_plan *p, const char *final);
/* Make the stage whose root is root read-only (every clone made from then on is). 0 or -errno
 * (logged). */
int toolbox_stage_seal(int root);
/* Seal the stage and attach it at TOOLBOX_DIR in p, which owns it from then on; nothing when no
 * file was copied. 0 or -errno. */
int toolbox_stage_attach(struct toolbox_stage *s, struct mount_plan *p);
/* Release a stage not attached (a no-op after toolbox_stage_attach). */
void toolbox_stage_close(struct toolbox_stage *s);

/* Add the default toolbox (unless with_default is false) and the programs extra (names looked
 * up on the host, or absolute paths; NULL-terminated, may be NULL) to plan p, whose binds b
 * hold the interpreter's directories; libdirs (NULL-terminated) are where a library is looked
 * for besides a program's RUNPATH. may_stage: the plan is spawned with cloned trees (not
 * rootless), so the files may be copied into one tmpfs (above); else a bind per file. A
 * default program the host lacks is skipped quietly, an extra one with a warning; a setuid or
 * setgid one is refused with a warning. 0 or -ENOMEM. */
int toolbox_add(struct mount_plan *p, struct hostdeps_binds *b, bool with_default,
                const char *const *extra, const char *const *libdirs, bool may_stage);

#endif
