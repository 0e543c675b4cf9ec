// SPDX-License-Identifier: MIT
/*
 * proc — see proc.h.
 */
#include "util/proc.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

int proc_wait(pid_t pid, int *status)
{
    int st = 0;
    pid_t r;
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    if (r < 0)
        return -errno;
    if (status)
        *status = st;
    return r;
}

void proc_kill_wait(pid_t pid)
{
    (void)kill(pid, SIGKILL);
    (void)proc_wait(pid, NULL); /* -ECHILD: someone reaped it already; nothing else to do */
}
