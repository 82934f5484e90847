/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sudo's agent side: a listener on the abstract unix socket "sbx-sudo" (private to the
 * sandbox's network namespace) that runs commands as root (or another user) for the sandbox's
 * default user or root, asked by the client templates/base/sbx-sudo.c (installed as
 * /usr/bin/sudo in the base template). The command is started through core/spawn.h exactly as
 * envd's commands.run starts one (root: root's six capabilities, anyone else none; the sandbox's
 * seccomp and cgroup), with the client's stdin, stdout, stderr and working directory.
 *
 * Wire (the client's header says the same): "SBXSUDO1", a 32-bit little-endian length, then
 * that many bytes of NUL-terminated fields "u=USER", "f=FLAGS" (E, i, s), "a=ARG"...,
 * "e=NAME=VALUE"...; SCM_RIGHTS with 4 fds (stdin, stdout, stderr, cwd) on the first bytes.
 * Then the client sends one byte per signal to forward; the agent answers "X" + a 32-bit exit
 * code, "K" + a 32-bit signal number, or "E" + a 16-bit length + a message.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/users.h"

#define AGENT_SUDO_SOCKET       "sbx-sudo" /* abstract */
#define AGENT_SUDO_MAGIC        "SBXSUDO1"
#define AGENT_SUDO_HEAD         12
#define AGENT_SUDO_MAX_REQUEST  (1024u * 1024u) /* bytes after the header */
#define AGENT_SUDO_MAX_ARGS     4096u           /* a= fields */
#define AGENT_SUDO_MAX_ENVS     4096u           /* e= fields */
#define AGENT_SUDO_MAX_SESSIONS 32u             /* at once; more are refused */
#define AGENT_SUDO_REQUEST_MS   10000           /* to send the whole request */
#define AGENT_SUDO_LINGER_MS    1000            /* after a refusal, for the client to read it */
#define AGENT_SUDO_FDS          4               /* stdin, stdout, stderr, cwd */

/* A parsed request; the strings point into the request's bytes. */
struct agent_sudo_request {
        const char *user;  /* "root" when absent */
        bool keep_env;     /* -E */
        bool login;        /* -i */
        bool shell;        /* -s */
        const char **argv; /* NULL-terminated; may be empty with -i / -s */
        size_t n_argv;
        const char **envp; /* the client's environment, NULL-terminated */
        size_t n_envp;
};

/* Parse len bytes of fields. -EINVAL with a message in err (a field that is not NUL-terminated,
 * unknown or repeated, a bad flag, no command without -i/-s, too many fields), -ENOMEM. On
 * success free ret->argv and ret->envp (agent_sudo_request_done). */
int agent_sudo_request_parse(const char *buf, size_t len, struct agent_sudo_request *ret, char *err,
                             size_t errlen);
void agent_sudo_request_done(struct agent_sudo_request *r);

/*
 * What to run for r as target, called by caller (the peer's user): the argv (the command, or
 * target's shell with -s / -i: "-c" and the command's words, each escaped as sudo does) and
 * the variables the command gets on top of envd's environment for target (HOME, USER, LOGNAME,
 * SHELL, PATH and /init's envVars): the client's whole environment with -E (but HOME, USER,
 * LOGNAME, SHELL stay target's), else only TERM, COLORTERM, LANG, LANGUAGE, LC_*, DISPLAY and
 * TZ of it; always SUDO_USER, SUDO_UID, SUDO_GID and SUDO_COMMAND; last, the NAME=value words
 * before the command (as sudo takes them). The env is "NAME=VALUE" strings. Both
 * NULL-terminated, caller frees (strv_free). -EINVAL when there are only NAME=value words,
 * -ENOMEM.
 */
int agent_sudo_command(const struct agent_sudo_request *r, const struct agent_user *target,
                       const struct agent_user *caller, char ***ret_argv, char ***ret_env);

/* Whether word is one of those NAME=value words: a name of [A-Za-z0-9_] that does not start with
 * a digit, then '='. */
bool agent_sudo_is_assignment(const char *word);

/* Start the listener thread, once. Only as PID 1 of a pid namespace: outside a sandbox the
 * abstract name would be the host network namespace's, so nothing is started (returns 0). */
int agent_sudo_start(void);

/* Init loop hooks (routes.c): a reaped child; a stop signal for every sudo command. */
void agent_sudo_on_exit(pid_t pid, int code, int status);
void agent_sudo_signal_all(int sig);
