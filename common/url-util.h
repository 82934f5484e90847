/* SPDX-License-Identifier: Apache-2.0 */
/* URL percent-encoding and decoding, shared by sbxd's query parser, MCP and the guest agent.
 * Pure. */
#pragma once

#include <stddef.h>

/* The value of one hexadecimal digit (either case), or -1. */
int hex_digit_value(int c);

/* Percent-decode s[0..len) ('+' becomes a space, as in form encoding) into a new NUL-terminated
 * string (caller frees). -EINVAL on a malformed escape or a NUL byte, raw or decoded as %00;
 * -ENOMEM. *ret is written only on success. */
int url_percent_decode(const char *s, size_t len, char **ret);

/* Append key=value (each percent-encoded: everything but RFC 3986 unreserved characters) to
 * *buf, separated by '&'. value NULL → bare key. *buf may be NULL initially. -ENOMEM. */
int url_query_append(char **buf, const char *key, const char *value);
