// SPDX-License-Identifier: MIT
/*
 * sni — the server name a TLS client asks for, read from the ClientHello it
 * sends first through a CONNECT tunnel (RFC 8446 4.1.2, RFC 6066 3), so the
 * proxy can refuse a tunnel whose TLS goes to another name than the one it
 * was opened for. Incremental (call again with more bytes), bounded (at most
 * EGRESS_HELLO_MAX bytes of handshake in at most 8 records), and strict: a
 * malformed hello, a second server_name extension or a second host name is
 * an error, never a guess. No allocation, no I/O.
 */
#ifndef SANDBOXD_EGRESS_SNI_H
#define SANDBOXD_EGRESS_SNI_H

#include <stddef.h>
#include <stdint.h>

#define EGRESS_HELLO_MAX (16u << 10) /* bytes of the ClientHello handshake message */

enum egress_sni_result {
    EGRESS_SNI_MORE = 0,  /* not complete yet: call again with more bytes */
    EGRESS_SNI_FOUND = 1, /* *ret_name holds the host name (NUL-terminated) */
    EGRESS_SNI_NONE = 2,  /* a complete ClientHello without a server name */
};

/* data[0..len) are the first bytes the client sent. Returns an egress_sni_result, -EBADMSG
 * when they are not a well-formed TLS ClientHello, -EMSGSIZE when it is larger than the
 * bounds. name_cap bytes of ret_name (at least 256). *ret_used (may be NULL) gets the bytes
 * of data the hello's records take. */
int egress_sni_parse(const uint8_t *data, size_t len, char *ret_name, size_t name_cap,
                     size_t *ret_used);

#endif
