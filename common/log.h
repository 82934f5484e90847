/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One log sink per process. Text lines on stderr for the jailer and the agent; sbxd chooses
 * (--log-format): JSON lines on stderr, text lines, or the systemd journal (log-journal.h,
 * linked into sbxd only). Library code returns errors and does not log; edge code logs once:
 *     return log_error_errno(r, "mount %s: %m", path);
 * %m prints strerror(-r) for the *_errno variants.
 *
 * A thread may name the request and the sandbox it works for (log_context_set): every line it
 * logs then carries them as fields (JSON "req" and "sandbox", the journal's REQUEST_ID and
 * SANDBOX_ID), so `journalctl SANDBOX_ID=...` finds a sandbox's lines.
 */
#pragma once

#include <stddef.h>

#include "macros.h"

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARNING, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

enum log_style {
        LOG_STYLE_TEXT, /* "ident[pid]: level: message" */
        LOG_STYLE_JSON, /* {"ts","level","ident","msg"[,"req","sandbox"]} */
        LOG_STYLE_SINK, /* each line to the function given to log_set_sink */
};

/* The context fields a thread may set, and their bounds (longer values are cut). */
#define LOG_CONTEXT_REQUEST_MAX 24
#define LOG_CONTEXT_SANDBOX_MAX 64

struct log_line {
        enum log_level level;
        int error; /* the errno of a *_errno call, positive; 0 otherwise */
        const char *ident, *message;
        const char *request, *sandbox; /* the thread's context; NULL when unset */
};

/* json: LOG_STYLE_JSON when nonzero, else LOG_STYLE_TEXT. Level info, or debug when
 * SBX_LOG_LEVEL=debug. */
void log_setup(const char *ident, int json);
void log_set_style(enum log_style style);
/* Lines of a level above max are dropped (SBX_LOG_LEVEL=debug still keeps debug). */
void log_set_max_level(enum log_level max);
/* LOG_STYLE_SINK's writer (log-journal.c's), and the style set to it. */
void log_set_sink(void (*sink)(const struct log_line *line));

/* This thread's request id and sandbox id for the lines it logs next (NULL or "": unset). */
void log_context_set(const char *request, const char *sandbox);
/* The sandbox alone (the request stays): a create once its sandbox has an id. */
void log_context_set_sandbox(const char *sandbox);

int log_internal(enum log_level level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_error(...)   log_internal(LOG_LEVEL_ERROR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_info(...)    log_internal(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...)   log_internal(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
/* Log with errno r (negative or positive) and return -abs(r). */
#define log_error_errno(r, ...)   log_internal(LOG_LEVEL_ERROR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_internal(LOG_LEVEL_WARNING, (r), __VA_ARGS__)
