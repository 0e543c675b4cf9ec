// SPDX-License-Identifier: MIT
/*
 * handlers — the handler types of /execute as the wire names them
 * (context.handlerType, CONTRACT §3), one row each. Here, below every layer
 * that names them: the request's validation and dispatch (handlers/), the
 * counters of /metrics (metrics/) and a tenant's executions (tenant/) are
 * all made from this list, so a new type is one row. Its handler and its
 * case in handlers_execute() (handlers/dispatch.c) follow;
 * docs/internals/HACKING.md lists the rest.
 */
#ifndef SANDBOXD_PROTO_HANDLERS_H
#define SANDBOXD_PROTO_HANDLERS_H

#define HANDLER_TYPES(X) X(JIT) X(EXECUTOR) X(LLM) X(WORKFLOW)

/* "JIT", "EXECUTOR", ...: the names as initializers of a string array. */
#define HANDLER_TYPE_NAME_(name) #name,
#define HANDLER_TYPE_NAMES       HANDLER_TYPES(HANDLER_TYPE_NAME_)

#endif
