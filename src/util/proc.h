// SPDX-License-Identifier: MIT
/*
 * proc — reaping child processes: waitpid() retried on EINTR, and the
 * kill-and-reap every error path of a spawner ends with.
 */
#ifndef SANDBOXD_UTIL_PROC_H
#define SANDBOXD_UTIL_PROC_H

#include <sys/types.h>

/* Wait for child pid to exit (blocking; EINTR retried). Its wait status goes to *status
 * (may be NULL). pid, or -errno (-ECHILD: not our child, or already reaped). */
int proc_wait(pid_t pid, int *status);
/* SIGKILL child pid and reap it; for paths where its exit status means nothing. */
void proc_kill_wait(pid_t pid);

#endif
