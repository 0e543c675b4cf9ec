// SPDX-License-Identifier: MIT
/*
 * cmd — the subcommands of the sandboxd binary. Each returns the process
 * exit status.
 */
#ifndef SANDBOXD_CMD_CMD_H
#define SANDBOXD_CMD_CMD_H

int cmd_mcp(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_servers(int argc, char **argv);

#endif
