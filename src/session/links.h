// SPDX-License-Identifier: MIT
/*
 * links — host paths to the sessions' working directories that name no
 * host PID. A session's files are on the host at /proc/PID/root/tmp of its
 * interpreter; the runtime makes file:// URLs of them (save_file and
 * friends, for clients on the same host), but telling the sandbox that path
 * would tell it its host PID, which it has no need of. Instead each session
 * gets a symlink with a random name, in a directory of this process's own
 * (mode 0700, on a tmpfs where there is one: see links.c), pointing there; the sandbox learns
 * only the link's path, the client opens it on the host as before.
 *
 * The link dies with its session (session_links_remove); a crash leaves a
 * dangling link that only this user can traverse, to a path that process
 * permissions guard anyway. Used by session/session.c and table.c.
 * Thread-safe: the directory never changes after session_links_new().
 */
#ifndef SANDBOXD_SESSION_LINKS_H
#define SANDBOXD_SESSION_LINKS_H

#include <sys/types.h>

#define SESSION_LINK_NAME 24 /* hex characters of a link's name */

struct session_links;

/* Make the directory. 0, or -errno. */
int session_links_new(struct session_links **ret);
/* Remove the directory (and what links are left). NULL-safe. */
void session_links_free(struct session_links *l);
/* A new link to /proc/pid/root/tmp: its name (SESSION_LINK_NAME hex characters and a NUL) in
 * ret_name, its host path in *ret_path (caller frees). 0, or -errno. */
int session_links_add(struct session_links *l, pid_t pid, char ret_name[SESSION_LINK_NAME + 1],
                      char **ret_path);
/* Remove the link called name (NULL or "": nothing). */
void session_links_remove(struct session_links *l, const char *name);

#endif
