// SPDX-License-Identifier: MIT
/*
 * sandboxd — the command users run. `sandboxd run` runs here, in a binary that loads only
 * libc, jansson, libseccomp and libsodium: a one-shot start must not pay for loading libcurl,
 * GnuTLS, libmicrohttpd and the thirty libraries behind them (about 6 ms of a start that the
 * bare interpreter makes in 10), which it never uses. Every other command is sandboxd-server
 * (src/server.c), found next to this binary and exec'd with the same arguments, so that it
 * keeps this process: its pid, argv[0], descriptors and environment.
 */
#include <signal.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/common.h"

int main(int argc, char **argv)
{
    /* A closed client socket or sandbox pipe must surface as EPIPE, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    int status = common_main_preamble(argc, argv);
    if (status >= 0)
        return status;
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    return common_exec_server(argv);
}
