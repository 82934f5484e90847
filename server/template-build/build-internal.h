/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of server/template-build/ share: the service, its records and the build log. */
#pragma once

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>

#include "template-build/build.h"
#include "core/validate.h" /* TEMPLATE_NAME_MAX */
#include "macros.h"

struct egress_build;
struct build_creds;

#define BUILD_STOP_WAIT_S      20   /* shutdown waits this long for running builds to give up */
#define BUILD_PULL_PROGRESS_MS 5000 /* a pull's progress goes to the build log this often */

struct build_service {
        struct server *srv;
        const char *state;
        pthread_mutex_t lock; /* every record read-modify-write, the queue, the logs */
        pthread_cond_t cond;  /* the queue got a build, or stopping */
        char queue[BUILD_MAX_QUEUED][BUILD_ID_MAX];
        size_t q_head, q_len;
        pthread_t workers[BUILD_WORKERS];
        size_t n_workers;
        bool stopping;
        int stop_flag;             /* __atomic: stopping, for a pull to poll (pull/pull.h) */
        struct build_creds *creds; /* fromImageRegistry of queued builds (build-base.c) */
        char **allow; /* egress: the hosts of the host's apt sources (build-mirrors.h) */
        size_t n_allow;
};

/* Record kinds: <state>/build/<kind>/<id>.json. */
#define REC_TEMPLATES "templates"
#define REC_BUILDS    "builds"

/* Under b->lock. NULL when missing or unreadable. */
cJSON *brec_read(struct build_service *b, const char *kind, const char *id);
/* Atomically, under b->lock. */
int brec_write(struct build_service *b, const char *kind, const char *id, const cJSON *j);
/* <state>/build/<sub> (created when missing) into buf. */
int brec_dir(struct build_service *b, const char *sub, char *buf, size_t size);
/* The id of a record file's name ("<id>.json") into id: false for any other name. */
bool brec_file_id(const char *name, char id[static BUILD_TEMPLATE_ID_MAX]);
/* Remove build bid's record and its log. Under b->lock. */
void brec_remove_build(struct build_service *b, const char *bid);

/* The template record id for ref: a template id, an alias, either with ":tag" (cut off into
 * ret_tag, "" when none). Under b->lock. -ENOENT. */
int brec_resolve(struct build_service *b, const char *ref, char ret_tid[BUILD_TEMPLATE_ID_MAX],
                 char ret_tag[BUILD_TAG_MAX + 1]);
/* Publish build bid of template record t as the sbx templates of each of its tags (and
 * remove those of tags it no longer has: names listed in dropped, may be NULL). */
int brec_publish(struct build_service *b, const cJSON *t, const char *bid, const cJSON *tpl);
/* Remove the sbx template dirs tag of template t names. */
void brec_unpublish_tag(struct build_service *b, const cJSON *t, const char *tag);

/* Append a log entry to build bid (not under b->lock: takes it). step may be NULL. */
void build_log(struct build_service *b, const char *bid, const char *step, const char *level,
               const char *fmt, ...) _printf_(5, 6);
/* Mark build bid finished: "ready", or "error" with message and step (may be NULL). */
void build_finish(struct build_service *b, const char *bid, const char *status, const char *message,
                  const char *step);

/* fromImageRegistry (build-base.c): whether reg can be used (-EINVAL with err); what the build
 * record keeps of it (no secret); its credentials kept in memory for build bid until its run
 * takes them (under b->lock; the password never reaches a file). */
int build_registry_check(const cJSON *reg, char *err);
cJSON *build_registry_redacted(const cJSON *reg);
int build_registry_keep(struct build_service *b, const char *bid, const cJSON *reg);
void build_registry_take(struct build_service *b, const char *bid, char **ret_user,
                         char **ret_password);

/* The worker's part: run build bid to its end (build-run.c). */
void build_run(struct build_service *b, const char *bid);

/* Entries of build bid's log from offset on (at most BUILD_LOG_PAGE) into the array out.
 * Under b->lock. */
int brec_log_read(struct build_service *b, const char *bid, size_t offset, cJSON *out);
/* Queue build bid: -EDQUOT when BUILD_MAX_QUEUED wait already. Under b->lock. */
int build_enqueue(struct build_service *b, const char *bid);
/* <state>/build/files/<tid>/<hash> (the dir created) into buf. Under b->lock. */
int build_upload_path(struct build_service *b, const char *tid, const char *hash, char *buf,
                      size_t size);

/* An error for the client: the message into err (BUILD_ERR_MAX bytes); returns code. */
static inline int _printf_(3, 4) build_err(int code, char *err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, BUILD_ERR_MAX, fmt, ap);
        va_end(ap);
        return code;
}
#define ERR(code, ...) build_err((code), err, __VA_ARGS__)

static inline const char *str(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline void set_str(cJSON *o, const char *name, const char *v)
{
        cJSON_DeleteItemFromObjectCaseSensitive(o, name);
        cJSON_AddStringToObject(o, name, v);
}

/* A tag: [A-Za-z0-9_][A-Za-z0-9._-]*, at most BUILD_TAG_MAX, no "..", not a UUID. */
bool build_tag_valid(const char *s);
/* every "alias:tag" a build publishes is a template name sandboxes can be created from */
_Static_assert(BUILD_ALIAS_MAX + 1 + BUILD_TAG_MAX <= TEMPLATE_NAME_MAX, "alias:tag must fit");
/* A tag as E2B keeps it: lowercased in place (E2B's API lowercases every tag it is given, so
 * "V1" and "v1" name one tag). */
void build_tag_lower(char *s);

/* RFC 3339 of now with milliseconds (buf: 32 bytes). */
void build_now(char buf[static 32]);
