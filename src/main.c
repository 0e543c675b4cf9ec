// SPDX-License-Identifier: MIT
/*
 * sandboxd — runs untrusted Python in per-execution Linux jails and connects
 * it to MCP tools. This file only dispatches to the subcommands in cmd/.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"

#ifndef SANDBOXD_VERSION
#define SANDBOXD_VERSION "0.0.0"
#endif

static const char main_usage[] = "Usage: sandboxd COMMAND [options]\n"
                                 "\n"
                                 "Commands:\n"
                                 "  serve   the HTTP server (/execute, sessions, /mcp)\n"
                                 "  run     run one Python file in a sandbox and print the result\n"
                                 "  mcp     an MCP server on stdin/stdout (run_python for MCP "
                                 "clients)\n"
                                 "  servers the MCP servers sandboxd would use from here, and what "
                                 "it skipped\n"
                                 "  migrate import mcp-server-code-execution-mode's saved tools "
                                 "and memories\n"

                                 "\n"
                                 "  sandboxd COMMAND --help   options of a command\n"
                                 "  sandboxd --version\n";

int main(int argc, char **argv)
{
    /* A closed client socket or sandbox pipe must surface as EPIPE, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        fputs(main_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("sandboxd %s\n", SANDBOXD_VERSION);
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(main_usage, stdout);
        return 0;
    }
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
    fprintf(stderr, "sandboxd: unknown command '%s'\n\n%s", cmd, main_usage);
    return 2;
}
