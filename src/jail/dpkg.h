// SPDX-License-Identifier: MIT
/*
 * dpkg — reads Debian's package database to find the data that Python
 * packages reach by an absolute path outside their site directory
 * (matplotlib's /usr/share/matplotlib, the fonts and JavaScript its data
 * package depends on, tzdata's zoneinfo), so that the jail can bind it
 * without a hand-kept list.
 *
 * The rule: every installed package with a file in a site directory is an
 * owner. A data-only package (every file it installs lies under /usr/share
 * or /etc) that an owner depends on (Depends, Pre-Depends; the first
 * installed alternative), directly or through other data-only packages,
 * contributes what it installs under /usr/share and /etc: per
 * /usr/share/<name> (or /etc/<name>), the deepest directory holding all of
 * its files there, or the file itself when it lies directly in /usr/share
 * or /etc (matplotlib's /etc/matplotlibrc). Documentation (doc, doc-base,
 * man, info, lintian, bug, locale) is left out. Only data-only packages
 * contribute /etc files: the configuration of anything else is none of the
 * sandbox's business. Read-only, parent side, at start-up; never logs (the
 * caller does).
 */
#ifndef SANDBOXD_JAIL_DPKG_H
#define SANDBOXD_JAIL_DPKG_H

#include <stddef.h>

#define DPKG_MAX_FILE     (64u << 20) /* bytes of the status file or of one file list */
#define DPKG_MAX_PACKAGES 100000

/* The data paths (directories, or a file lying directly in /usr/share or /etc) for site_dirs
 * (canonical directories), sorted, without duplicates; *ret is a NULL-terminated array the caller
 * frees with dpkg_paths_free. dpkg_dir is the database ("/var/lib/dpkg"). -ENOENT when it has no
 * status file, -EFBIG when a file is over DPKG_MAX_FILE, -E2BIG past DPKG_MAX_PACKAGES,
 * -ENOMEM. */
int dpkg_data_paths(const char *dpkg_dir, char *const *site_dirs, size_t n_site, char ***ret,
                    size_t *ret_n);
void dpkg_paths_free(char **paths);

#endif
