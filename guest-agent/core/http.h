/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small pure helpers for the request metadata that sbxd forwards in a REQ_HEAD: query strings,
 * percent-decoding, the Basic auth header and media-type parameters. No I/O, no logging.
 */
#pragma once

#include <stddef.h>

/* Find key in a raw query string ("a=1&b=%2F") and return its decoded value (caller frees).
 * A key present without '=' yields "". Returns 1 when found, 0 when absent (*ret untouched),
 * or -errno (-EINVAL on a malformed escape). The first occurrence wins. */
int http_query_get(const char *query, const char *key, char **ret);

/* Parse "Basic base64(user:password)" and return the user part (caller frees). Returns 1 when a
 * Basic credential was parsed, 0 when the header is not Basic auth, -EINVAL when it is malformed
 * (bad base64, no ':' or an embedded NUL). */
int http_basic_auth_user(const char *header, char **ret_user);

/* Media type of a Content-Type value, lower-cased and without parameters (caller frees). */
int http_media_type(const char *content_type, char **ret);

/* Value of parameter name (case-insensitive) in a header value like
 * `multipart/form-data; boundary="x"`, with quotes and backslash escapes removed. Returns 1
 * when found, 0 when absent, -errno. */
int http_header_param(const char *value, const char *name, char **ret);
