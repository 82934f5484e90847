/* SPDX-License-Identifier: Apache-2.0 */
/* Connect protocol (JSON codec) envelopes and error codes: docs/e2b-wire.md §3.3. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define CONNECT_ENVELOPE_HEADER_SIZE 5u
#define CONNECT_FLAG_COMPRESSED      0x01u
#define CONNECT_FLAG_END_STREAM      0x02u
/* Largest single enveloped request message sbx accepts (a StartRequest, a SendInput...). */
#define CONNECT_MAX_MESSAGE (4u * 1024u * 1024u)

void connect_envelope_header(uint8_t out[CONNECT_ENVELOPE_HEADER_SIZE], uint8_t flags,
                             uint32_t len);

/* Parse one enveloped message from buf. Returns the number of bytes consumed (> 0), 0 when
 * more bytes are needed, -EPROTO for a compressed or unknown flag, -EMSGSIZE past max.
 * *ret_msg points into buf. */
long connect_envelope_parse(const uint8_t *buf, size_t len, size_t max, uint8_t *ret_flags,
                            const uint8_t **ret_msg, uint32_t *ret_msg_len);

/* HTTP status for a Connect error code string ("not_found" → 404); 500 for unknown codes. */
int connect_code_http_status(const char *code);
