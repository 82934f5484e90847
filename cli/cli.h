/* SPDX-License-Identifier: Apache-2.0 */
/* The sbx CLI's core: configuration, one HTTP call (libcurl), output helpers. */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_MAX_RESPONSE (512u * 1024u * 1024u)

struct cli {
        char *url; /* no trailing slash */
        char *key;
        const char *state_dir; /* $SBX_STATE_DIR or /var/lib/sbx */
        bool json;
};

/* SBX_URL / SBX_API_KEY, else E2B_API_URL / E2B_API_KEY, else the local state dir
 * ($SBX_STATE_DIR or /var/lib/sbx: the first key of its keys file) and http://127.0.0.1:3000. */
int cli_config(struct cli *c);
void cli_done(struct cli *c);

struct cli_resp {
        long status;
        char *body; /* NUL-terminated */
        size_t len;
        char session[112]; /* Mcp-Session-Id, when sent (sbxd: at most 96 chars) */
};
void cli_resp_done(struct cli_resp *r);

/* One request; extra is one "Name: value" header or NULL. 0, or -errno when no answer. */
int cli_http(const struct cli *c, const char *method, const char *path, const char *ctype,
             const void *body, size_t len, const char *extra, struct cli_resp *ret);
/* A POST whose body, size bytes of type ctype, is streamed from f. As cli_http(). */
int cli_http_upload(const struct cli *c, const char *path, const char *ctype, FILE *f,
                    uint64_t size, struct cli_resp *ret);

/* Print the error of a >= 400 answer ("sbx: message") and return 1. */
int cli_fail(const struct cli_resp *r);

/* Percent-encode s into a malloc'd string. */
char *cli_escape(const char *s);

/* Commands (cli-cmd.c, cli-mcp.c). argv starts after the command word(s). Exit codes. */
int cli_cmd_status(struct cli *c, int argc, char **argv);
int cli_cmd_keys(struct cli *c, int argc, char **argv);
/* sbx key create|ls|revoke: the local keys file (cli-key.c). */
int cli_cmd_key(struct cli *c, int argc, char **argv);
int cli_cmd_sandbox(struct cli *c, int argc, char **argv);
int cli_cmd_files(struct cli *c, int argc, char **argv);
int cli_cmd_mcp(struct cli *c, int argc, char **argv);
int cli_cmd_node(struct cli *c, int argc, char **argv);    /* cli-node.c */
int cli_cmd_storage(struct cli *c, int argc, char **argv); /* cli-storage.c */
/* "<used>/<size> MiB" of a JSON object's bytes used_key and MiB size_key ("-" when there is no
 * used_key: a disk outside the storage pool). cli-storage.c */
void cli_disk_figure(const cJSON *o, const char *used_key, const char *size_key, char *buf,
                     size_t len);
/* sbx image import NAME[:TAG] FILE [--ref REF] | ls | rm NAME[:TAG]... (cli-image.c). */
int cli_cmd_image(struct cli *c, int argc, char **argv);
int cli_cmd_image_pull(struct cli *c, int argc, char **argv); /* cli-pull.c */
/* Interactive terminal over WebSocket; returns the remote shell's exit code (cli-term.c). */
int cli_cmd_terminal(struct cli *c, const char *id);
