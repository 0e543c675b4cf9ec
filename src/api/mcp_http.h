// SPDX-License-Identifier: MIT
#ifndef SANDBOXD_API_MCP_HTTP_H
#define SANDBOXD_API_MCP_HTTP_H
#endif
