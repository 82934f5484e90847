/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registry credentials and challenges (server/pull/README.md, "Authentication"):
 *
 * - a registry that wants authentication answers 401 with `WWW-Authenticate: Bearer
 *   realm="…",service="…",scope="…"` (token auth: a token is fetched from the realm, with the
 *   credentials as Basic auth when there are any) or `Basic realm="…"` (the credentials on
 *   every request); pull_challenge_parse() reads that header (pure);
 * - credentials come from the request (fromImage's username and password as E2B's SDK sends
 *   them, the pull route's body) or else from a Docker-style config.json: its "auths" entry
 *   for the registry (keyed "HOST[:PORT]", with or without a scheme and path;
 *   "https://index.docker.io/v1/" for Docker Hub), "auth" (base64 of user:password) or
 *   "username" and "password". The file is $DOCKER_CONFIG/config.json, else
 *   $HOME/.docker/config.json of sbxd's user (what `docker login` writes). Credential
 *   helpers ("credsStore", "credHelpers") are programs sbxd does not run: an entry only there
 *   is not found, and the registry's refusal says so.
 */
#pragma once

#include <stddef.h>

#define PULL_CHALLENGE_MAX     4096          /* bytes of a WWW-Authenticate header read */
#define PULL_DOCKER_CONFIG_MAX (1024 * 1024) /* bytes of config.json read */
#define PULL_CRED_MAX          4096          /* bytes of a user name or password */

struct pull_challenge {
        char scheme[16]; /* "Bearer" or "Basic" (as sent) */
        char realm[1024];
        char service[256];
        char scope[512];
};

/* The first challenge of a WWW-Authenticate value (auth-params: token or quoted-string with
 * backslash escapes). -EINVAL when it is none of Bearer/Basic or malformed. */
int pull_challenge_parse(const char *value, struct pull_challenge *ret);

struct pull_creds {
        char *username, *password; /* both set, or neither */
};

/* Copies of user and password (both non-empty, at most PULL_CRED_MAX each): -EINVAL. */
int pull_creds_set(struct pull_creds *c, const char *user, const char *password);
/* Wipes and frees. */
void pull_creds_done(struct pull_creds *c);

/* The credentials config.json (the text, len bytes) holds for host ("docker.io" for Docker
 * Hub): 1 with *ret set, 0 when it has none, -EINVAL when the file is malformed. Pure. */
int pull_creds_from_docker_config(const char *json, size_t len, const char *host,
                                  struct pull_creds *ret);
/* The same from sbxd's config.json (above); 0 when there is none. */
int pull_creds_lookup(const char *host, struct pull_creds *ret);
