/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel syscalls that glibc 2.36 may lack a wrapper for. Guarded by meson has_function. */
#pragma once

#include "config.h"

#include <fcntl.h>
#include <linux/types.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !HAVE_PIDFD_OPEN
static inline int pidfd_open(pid_t pid, unsigned int flags)
{
        return (int)syscall(SYS_pidfd_open, pid, flags);
}
#endif

#if !HAVE_CLOSE_RANGE
static inline int close_range(unsigned int first, unsigned int last, int flags)
{
        return (int)syscall(SYS_close_range, first, last, flags);
}
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#if !HAVE_PIDFD_SEND_SIGNAL
static inline int pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned int flags)
{
        return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}
#endif

#if !HAVE_OPENAT2
#include <linux/openat2.h>
static inline int openat2(int dirfd, const char *path, struct open_how *how, size_t size)
{
        return (int)syscall(SYS_openat2, dirfd, path, how, size);
}
#else
#include <linux/openat2.h>
#endif
