/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's seccomp policy: default allow, explicit denials at least as strong as Docker's
 * default profile, io_uring blocked, x32 and i386 refused with ENOSYS. Compiled once in the
 * jailer parent (libseccomp, exported as classic BPF), loaded last in the child, just before
 * execve. See jailer/README.md, "Seccomp".
 */
#pragma once

#include <linux/filter.h>
#include <stddef.h>

struct jail_seccomp {
        struct sock_fprog main;  /* libseccomp-generated: the deny list */
        struct sock_fprog extra; /* hand-written: "not in set" argument rules */
};

/* Builds both programs. Owned by *ret; free with jail_seccomp_done(). */
int jail_seccomp_compile(struct jail_seccomp *ret);

/* Installs both filters on the calling thread. no_new_privs must already be set. Async-signal
 * safe (two prctl calls), so it can run in the child right before execve. */
int jail_seccomp_load(const struct jail_seccomp *f);

void jail_seccomp_done(struct jail_seccomp *f);
