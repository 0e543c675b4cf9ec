// SPDX-License-Identifier: MIT
/*
 * sni — see sni.h.
 *
 * The handshake message may span TLS records; the records are walked by their headers first
 * (cheap) and the payloads gathered only once every record the message needs is complete,
 * so a client that trickles its hello one byte at a time costs a header walk per read.
 */
#include "egress/sni.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define SNI_RECORD_MAX  16384 /* TLSPlaintext.length */
#define SNI_RECORDS_MAX 8
#define SNI_HANDSHAKE   22
#define SNI_HELLO       1
#define SNI_EXT_NAME    0
#define SNI_HOST_NAME   0

struct sni_reader {
    const uint8_t *p, *end;
};

static int sni_take(struct sni_reader *r, size_t n, const uint8_t **ret)
{
    if ((size_t)(r->end - r->p) < n)
        return -EBADMSG;
    *ret = r->p;
    r->p += n;
    return 0;
}

static int sni_u8(struct sni_reader *r, unsigned *ret)
{
    const uint8_t *b;
    int e = sni_take(r, 1, &b);
    if (e == 0)
        *ret = b[0];
    return e;
}

static int sni_u16(struct sni_reader *r, unsigned *ret)
{
    const uint8_t *b;
    int e = sni_take(r, 2, &b);
    if (e == 0)
        *ret = (unsigned)b[0] << 8 | b[1];
    return e;
}

/* A sub-reader over the next n bytes. */
static int sni_sub(struct sni_reader *r, size_t n, struct sni_reader *ret)
{
    const uint8_t *b;
    int e = sni_take(r, n, &b);
    if (e == 0)
        *ret = (struct sni_reader){b, b + n};
    return e;
}

/* The server_name extension's body: one host_name entry. */
static int sni_names(struct sni_reader ext, char *ret_name, size_t cap)
{
    unsigned list_len, type, len;
    struct sni_reader list;
    const uint8_t *name;
    if (sni_u16(&ext, &list_len) < 0 || sni_sub(&ext, list_len, &list) < 0 || ext.p != ext.end)
        return -EBADMSG;
    bool found = false;
    while (list.p < list.end) {
        if (sni_u8(&list, &type) < 0 || sni_u16(&list, &len) < 0 || sni_take(&list, len, &name))
            return -EBADMSG;
        if (type != SNI_HOST_NAME)
            continue;
        if (found || len == 0 || len >= cap || memchr(name, '\0', len))
            return -EBADMSG; /* RFC 6066: at most one name of each type */
        memcpy(ret_name, name, len);
        ret_name[len] = '\0';
        found = true;
    }
    return found ? EGRESS_SNI_FOUND : EGRESS_SNI_NONE;
}

/* The ClientHello body (after the 4-byte handshake header). */
static int sni_hello(struct sni_reader r, char *ret_name, size_t cap)
{
    const uint8_t *skip;
    unsigned n;
    if (sni_take(&r, 2 + 32, &skip) < 0 ||                                     /* version, random */
        sni_u8(&r, &n) < 0 || n > 32 || sni_take(&r, n, &skip) < 0 ||          /* session id */
        sni_u16(&r, &n) < 0 || n < 2 || n % 2 || sni_take(&r, n, &skip) < 0 || /* suites */
        sni_u8(&r, &n) < 0 || n < 1 || sni_take(&r, n, &skip) < 0)             /* compression */
        return -EBADMSG;
    if (r.p == r.end)
        return EGRESS_SNI_NONE; /* no extensions at all */
    struct sni_reader exts;
    if (sni_u16(&r, &n) < 0 || sni_sub(&r, n, &exts) < 0 || r.p != r.end)
        return -EBADMSG;
    int result = EGRESS_SNI_NONE;
    while (exts.p < exts.end) {
        unsigned type, len;
        struct sni_reader body;
        if (sni_u16(&exts, &type) < 0 || sni_u16(&exts, &len) < 0 || sni_sub(&exts, len, &body))
            return -EBADMSG;
        if (type != SNI_EXT_NAME)
            continue;
        if (result != EGRESS_SNI_NONE)
            return -EBADMSG; /* a second server_name extension */
        result = sni_names(body, ret_name, cap);
        if (result < 0)
            return result;
    }
    return result;
}

int egress_sni_parse(const uint8_t *data, size_t len, char *ret_name, size_t name_cap,
                     size_t *ret_used)
{
    /* Walk the record headers: are the records that carry the whole message complete? The
     * handshake header (type, 24-bit length) is read as the payload bytes come. */
    size_t off = 0, payload = 0, need = 0;
    uint8_t hdr[4];
    size_t hdr_got = 0;
    unsigned records = 0;
    while (!need || payload < need) {
        if (len - off < 5)
            return EGRESS_SNI_MORE;
        const uint8_t *h = data + off;
        size_t rlen = (size_t)h[3] << 8 | h[4];
        if (h[0] != SNI_HANDSHAKE || h[1] != 3 || rlen == 0 || rlen > SNI_RECORD_MAX)
            return -EBADMSG;
        if (++records > SNI_RECORDS_MAX)
            return -EMSGSIZE;
        if (len - off - 5 < rlen)
            return EGRESS_SNI_MORE;
        for (size_t i = 0; i < rlen && hdr_got < 4; i++)
            hdr[hdr_got++] = h[5 + i];
        if (!need && hdr_got == 4) {
            if (hdr[0] != SNI_HELLO)
                return -EBADMSG;
            need = 4 + ((size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3]);
            if (need > EGRESS_HELLO_MAX)
                return -EMSGSIZE;
        }
        payload += rlen;
        off += 5 + rlen;
    }
    /* Gather the payloads: the message and at most the rest of its last record. */
    uint8_t hs[EGRESS_HELLO_MAX + SNI_RECORD_MAX];
    size_t got = 0;
    for (size_t o = 0; o < off;) {
        size_t rlen = (size_t)data[o + 3] << 8 | data[o + 4];
        memcpy(hs + got, data + o + 5, rlen);
        got += rlen;
        o += 5 + rlen;
    }
    if (ret_used)
        *ret_used = off;
    return sni_hello((struct sni_reader){hs + 4, hs + need}, ret_name, name_cap);
}
