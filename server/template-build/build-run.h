/* SPDX-License-Identifier: Apache-2.0 */
/* One build as it runs (build-run.c, build-base.c, build-step.c). */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "template-build/build-internal.h"
#include "core/validate.h"
#include "storage/template.h"

#define BUILD_EGRESS_PORT 3142          /* the relay's port on a build sandbox's loopback */
#define BUILD_RUN_MOUNT   "/.sbx-build" /* the run dir inside a build sandbox (read-only) */

struct egress_build;

struct run {
        struct build_service *b;
        char bid[BUILD_ID_MAX], tid[BUILD_TEMPLATE_ID_MAX];
        char base[TEMPLATE_NAME_MAX + 1];
        /* the image as the steps so far left it */
        cJSON *layers; /* "sha256:<hex>" refs, bottom first */
        cJSON *binds;  /* the base template's */
        cJSON *env;    /* ENV steps over the base's environment */
        char *user, *workdir;
        cJSON *pending_dirs; /* WORKDIR dirs not created yet (by the next step that runs) */
        unsigned cpu, mem, disk, min_free_mb;
        bool force; /* the whole build ignores the cache (and pulls its image again) */
        char *reg_user, *reg_password; /* fromImageRegistry's credentials, or NULL */
        char run_dir[4096];            /* <state>/build/run/<bid>: bound at BUILD_RUN_MOUNT */
        struct egress_build *egress;
        size_t log_count;
        char step[16]; /* the step being run, as the log's "step" */
        unsigned cached, built;
};

/* The base of spec (fromImage / fromTemplate) into x: layers, binds, env, user, workdir,
 * sizes. */
int build_base_resolve(struct run *x, const cJSON *spec, char *err);

/* One command of a step: run as user in cwd with env (may be NULL). */
struct step_cmd {
        const char *cmd, *user, *cwd;
        const cJSON *env;
        /* optional, run first as root: when it prints a user name, cmd runs as that user (a
         * COPY as root into a directory even root's capabilities may not write: one whose
         * owner does not map into the sandbox) */
        const char *owner_probe;
};

/* Start a build sandbox on x's layers, run cmds in order (their output to the build log),
 * and on success turn its upper into a store layer (ret_hex), cached under key in the same
 * hold of the store's read lock (so gc never sees it unreferenced). A command exiting
 * non-zero is -ECANCELED with the message in err. */
int build_step_sandbox(struct run *x, const struct step_cmd *cmds, size_t n, const char *key,
                       char *ret_hex, char *err);
/* The cache entry <state>/build/cache/<key>/layer.json naming refs (an array of
 * "sha256:<hex>"): a reference the store's gc counts. Call with the store's read lock held. */
void build_cache_put(struct run *x, const char *key, const cJSON *refs);
/* Start a sandbox of the final template t (its start and ready commands run as in any new
 * sandbox) and stop it: the finalize check. */
int build_step_finalize(struct run *x, const struct template_info *t, char *err);
/* A log line of x (counted against BUILD_MAX_LOG_ENTRIES). */
void run_log(struct run *x, const char *level, const char *fmt, ...) _printf_(3, 4);
