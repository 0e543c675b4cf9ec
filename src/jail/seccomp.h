// SPDX-License-Identifier: MIT
/*
 * seccomp — the syscall policy of sandboxed processes, built with libseccomp
 * once at start-up and exported as a classic BPF program that children load
 * with a single syscall (no allocation after clone). The policy is an
 * allowlist sized for CPython; everything else fails with EPERM, a few calls
 * kill the process outright. docs/SECURITY.md lists every decision.
 */
#ifndef SANDBOXD_JAIL_SECCOMP_H
#define SANDBOXD_JAIL_SECCOMP_H

#include <linux/filter.h>

#include <stdbool.h>

/* Build the sandbox filter into *ret (ret->filter is heap memory, free with
 * jail_seccomp_free). tcp: the variant for executions with a network policy, which may also
 * create AF_INET and AF_INET6 stream sockets (TCP only; never raw, datagram or packet
 * sockets) to reach the egress proxy on their own loopback. Returns 0 or -errno (logged). */
int jail_seccomp_build(struct sock_fprog *ret, bool tcp);
void jail_seccomp_free(struct sock_fprog *prog);

#endif
