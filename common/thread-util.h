/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/* Start fn(arg) on a detached thread with a stack of stack_size bytes (0: glibc's default).
 * 0, or -errno (nothing started: arg is still the caller's). */
int thread_start_detached(void *(*fn)(void *), void *arg, size_t stack_size);
