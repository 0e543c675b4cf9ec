// SPDX-License-Identifier: MIT
/*
 * sandboxd-server — every command of sandboxd: the servers (serve, mcp), servers, migrate, and
 * run too. Users run `sandboxd` (src/main.c), which runs `run` itself and execs this binary
 * for the others. This file only dispatches to the subcommands in cmd/.
 */
#include <signal.h>
#include <stdio.h>
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
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "mcp") == 0)
        return cmd_mcp(argc - 1, argv + 1);
    if (strcmp(cmd, "servers") == 0)
        return cmd_servers(argc - 1, argv + 1);
    if (strcmp(cmd, "migrate") == 0)
        return cmd_migrate(argc - 1, argv + 1);
    return common_unknown_command(cmd);
}
