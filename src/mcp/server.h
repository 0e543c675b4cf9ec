// SPDX-License-Identifier: MIT
#ifndef SANDBOXD_MCP_SERVER_H
#define SANDBOXD_MCP_SERVER_H
#endif
