/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One log sink per process. Text lines on stderr for the jailer and the agent; JSON lines for
 * sbxd (log_set_json). Library code returns errors and does not log; edge code logs once:
 *     return log_error_errno(r, "mount %s: %m", path);
 * %m prints strerror(-r) for the *_errno variants.
 */
#pragma once

#include "macros.h"

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARNING, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_setup(const char *ident, int json);
int log_internal(enum log_level level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_error(...)   log_internal(LOG_LEVEL_ERROR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_info(...)    log_internal(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...)   log_internal(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
/* Log with errno r (negative or positive) and return -abs(r). */
#define log_error_errno(r, ...)   log_internal(LOG_LEVEL_ERROR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_internal(LOG_LEVEL_WARNING, (r), __VA_ARGS__)
