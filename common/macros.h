/* SPDX-License-Identifier: Apache-2.0 */
/* Cleanup attributes and small helpers shared by every component. Header-only. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _noreturn_     __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b)     ((a) < (b) ? (a) : (b))
#define MAX(a, b)     ((a) > (b) ? (a) : (b))

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _p_ = (p);                                                           \
                (p) = NULL;                                                                        \
                _p_;                                                                               \
        })
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _fd_ = (fd);                                                                   \
                (fd) = -EBADF;                                                                     \
                _fd_;                                                                              \
        })

static inline void freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* close() that preserves errno and accepts negative fds. Returns -EBADF for assignment. */
static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd)
{
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Negative errno from the current errno, never 0. */
static inline int negative_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}

static inline int streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        while (*a && *a == *b)
                a++, b++;
        return *a == *b;
}
