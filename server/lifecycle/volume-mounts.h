/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's volumes (storage/volume.h): checking a create's volumeMounts against the volumes
 * and E2B's mount rules, holding the volumes for the sandbox's life, and the jail spec's
 * "volumes" (api/jail-spec.md).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/server.h"
#include "jail-spec.h"
#include "lifecycle/sandbox.h"

/* mounts ([{name, path}], validated as types) → *ret, [{name, path, volumeID}]. -EINVAL (400)
 * with E2B's message, "invalid mounts:\n\t- volume mount #<i>: <reason>" for each bad one:
 * volume '<name>' not found, path cannot be empty, path must be absolute, path must not contain
 * any '.' or '..' components, path '<p>' is already used; and sbx's own: path '<p>' is reserved
 * (/, /proc, /dev, /sys, /.sbx and below). */
int volume_mounts_resolve(struct server *srv, const cJSON *mounts, cJSON **ret, char *errmsg,
                          size_t errlen);
/* Count s as a user of each of its volumes (mounting them on the host as needed):
 * s->volumes_held says how many were taken. -ENOENT (400 at create: deleted meanwhile), -errno
 * of the mount; what was taken stays held for volume_mounts_release(). */
int volume_mounts_acquire(struct server *srv, struct sandbox *s, char *errmsg, size_t errlen);
/* Give back what s holds. */
void volume_mounts_release(struct server *srv, struct sandbox *s);
/* spec->volumes from s->volume_mounts: -ENOMEM. */
int volume_mounts_spec(const struct server *srv, const struct sandbox *s,
                       struct sbx_jail_spec *spec);
