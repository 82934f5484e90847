/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image references as Docker writes them (pure, no I/O): [HOST[:PORT]/]PATH[:TAG][@DIGEST].
 * The first component is a host when it has a '.' or a ':' or is "localhost"; otherwise the
 * image is Docker Hub's, "docker.io", and a one-component path is under "library/"
 * (`python:3.12` is `docker.io/library/python:3.12`). Path components are
 * [a-z0-9]+ joined by '.', '_', "__" or runs of '-' (at most PULL_REPO_MAX in all); a tag is
 * [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; a digest is sha256:<64 hex> (other algorithms are
 * refused). Neither tag nor digest: "latest".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define PULL_REF_MAX        512 /* bytes of a reference as written */
#define PULL_HOST_MAX       256
#define PULL_REPO_MAX       256
#define PULL_TAG_MAX        128
#define PULL_ERR_MAX        512
#define PULL_DOCKER_HUB     "docker.io"
#define PULL_DOCKER_HUB_API "registry-1.docker.io" /* where docker.io's API answers */

struct pull_ref {
        char host[PULL_HOST_MAX];   /* "docker.io", or HOST[:PORT] as written (lower case) */
        char repo[PULL_REPO_MAX];   /* "library/python" */
        char tag[PULL_TAG_MAX + 1]; /* "" when only a digest was given */
        char digest[72];            /* "sha256:<hex>", or "" */
};

/* Parse s into *ret: -EINVAL with the reason in err. */
int pull_ref_parse(const char *s, struct pull_ref *ret, char err[static PULL_ERR_MAX]);

/* The canonical form: HOST/REPO[:TAG][@DIGEST]. */
void pull_ref_format(const struct pull_ref *r, char *buf, size_t size);

/* The tag or digest the registry is asked for: the digest when there is one. */
const char *pull_ref_reference(const struct pull_ref *r);

/*
 * The image name and tag the pulled image's template takes (storage/image-import.h's rules,
 * id NAME[:TAG]): Docker Hub's images by their path without "library/" (`python:3.12`,
 * `oven-bun:1`: '/' becomes '-', a run of dots one dot), other registries' with the host in
 * front (`127.0.0.1-5000-team-app:v1`); an image named by digest alone gets the tag
 * "sha256-<12 hex>". A name or tag too long for a template id is cut and ends in 12 hex
 * digits of its full form's SHA-256, so different images never share a template.
 * ret_name: at least 49 bytes, ret_tag: at least 41.
 */
void pull_ref_image_name(const struct pull_ref *r, char *ret_name, char *ret_tag);

/* Whether HOST[:PORT] names this machine's loopback (localhost, 127.0.0.0/8, [::1]). */
bool pull_host_is_loopback(const char *host);
