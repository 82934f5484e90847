/* SPDX-License-Identifier: Apache-2.0 */
/* Built templates: <state>/templates/<name>/template.json (templates/README.md). */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>

#define TEMPLATE_DEFAULT_CPU       2
#define TEMPLATE_DEFAULT_MEMORY_MB 1024
#define TEMPLATE_DEFAULT_DISK_MB   1024
#define TEMPLATE_MAX_LAYERS        64
#define TEMPLATE_MAX_BINDS         32

struct template_info {
        char *dir;     /* absolute template dir */
        cJSON *layers; /* array of absolute layer paths, bottom first */
        cJSON *binds;  /* array of {source,target,readonly} */
        cJSON *env;    /* object of strings (agent environment), may be NULL */
        unsigned cpu_count, memory_mb, disk_mb;
        char *default_user, *default_workdir;
        /* built templates (templates/README.md "Built through the E2B API"): run in every new
         * sandbox after /init, and polled until it succeeds before the create answers; NULL
         * when the template has none */
        char *start_cmd, *ready_cmd;
        /* a snapshot taken on the storage pool (template.json "upper": its name): the absolute
         * path of its read-only subvolume, which every new sandbox's upper starts as (a
         * writable snapshot of it, storage/disk-pool.h); NULL otherwise */
        char *upper_seed;
};

/* <state>/templates/.building: templates/build-all.sh holds an flock on it while it builds
 * (sbx-templates.service, at the first boot and after an upgrade). */
#define TEMPLATE_BUILDING_LOCK ".building"

/* Whether templates/build-all.sh is building into <state>/templates now. */
bool templates_building(const char *state_dir);

/* Load template `name` (already validated by template_name_valid). -ENOENT when the template
 * does not exist, -EINVAL when its template.json is malformed (layers escaping the template
 * dir, non-absolute binds...). */
int template_load(const char *state_dir, const char *name, struct template_info *ret);
void template_done(struct template_info *t);

/* t's layers as "sha256:<hex>" store refs, bottom first, for a template that leaves this node
 * or is built on: a template's own layer dirs are put in the store (hard links, cached per dir),
 * and a pool snapshot's upper (t->upper_seed) is read into the store as the top layer (a copy,
 * hashed now: the only time a pool snapshot is hashed). Call with the store's read lock held;
 * *ret is the caller's. */
int template_store_refs(const char *state_dir, const struct template_info *t, cJSON **ret);
