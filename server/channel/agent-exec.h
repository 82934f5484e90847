/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd running a shell command in a sandbox through the agent's own envd
 * (`POST /process.Process/Start` on port 49983, docs/e2b-wire.md §3.5): the same path, user
 * switch and process table as an SDK's commands.run. Used by template builds (each step) and
 * by the lifecycle (a template's start and ready commands).
 *
 * What the agent answers is untrusted: the Connect envelopes are read one at a time, each at
 * most AGENT_EXEC_MAX_EVENT bytes, and only typed fields are taken from them (a pid, output
 * bytes in base64, an exit code, an error's message).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_EXEC_MAX_EVENT (1024 * 1024) /* one Connect envelope of the answer */

enum agent_exec_stream { AGENT_EXEC_STDOUT, AGENT_EXEC_STDERR };

struct agent_exec {
        const char *cmd;    /* run as /bin/bash -l -c <cmd> */
        const char *user;   /* NULL: the sandbox's default user */
        const char *cwd;    /* NULL: the user's default workdir */
        const cJSON *envs;  /* object of strings, may be NULL */
        int64_t timeout_ms; /* the process's deadline (killed past it); 0: none */
        bool detach;        /* return once the process started (it keeps running) */
        /* called for each piece of output (not NUL-terminated); may be NULL */
        void (*output)(void *userdata, enum agent_exec_stream stream, const char *data, size_t len);
        void *userdata;
};

/* Run e in the sandbox at sandbox_dir. Returns 0 with *ret_exit_code (-1 when killed by a
 * signal or past its deadline; 0 when detached) once the process ended, or -errno: -EPROTO
 * for an answer that is not envd's, -ETIMEDOUT, -ENOENT (refused before it started: a
 * missing directory, with the agent's message in errmsg), -EIO (refused in the stream, an
 * unknown user: "<Connect code>: <message>" in errmsg), others from the channel. */
int agent_exec_run(const char *sandbox_dir, const struct agent_exec *e, int *ret_exit_code,
                   char *errmsg, size_t errlen);
