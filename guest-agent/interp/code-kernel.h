/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel processes of the code interpreter (guest-agent/interp/kernels/). A kernel is a user
 * process started through agent_spawn (CODE_KERNEL_USER: root's six capabilities, its own session),
 * with stdout/stderr pipes that carry the user's output, and the command line and transport
 * of its language's row (interp/code-lang.h): a one-shot unix socket in a root-only directory
 * (the peer's pid is checked), two FIFOs there, or an interactive shell's stdin and a marker on
 * its stderr. A kernel is owned by one context and used by one execution at a time (the
 * context's exec lock).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "interp/code-json.h"
#include "interp/code-lang.h"

/* The kernel programs: sbx's runtime, bound read-only from the host in every sandbox
 * (guest-agent/README.md, "Runtime"); they run with the image's own interpreters. */
#define CODE_KERNELS_DIR_DEFAULT "/.sbx/runtime/kernels"
/*
 * Kernels run as root whatever the /init default user is, as E2B's Jupyter server (a root
 * systemd service) runs its kernels: a context may use /root, HOME is /root. Sandbox root
 * holds root's six capabilities of the sandbox's user namespace (core/users.h
 * agent_user_caps()), so as E2B's root it can write into /home/user. The kernel's primary group
 * is also the default user's group and its umask CODE_KERNEL_UMASK; code-interpreter-v1 makes
 * /home/user group-writable. What a kernel writes there is root:user, mode 0664/0775: the
 * default user reads, changes and removes it (on E2B envd itself runs as root).
 */
#define CODE_KERNEL_USER  "root"
#define CODE_KERNEL_UMASK "002"

struct code_kernel {
        const struct code_language *lang; /* the row it was started from */
        pid_t pid;                        /* session and process-group leader */
        int pidfd;                        /* readable once the kernel exited */
        int sock;           /* protocol: the socket (CODE_TRANSPORT_SOCKET) or the answer FIFO
                               (CODE_TRANSPORT_FIFO, O_NONBLOCK), else -EBADF */
        int req_fd;         /* the request FIFO (CODE_TRANSPORT_FIFO), else -EBADF */
        bool genv_sent;     /* the first request carried the whole global env */
        int in_fd;          /* stdin pipe for command lines (CODE_TRANSPORT_SHELL), else -EBADF */
        int out_fd, err_fd; /* user stdout/stderr, O_NONBLOCK */
        char nonce[33];     /* CODE_TRANSPORT_SHELL: the marker's nonce */
        unsigned seq;       /* CODE_TRANSPORT_SHELL: the last command line sent */
        char **genv;        /* the global env the kernel last got (strv) */
        struct buf rbuf;    /* unparsed protocol bytes (socket, or bash stderr) */
};

/* The kernels directory: $SBX_CODE_KERNELS_DIR or CODE_KERNELS_DIR_DEFAULT. */
const char *code_kernels_dir(void);
/* Whether the kernel programs are there (the default language's program exists): every
 * sandbox with sbx's runtime. */
bool code_kernels_available(void);
/* The preload list of lang's row when the template ships it (the file exists), else NULL: its
 * default context's kernel imports it, and /init prewarms that kernel (code-lang.h). */
const char *code_kernel_preload(const struct code_language *lang);

/*
 * Start a kernel of lang in cwd as CODE_KERNEL_USER and wait until it is ready (preload: it
 * imports code_kernel_preload(lang) first, when there is one). timeout_ms bounds the wait.
 * -ENOENT unknown user, missing interpreter (lang->interpreter, searched in the agent's PATH,
 * which is the template's) or kernel program, -ETIMEDOUT, -ECHILD when the kernel exited while
 * starting (e.g. cwd missing), other -errno. On failure nothing is left running.
 */
int code_kernel_start(const struct code_language *lang, const char *cwd, bool preload,
                      int timeout_ms, struct code_kernel **ret);

/* SIGKILL the kernel's process group (if still alive) and free everything. NULL is fine. */
void code_kernel_free(struct code_kernel *k);

/* Send sig to the kernel's process group while the kernel is alive. */
void code_kernel_signal(struct code_kernel *k, int sig);

bool code_kernel_alive(struct code_kernel *k);

/* Where execution requests go: the request FIFO, the socket, or bash's stdin. */
static inline int code_kernel_request_fd(const struct code_kernel *k)
{
        return k->req_fd >= 0 ? k->req_fd : k->sock >= 0 ? k->sock : k->in_fd;
}

/* Write a whole request to the kernel. -ECHILD when the kernel is gone, other -errno. */
int code_kernel_send(struct code_kernel *k, const void *buf, size_t len);
