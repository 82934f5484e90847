/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-agent loopback to the envd process machinery, for the native (/v1, port 0) routes.
 *
 * Rather than keeping a second process table, a native route starts its process through the
 * agent's own process.Process/Start handler: a socketpair, one end served by
 * agent_server_serve() on a new thread exactly as a connection from sbxd would be, the other
 * end read here as a stream of ProcessEvents. Users, environment, cwd, PTYs, deadlines
 * (Connect-Timeout-Ms), reaping and the unary table queries (agent_process_signal/input_fd)
 * are then the same code as envd's. Closing the stream detaches: the process keeps running
 * under its own deadline (the pump drains and drops its output).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct native_spec {
        const char *const *argv; /* argv[0] is searched in PATH */
        const char *cwd;         /* NULL: the default workdir / home */
        const char *user;        /* NULL: the default user */
        const cJSON *envs;       /* object of strings or NULL */
        const char *tag;         /* NULL: none */
        bool stdin_pipe;
        bool pty;
        unsigned cols, rows;
        int64_t timeout_ms; /* 0: none */
};

enum native_event_kind {
        NATIVE_EV_DATA,      /* stream 0 stdout, 1 stderr, 2 pty; data/len valid until next */
        NATIVE_EV_END,       /* exit_code (-1 when signalled), status text */
        NATIVE_EV_ERROR,     /* a Connect error: code, message (deadline_exceeded, ...) */
        NATIVE_EV_KEEPALIVE, /* nothing */
};

struct native_event {
        enum native_event_kind kind;
        int stream;
        uint8_t *data; /* owned by the event (freed by native_event_done) */
        size_t len;
        int exit_code;
        char status[96];
        char code[40];
        char message[512];
};
void native_event_done(struct native_event *ev);

struct native_stream;

/* Start the process and read up to its start event. On success *ret is the stream and *ret_pid
 * the pid. On failure returns -errno and, when the agent refused with a Connect error, puts
 * its code and message into errbuf ("code: message"). */
int native_stream_start(const struct native_spec *s, struct native_stream **ret, int *ret_pid,
                        char *errbuf, size_t errlen);
/* The fd to poll for the next event (POLLIN). */
int native_stream_fd(const struct native_stream *st);
/* Read the next event (blocking). 0 on success, -EPIPE when the stream ended (after END or
 * ERROR), -errno on protocol errors. */
int native_stream_next(struct native_stream *st, struct native_event *ev);
/* Close (detach); accepts NULL. */
void native_stream_close(struct native_stream *st);
static inline void native_stream_closep(struct native_stream **st)
{
        native_stream_close(*st);
}
#define _cleanup_native_stream_ __attribute__((cleanup(native_stream_closep)))

/* Copy s[0..len) replacing invalid UTF-8 with U+FFFD (JSON strings must be UTF-8). NULL on
 * ENOMEM. */
char *native_utf8_dup(const uint8_t *s, size_t len);
