/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON for the Connect streams envd speaks (docs/e2b-wire.md §3.3-3.5): the
 * ProcessEvent messages of a process.Process/Start stream, end-of-stream frames and Connect
 * error bodies. Output follows proto3 canonical JSON as envd (connect-go, protojson) emits it:
 * lowerCamelCase names, bytes as padded standard base64, default values omitted.
 * All builders return a malloc'd NUL-terminated string (caller frees) and its length, or
 * -ENOMEM. No I/O, no logging.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum agent_output_stream { AGENT_OUT_STDOUT, AGENT_OUT_STDERR, AGENT_OUT_PTY };

/* How a process ended, in the terms of Go's os.ProcessState that envd reports. */
struct agent_exit {
        int32_t exit_code; /* -1 when signalled */
        bool exited;       /* false when signalled */
        bool has_error;    /* status is also the error text (non-zero exit or signal) */
        char status[96];   /* "exit status 1", "signal: killed", "... (core dumped)" */
};

/* Fill *ret from a waitid() si_code (CLD_EXITED, CLD_KILLED, CLD_DUMPED) and si_status. */
void agent_exit_from_siginfo(int code, int status, struct agent_exit *ret);

/* Go's text for a signal ("killed", "terminated"; "signal 42" when unnamed). */
const char *agent_signal_name(int sig, char buf[static 16]);

int cj_event_start(uint32_t pid, char **ret, size_t *ret_len);
int cj_event_data(enum agent_output_stream stream, const uint8_t *buf, size_t len, char **ret,
                  size_t *ret_len);
int cj_event_keepalive(char **ret, size_t *ret_len);
int cj_event_end(const struct agent_exit *e, char **ret, size_t *ret_len);

/* End-of-stream payloads: `{}` and `{"error":{"code":..,"message":..}}`. */
int cj_end_stream_ok(char **ret, size_t *ret_len);
int cj_end_stream_error(const char *code, const char *message, char **ret, size_t *ret_len);

/* Unary Connect error body `{"code":"not_found","message":".."}`. */
int cj_error_body(const char *code, const char *message, char **ret, size_t *ret_len);

/* REST error body `{"code":404,"message":".."}` as envd's jsonError writes it. */
int cj_rest_error_body(int status, const char *message, char **ret, size_t *ret_len);

/* Decode a proto3 JSON `bytes` value: standard or URL-safe base64, padded or not. Allocates
 * *ret (caller frees; non-NULL even for empty input). -EINVAL for invalid base64. */
int cj_bytes_decode(const char *s, uint8_t **ret, size_t *ret_len);

/* Wrap a message in a Connect envelope: flags, BE32 length, bytes. */
int cj_envelope(uint8_t flags, const char *msg, size_t msg_len, uint8_t **ret, size_t *ret_len);
