/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP to one registry for one pull, with libcurl (server/pull/README.md, "Transport"): the
 * distribution API's GETs, the authentication dance, and where the answer goes (memory,
 * bounded, or a file, bounded and hashed as it arrives).
 *
 * - HTTPS, verified with the host's CA bundle plus --registry-ca; plain HTTP only for a
 *   loopback registry or an --insecure-registry (the first request tries HTTPS and falls
 *   back when the server does not speak TLS; an --insecure-registry's certificate is not
 *   checked). A mirror given as http:// is contacted so directly.
 * - Redirects (blob storage elsewhere) are followed, at most PULL_MAX_REDIRECTS, to https://
 *   only (http:// too for a registry that may use it); the Authorization header never goes
 *   to another host.
 * - 401: the challenge is answered once (pull-auth.h): a Bearer token from the realm (https,
 *   or http where the registry itself may use it), fetched with the credentials when there
 *   are any, or Basic credentials; then the request is made again. A token is kept for the
 *   rest of the pull and fetched again when the registry refuses it.
 * - Connecting gives up after PULL_CONNECT_TIMEOUT_S; a transfer that moves nothing for
 *   PULL_STALL_S is abandoned.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pull/pull-auth.h"
#include "pull/pull-ref.h"

#define PULL_MAX_REDIRECTS     5
#define PULL_CONNECT_TIMEOUT_S 15
#define PULL_STALL_S           60
#define PULL_TOKEN_MAX         (256 * 1024) /* bytes of a token server's answer */
#define PULL_ERROR_BODY_MAX    (16 * 1024)  /* bytes of an error answer kept for its message */

/* How sbxd reaches registries (pull_setup). */
struct pull_options {
        char **mirrors; /* --registry-mirror URLs, in order */
        size_t n_mirrors;
        char **insecure; /* --insecure-registry HOST[:PORT] */
        size_t n_insecure;
        char *ca_blob; /* the host's CA bundle and --registry-ca, or NULL: libcurl's own */
        size_t ca_len;
        bool extra_ca; /* --registry-ca was given */
};

/* One registry (or mirror) as one pull talks to it; shared by the pull's threads. */
struct pull_remote {
        const struct pull_options *opt;
        char host[PULL_HOST_MAX]; /* as contacted: "registry-1.docker.io", "127.0.0.1:5000" */
        char repo[PULL_REPO_MAX];
        bool insecure; /* --insecure-registry: certificates not checked */
        bool plain_ok; /* plain HTTP allowed (loopback, insecure, an http:// mirror) */
        const struct pull_creds *creds; /* may be NULL */
        const int *cancel;              /* non-zero: give up (may be NULL) */
        pthread_mutex_t lock;           /* the fields below */
        char scheme[8];                 /* "https"/"http" once settled; "" before */
        char *authorization;            /* the header's value, or NULL */
};

void pull_remote_init(struct pull_remote *rm, const struct pull_options *opt, const char *host,
                      const char *repo, const struct pull_creds *creds, const int *cancel);
void pull_remote_done(struct pull_remote *rm);

/* Where an answer's body goes. */
struct pull_sink {
        /* memory: buf (malloc'd, NUL-terminated, the caller frees it), at most max bytes */
        char *buf;
        size_t len;
        /* or, fd >= 0: the file, at most max bytes, hashed (SHA-256) as it arrives */
        int fd;
        uint64_t max;
        uint64_t written;
        void *hash; /* EVP_MD_CTX, managed here */
        /* called as bytes arrive (may be NULL) */
        void (*progress)(void *ud, uint64_t bytes);
        void *ud;
        bool too_large; /* the answer went past max */
};

struct pull_answer {
        long status;
        char content_type[128];
        char digest[80]; /* Docker-Content-Digest */
};

/*
 * GET path ("/v2/<repo>/manifests/<ref>") from rm with Accept accept (may be NULL), into sink
 * when the answer is 200. *h is the calling thread's libcurl handle (NULL at first; free with
 * curl_easy_cleanup). 0 with ret filled (a 200), or: -ENOENT (404), -EACCES (refused,
 * credentials or none), -EBUSY (429), -EFBIG (past sink->max), -EHOSTUNREACH (not reachable,
 * TLS), -ECANCELED, -EPROTO (any other answer), -ENOMEM; err says what, naming the registry.
 */
int pull_http_get(struct pull_remote *rm, void **h, const char *path, const char *accept,
                  struct pull_sink *sink, struct pull_answer *ret, char err[static PULL_ERR_MAX]);

/* The SHA-256 of what a file sink received, as 64 hex digits. */
void pull_sink_digest(struct pull_sink *sink, char ret_hex[static 65]);
/* Free the sink's buffer and hash state (not its fd). */
void pull_sink_done(struct pull_sink *sink);
