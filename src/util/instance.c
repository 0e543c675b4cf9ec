// SPDX-License-Identifier: MIT
/*
 * instance — see instance.h.
 */
#include "util/instance.h"

#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define INSTANCE_KEEP 22 /* characters of a host name kept before the hash */

static bool instance_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

const char *instance_id_check(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > INSTANCE_ID_MAX)
        return "an instance id has 1 to 31 characters";
    for (size_t i = 0; i < n; i++)
        if (!instance_char_ok(id[i]))
            return "an instance id has only letters, digits and '-'";
    if (id[0] == '-' || id[n - 1] == '-')
        return "an instance id neither begins nor ends with '-'";
    return NULL;
}

void instance_id_from_host(const char *host, char ret[INSTANCE_ID_MAX + 1])
{
    size_t label = strcspn(host, ".");
    if (label <= INSTANCE_ID_MAX) {
        memcpy(ret, host, label);
        ret[label] = '\0';
        if (!instance_id_check(ret))
            return;
    }
    /* Keep what can be kept of the label, readable, and make it unique with a hash of the
     * whole name: cutting alone would give pods "my-long-deployment-name-7d9f8-x2x4k" and
     * "my-long-deployment-name-7d9f8-q8z7m" the same id. */
    char keep[INSTANCE_KEEP + 1];
    size_t k = 0;
    for (size_t i = 0; i < label && k < INSTANCE_KEEP; i++) {
        char c = instance_char_ok(host[i]) ? host[i] : '-';
        if (c == '-' && k == 0)
            continue; /* no leading '-' */
        keep[k++] = c;
    }
    while (k && keep[k - 1] == '-')
        k--;
    keep[k] = '\0';
    unsigned char hash[crypto_generichash_BYTES_MIN];
    crypto_generichash(hash, sizeof(hash), (const unsigned char *)host, strlen(host), NULL, 0);
    snprintf(ret, INSTANCE_ID_MAX + 1, "%s%s%02x%02x%02x%02x", keep, k ? "-" : "h", hash[0],
             hash[1], hash[2], hash[3]);
}

int instance_id_default(char ret[INSTANCE_ID_MAX + 1])
{
    char host[HOST_NAME_MAX + 1];
    if (gethostname(host, sizeof(host)) < 0)
        return -errno;
    host[HOST_NAME_MAX] = '\0';
    instance_id_from_host(host, ret);
    return 0;
}
