/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON for the Connect streams envd speaks (docs/e2b-wire.md §3.3-3.5): the
 * ProcessEvent messages of the process.Process/Start and Connect streams, and the Connect
 * headers those streams read. (Error bodies and envelopes are core/request.h's.) Output follows
 * proto3 canonical JSON as envd (connect-go, protojson) emits it: lowerCamelCase names, bytes as
 * padded standard base64, default values omitted. All builders return a malloc'd NUL-terminated
 * string (caller frees) and its length, or -ENOMEM. No I/O, no logging.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/exit-status.h"
#include "proc/outlog.h"

int cj_event_start(uint32_t pid, char **ret, size_t *ret_len);
int cj_event_data(enum agent_output_stream stream, const uint8_t *buf, size_t len, char **ret,
                  size_t *ret_len);
int cj_event_keepalive(char **ret, size_t *ret_len);
int cj_event_end(const struct agent_exit *e, char **ret, size_t *ret_len);

/* Decode a proto3 JSON `bytes` value: standard or URL-safe base64, padded or not. Allocates
 * *ret (caller frees; non-NULL even for empty input). -EINVAL for invalid base64. */
int cj_bytes_decode(const char *s, uint8_t **ret, size_t *ret_len);

/* Connect-Timeout-Ms (1..10 digits; NULL → 0 = none). -EINVAL when malformed. */
int agent_parse_connect_timeout(const char *s, int64_t *ret);

/* Keepalive-Ping-Interval in seconds (90 when absent or invalid, at most a day). */
int agent_parse_keepalive(const char *s);
