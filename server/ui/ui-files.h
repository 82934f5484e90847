/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web console's static files (console/README.md), read once at start into memory: a fixed
 * table of names, each with its bytes, content type and ETag. A request can only ever name an
 * entry of that table (exact match), so no path a client sends reaches the file system: there is
 * nothing to traverse. Only regular files whose every path segment is [A-Za-z0-9_-][A-Za-z0-9._-]*
 * and whose extension has a content type (ui_content_type()) are taken; symlinks, hidden files
 * and anything past the bounds below are left out (and logged).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UI_MAX_FILES      512                /* files taken from the console dir */
#define UI_MAX_FILE_BYTES (8u * 1024 * 1024) /* one file */
#define UI_MAX_TOTAL      (32u * 1024 * 1024)
#define UI_MAX_DEPTH      4   /* directory levels below the console dir */
#define UI_MAX_NAME       200 /* bytes of a relative path */
#define UI_ETAG_LEN       18  /* '"' + 16 hex digits of the content's SHA-256 + '"' */

struct ui_file {
        char *name; /* relative path, e.g. "js/app.js" */
        uint8_t *data;
        size_t len;
        const char *content_type; /* static string */
        char etag[UI_ETAG_LEN + 1];
};

struct ui_files {
        char *dir; /* absolute path the files were read from */
        struct ui_file *files;
        size_t n;
        size_t total;
};

/* Read every servable file under dir. 0 with *ret (free with ui_files_free()), -ENOENT when dir
 * has no index.html, -ENOMEM, or open's -errno for dir itself. */
int ui_files_load(const char *dir, struct ui_files **ret);
void ui_files_free(struct ui_files *u);

/* The entry named name (relative, no leading '/'), NULL when there is none. Pure. */
const struct ui_file *ui_files_find(const struct ui_files *u, const char *name);

/* The Content-Type of a file name by its extension, NULL for a type the console does not serve.
 * Pure. */
const char *ui_content_type(const char *name);

/* Whether a relative path is one ui_files_load() may take: segments of [A-Za-z0-9._-], none
 * empty, none starting with '.', at most UI_MAX_NAME bytes. Pure. */
bool ui_name_valid(const char *name);

/* Whether an If-None-Match header value (a list of entity tags, weak or strong, or "*")
 * matches etag (weak comparison, RFC 9110 §13.1.2). Pure. */
bool ui_etag_matches(const char *if_none_match, const char *etag);
