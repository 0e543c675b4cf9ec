// SPDX-License-Identifier: MIT
/*
 * selftest — at start-up, run the runtime's self-report inside a real jail
 * and compare what the sandboxed process observes (uid, pid 1, seccomp
 * mode, no_new_privs, capabilities, network interfaces, read-only root)
 * with what the configuration promises. A mismatch stops sandboxd with a
 * message naming the layer, so /healthz only ever reports verified facts.
 */
#ifndef SANDBOXD_JAIL_SELFTEST_H
#define SANDBOXD_JAIL_SELFTEST_H

#include <jansson.h>

#include "jail/jail.h"

/* 0 and the observed facts (new reference) when everything holds; -errno (logged) when the
 * jail cannot start or a layer is missing. */
int jail_selftest(const struct jail_config *cfg, json_t **ret_facts);

#endif
