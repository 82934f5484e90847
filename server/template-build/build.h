/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Template builds through E2B's template API (server/template-build/README.md): records of built
 * templates and their builds under <state>/build/, uploads of `copy` steps, a bounded queue
 * served by BUILD_WORKERS threads, each build's steps run in build sandboxes and cached as
 * layers of the store, and the result published as templates sbxd starts sandboxes from.
 *
 * Every function answers a failure as -errno with a client-facing message in err (the e2b
 * routes turn it into E2B's error body): -EINVAL (bad input), -ENOENT (unknown template,
 * build, alias or tag), -EEXIST (a name taken by a template this API does not manage),
 * -EBUSY (a build already started), -EDQUOT (the queue is full: 429).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/server.h"

#define BUILD_WORKERS         2            /* builds running at once; more wait in the queue */
#define BUILD_MAX_QUEUED      16           /* builds waiting for a worker; more are refused (429) */
#define BUILD_MAX_STEPS       256          /* steps of one build */
#define BUILD_MAX_STEP_ARG    (64 * 1024)  /* bytes of one step argument (a runCmd's script) */
#define BUILD_MAX_UPLOAD      (1ull << 30) /* bytes of one `copy` upload (a tar.gz) */
#define BUILD_UPLOAD_LINK_S   3600         /* an upload link's validity */
#define BUILD_STEP_TIMEOUT_MS (30 * 60 * 1000) /* one step; then it is killed, the build fails */
#define BUILD_MAX_LOG_ENTRIES 20000            /* per build; past it one last line says so */
#define BUILD_MAX_LOG_LINE    4096 /* bytes of one log entry (a longer output line is cut) */
#define BUILD_LOG_PAGE        1000 /* entries one status answer carries at most */
#define BUILD_KEEP_BUILDS     16   /* build records (and logs) kept per template */
#define BUILD_ALIAS_MAX       40   /* [a-z0-9][a-z0-9_-]* */
/* [a-z0-9_][a-z0-9._-]*, no "..", not a UUID: E2B's tags (lowercased as E2B does), as long as
 * an OCI image tag may be; "alias:tag" fits TEMPLATE_NAME_MAX (core/validate.h) */
#define BUILD_TAG_MAX         128
#define BUILD_MAX_TAGS        16 /* tags in one request */
#define BUILD_ID_MAX          37 /* a build id: a UUID */
#define BUILD_TEMPLATE_ID_MAX 21 /* a template id: 20 lowercase hex digits */
#define BUILD_ERR_MAX         512

struct build_service;

/* Load the records (a build that was running is marked failed: sbxd stopped under it) and
 * start the workers. */
int build_service_start(struct server *srv, struct build_service **ret);
/* Stop the workers (a running step is abandoned: its build is marked failed at the next
 * start). Accepts NULL. */
void build_service_stop(struct build_service *b);

/* POST /v3/templates: TemplateBuildRequestV3 → TemplateRequestResponseV3 (a new build in
 * state "waiting", of a new template or of the one that name already names). */
int build_request(struct build_service *b, const cJSON *body, cJSON **ret, char *err);
/* GET /templates/{id}/files/{hash}: TemplateBuildFileUpload. base_url: where the client
 * reached sbxd ("http://host:port"), for the upload link. */
int build_file_link(struct build_service *b, const char *template_id, const char *hash,
                    const char *base_url, cJSON **ret, char *err);
/* The upload behind a link: check the link (-EACCES) and open a temp file for it. */
int build_upload_open(struct build_service *b, const char *template_id, const char *hash,
                      const char *expires, const char *token, int *ret_fd, char *err);
/* Keep the uploaded file (fd from build_upload_open, still open) as the upload of hash. */
int build_upload_commit(struct build_service *b, const char *template_id, const char *hash, int fd,
                        char *err);
/* POST /v2/templates/{id}/builds/{buildID}: TemplateBuildStartV2 → queued. */
int build_start(struct build_service *b, const char *template_id, const char *build_id,
                const cJSON *body, char *err);
/* GET /templates/{id}/builds/{buildID}/status: TemplateBuildInfo, logs from offset. */
int build_status(struct build_service *b, const char *template_id, const char *build_id,
                 size_t logs_offset, cJSON **ret, char *err);
/* GET /templates/aliases/{alias}: TemplateAliasResponse. */
int build_alias(struct build_service *b, const char *alias, cJSON **ret, char *err);
/* GET /templates: [Template]; GET /templates/{id}: TemplateWithBuilds. */
int build_list(struct build_service *b, cJSON **ret, char *err);
int build_get(struct build_service *b, const char *ref, cJSON **ret, char *err);
/* DELETE /templates/{id}: the template, its names, tags and records. -ENOENT when ref is not a
 * template built here (the caller then tries snapshots). */
int build_delete(struct build_service *b, const char *ref, char *err);
/* POST /templates/tags {target, tags} → AssignedTemplateTags; DELETE /templates/tags
 * {name, tags}; GET /templates/{id}/tags → [TemplateTag]. */
int build_tags_assign(struct build_service *b, const cJSON *body, cJSON **ret, char *err);
int build_tags_remove(struct build_service *b, const cJSON *body, char *err);
int build_tags_list(struct build_service *b, const char *ref, cJSON **ret, char *err);
