/* SPDX-License-Identifier: Apache-2.0 */
#include "interp/code.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interp/code-exec.h"
#include "interp/code-inside.h"
#include "interp/code-kernel.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"

#define MAX_BODY         (32u * 1024u * 1024u)
#define MAX_CONTEXTS     256u
#define START_TIMEOUT_MS 15000
#define PREWARM_WAIT_MS  6000
#define DEFAULT_CWD      "/home/user"

struct code_context {
        struct code_context *next;
        char id[37];
        const struct code_language *lang;
        char *cwd;
        unsigned refs;   /* table lock */
        bool removed;    /* table lock */
        bool is_default; /* table lock */
        int kill_pidfd;  /* table lock: a dup of the kernel's pidfd, to stop it from outside */
        pid_t kill_pid;  /* table lock */
        pthread_mutex_t exec_lock;
        struct code_kernel *kernel; /* exec lock */
        unsigned count;             /* exec lock */
        bool lost;                  /* exec lock: its kernel died; the next execution says so */
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct code_context *contexts;
static unsigned n_contexts;
static bool defaults_made;

/* ---- table ---- */

static void uuid4(char out[static 37])
{
        unsigned char b[16];
        if (random_bytes(b, sizeof(b)) < 0)
                memset(b, 0, sizeof(b));
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                 b[13], b[14], b[15]);
}

/* Caller holds table_lock. The table keeps creation order, which GET /contexts answers in. */
static struct code_context *ctx_new_locked(const struct code_language *lang, const char *cwd)
{
        struct code_context *c, **tail = &contexts;

        if (n_contexts >= MAX_CONTEXTS)
                return NULL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        c->cwd = strdup(cwd);
        if (!c->cwd) {
                free(c);
                return NULL;
        }
        uuid4(c->id);
        c->lang = lang;
        c->refs = 1; /* the table's */
        c->kill_pidfd = -EBADF;
        pthread_mutex_init(&c->exec_lock, NULL);
        while (*tail)
                tail = &(*tail)->next;
        *tail = c;
        n_contexts++;
        return c;
}

static void ctx_unref(struct code_context *c)
{
        bool last;

        pthread_mutex_lock(&table_lock);
        last = --c->refs == 0;
        pthread_mutex_unlock(&table_lock);
        if (!last)
                return;
        code_kernel_free(c->kernel);
        safe_close(c->kill_pidfd);
        pthread_mutex_destroy(&c->exec_lock);
        free(c->cwd);
        free(c);
}

/* Caller holds table_lock. lang's default context: in the table, or made now (NULL when the
 * table is full). */
static struct code_context *ctx_default_locked(const struct code_language *lang)
{
        struct code_context *c;

        for (c = contexts; c; c = c->next)
                if (c->is_default && c->lang == lang)
                        return c;
        c = ctx_new_locked(lang, DEFAULT_CWD);
        if (c)
                c->is_default = true;
        return c;
}

/* The default contexts that exist from the start (code-lang.h), in the rows' order. */
static void make_defaults_locked(void)
{
        if (defaults_made)
                return;
        defaults_made = true;
        for (size_t i = 0; i < code_languages_n; i++)
                if (code_languages[i].default_context)
                        (void)ctx_default_locked(&code_languages[i]);
}

/* A referenced context: by id, or the default one of lang (created when missing). */
static struct code_context *ctx_get(const char *id, const struct code_language *lang)
{
        struct code_context *c = NULL;

        pthread_mutex_lock(&table_lock);
        make_defaults_locked();
        if (id) {
                for (c = contexts; c && strcmp(c->id, id) != 0; c = c->next)
                        ;
        } else if (lang) {
                c = ctx_default_locked(lang);
        }
        if (c)
                c->refs++;
        pthread_mutex_unlock(&table_lock);
        return c;
}

/* Remove from the table (the table's reference is dropped). */
static void ctx_remove(struct code_context *c)
{
        pthread_mutex_lock(&table_lock);
        for (struct code_context **pp = &contexts; *pp; pp = &(*pp)->next)
                if (*pp == c) {
                        *pp = c->next;
                        c->removed = true;
                        n_contexts--;
                        break;
                }
        pthread_mutex_unlock(&table_lock);
        ctx_unref(c);
}

/* Stop the running kernel from another thread (restart, delete): its execution sees the
 * kernel die and returns. */
static void ctx_kill_kernel(struct code_context *c)
{
        pthread_mutex_lock(&table_lock);
        if (c->kill_pidfd >= 0) {
                struct pollfd p = {.fd = c->kill_pidfd, .events = POLLIN};
                if (poll(&p, 1, 0) == 0) {
                        (void)kill(-c->kill_pid, SIGKILL);
                        (void)pidfd_send_signal(c->kill_pidfd, SIGKILL, NULL, 0);
                }
        }
        pthread_mutex_unlock(&table_lock);
}

/* Caller holds the exec lock. */
static void ctx_set_kernel(struct code_context *c, struct code_kernel *k)
{
        code_kernel_free(c->kernel);
        c->kernel = k;
        c->count = 0;
        pthread_mutex_lock(&table_lock);
        c->kill_pidfd = safe_close(c->kill_pidfd);
        if (k) {
                c->kill_pidfd = fcntl(k->pidfd, F_DUPFD_CLOEXEC, 3);
                c->kill_pid = k->pid;
        }
        pthread_mutex_unlock(&table_lock);
}

/* Caller holds the exec lock. A live kernel, started now if needed. */
static int ctx_ensure_kernel(struct code_context *c, int timeout_ms)
{
        struct code_kernel *k;
        bool preload;
        int e;

        if (c->kernel && code_kernel_alive(c->kernel))
                return 0;
        if (c->kernel) /* killed or exited between executions (a kill from inside) */
                c->lost = true;
        pthread_mutex_lock(&table_lock);
        preload = c->is_default;
        pthread_mutex_unlock(&table_lock);
        e = code_kernel_start(c->lang, c->cwd, preload, timeout_ms, &k);
        if (e < 0) {
                ctx_set_kernel(c, NULL);
                return e;
        }
        ctx_set_kernel(c, k);
        return 0;
}

/* ---- answers ---- */

static int respond_text(struct agent_request *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int respond_text(struct agent_request *r, int status, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return agent_respond(r, status, "text/plain; charset=utf-8", msg, (size_t)n);
}

static int respond_json(struct agent_request *r, int status, cJSON *j)
{
        _cleanup_free_ char *s = j ? cJSON_PrintUnformatted(j) : NULL;
        cJSON_Delete(j);
        if (!s)
                return respond_text(r, 500, "out of memory");
        return agent_respond(r, status, "application/json", s, strlen(s));
}

static cJSON *ctx_json(const struct code_context *c)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", c->id);
        cJSON_AddStringToObject(o, "language", c->lang->name);
        cJSON_AddStringToObject(o, "cwd", c->cwd);
        return o;
}

/* Why a kernel of lang did not start; buf holds the message when it names the interpreter. */
static const char *kernel_error(int e, const struct code_language *lang, char *buf, size_t size)
{
        switch (e) {
        case -ETIMEDOUT:
                return "the kernel did not start in time";
        case -ECHILD:
                return "the kernel exited while starting";
        case -ENOENT:
                snprintf(buf, size,
                         "%s not found: this sandbox's image has no %s in its PATH (the code "
                         "interpreter runs %s kernels with the image's own %s%s%s)",
                         lang->interpreter, lang->interpreter, lang->name, lang->interpreter,
                         lang->requires ? ", " : "", lang->requires ? lang->requires : "");
                return buf;
        default:
                return strerror(-e);
        }
}

/* A missing interpreter is a 404: the only status besides 502 whose body the SDKs put in the
 * error they throw (NotFoundError), so the user reads which interpreter the image lacks. */
static int kernel_error_status(int e)
{
        return e == -ENOENT ? 404 : 500;
}

/* Body as a JSON object; answers 4xx itself and returns NULL then (*ret_e set). */
static cJSON *read_json_body(struct agent_request *r, int *ret_e)
{
        _cleanup_free_ uint8_t *body = NULL;
        size_t len;
        cJSON *j;

        *ret_e = agent_request_read_body_all(r, MAX_BODY, &body, &len);
        if (*ret_e == -EMSGSIZE) {
                *ret_e = respond_text(r, 413, "Request body too large");
                return NULL;
        }
        if (*ret_e < 0)
                return NULL;
        j = cJSON_ParseWithLength((const char *)body, len);
        if (!cJSON_IsObject(j)) {
                cJSON_Delete(j);
                *ret_e = respond_text(r, 422, "Invalid JSON body");
                return NULL;
        }
        return j;
}

/* ---- POST /execute ---- */

static bool string_map(const cJSON *o)
{
        const cJSON *v;
        if (!o || cJSON_IsNull(o))
                return true;
        if (!cJSON_IsObject(o))
                return false;
        cJSON_ArrayForEach(v, o) if (!cJSON_IsString(v)) return false;
        return true;
}

static int run_execute(struct agent_request *r, struct code_context *c, const cJSON *body)
{
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(body, "code");
        const cJSON *env = cJSON_GetObjectItemCaseSensitive(body, "env_vars");
        struct code_exec x = {.code = code->valuestring,
                              .code_len = strlen(code->valuestring),
                              .env_vars = cJSON_IsObject(env) ? env : NULL};
        int e;

        pthread_mutex_lock(&c->exec_lock);
        pthread_mutex_lock(&table_lock);
        bool removed = c->removed;
        pthread_mutex_unlock(&table_lock);
        if (removed) { /* deleted while this execution waited for its turn */
                pthread_mutex_unlock(&c->exec_lock);
                return respond_text(r, 404, "Context %s not found", c->id);
        }
        e = ctx_ensure_kernel(c, START_TIMEOUT_MS);
        if (e < 0) {
                pthread_mutex_unlock(&c->exec_lock);
                char why[512];
                return respond_text(r, kernel_error_status(e), "Failed to start the %s kernel: %s",
                                    c->lang->name, kernel_error(e, c->lang, why, sizeof(why)));
        }
        e = agent_respond_head(r, 200, NULL);
        char notice[256];
        if (e >= 0 && c->lost) {
                /* The kernel was started again (supervised: on the next use, as here); what
                 * the context held is gone, and the execution says so before its output. */
                snprintf(notice, sizeof(notice),
                         "The %s kernel of this context had stopped (killed or exited) and was "
                         "started again: variables, imports and definitions of earlier "
                         "executions are lost.\n",
                         c->lang->name);
                x.notice = notice;
                c->lost = false;
        }
        if (e >= 0) {
                x.execution_count = ++c->count;
                if (code_exec_run(r, c->kernel, &x) == -ECHILD) {
                        ctx_set_kernel(c, NULL);
                        c->lost = true;
                }
        }
        pthread_mutex_unlock(&c->exec_lock);
        return e;
}

static int handle_execute(struct agent_request *r)
{
        const struct code_language *l = code_language_default();
        const cJSON *code, *ctx_id, *lang;
        struct code_context *c;
        cJSON *body;
        int e;

        body = read_json_body(r, &e);
        if (!body)
                return e;
        code = cJSON_GetObjectItemCaseSensitive(body, "code");
        ctx_id = cJSON_GetObjectItemCaseSensitive(body, "context_id");
        lang = cJSON_GetObjectItemCaseSensitive(body, "language");
        if (!cJSON_IsString(code) || (ctx_id && !cJSON_IsNull(ctx_id) && !cJSON_IsString(ctx_id)) ||
            (lang && !cJSON_IsNull(lang) && !cJSON_IsString(lang)) ||
            !string_map(cJSON_GetObjectItemCaseSensitive(body, "env_vars"))) {
                cJSON_Delete(body);
                return respond_text(r, 422, "Invalid execution request");
        }
        if (cJSON_IsString(ctx_id) && cJSON_IsString(lang)) {
                cJSON_Delete(body);
                return respond_text(r, 400, "Only one of context_id or language can be provided");
        }
        if (cJSON_IsString(lang)) {
                l = code_language_find(lang->valuestring);
                if (!l) {
                        e = respond_text(r, 500,
                                         "Failed to create context: no kernel for language '%s'",
                                         lang->valuestring);
                        cJSON_Delete(body);
                        return e;
                }
        }
        c = ctx_get(cJSON_IsString(ctx_id) ? ctx_id->valuestring : NULL, l);
        if (!c) {
                e = cJSON_IsString(ctx_id)
                        ? respond_text(r, 404, "Context %s not found", ctx_id->valuestring)
                        : respond_text(r, 500, "Failed to create context: too many contexts");
                cJSON_Delete(body);
                return e;
        }
        e = run_execute(r, c, body);
        ctx_unref(c);
        cJSON_Delete(body);
        return e;
}

/* ---- contexts ---- */

static int handle_create(struct agent_request *r)
{
        const cJSON *lang, *cwd;
        const struct code_language *l;
        struct code_context *c;
        const char *dir;
        struct stat st;
        cJSON *body;
        int e;

        body = read_json_body(r, &e);
        if (!body)
                return e;
        lang = cJSON_GetObjectItemCaseSensitive(body, "language");
        cwd = cJSON_GetObjectItemCaseSensitive(body, "cwd");
        l = code_language_find(cJSON_IsString(lang) ? lang->valuestring : NULL);
        dir = cJSON_IsString(cwd) && *cwd->valuestring ? cwd->valuestring : DEFAULT_CWD;
        if (!l) {
                e = respond_text(r, 500, "Failed to create context: no kernel for language '%s'",
                                 lang->valuestring);
                goto out;
        }
        if (dir[0] != '/' || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                e = respond_text(r, 500, "Failed to set working directory");
                goto out;
        }
        pthread_mutex_lock(&table_lock);
        make_defaults_locked();
        c = ctx_new_locked(l, dir);
        if (c)
                c->refs++;
        pthread_mutex_unlock(&table_lock);
        if (!c) {
                e = respond_text(r, 500, "Failed to create context: too many contexts");
                goto out;
        }
        pthread_mutex_lock(&c->exec_lock);
        e = ctx_ensure_kernel(c, START_TIMEOUT_MS);
        pthread_mutex_unlock(&c->exec_lock);
        if (e < 0) {
                ctx_remove(c);
                char why[512];
                e = respond_text(r, kernel_error_status(e), "Failed to create context: %s",
                                 kernel_error(e, c->lang, why, sizeof(why)));
        } else {
                e = respond_json(r, 200, ctx_json(c));
        }
        ctx_unref(c);
out:
        cJSON_Delete(body);
        return e;
}

static int handle_list(struct agent_request *r)
{
        cJSON *a = cJSON_CreateArray();
        int e = agent_request_discard_body(r, 64 * 1024);

        if (e < 0) {
                cJSON_Delete(a);
                return e;
        }
        pthread_mutex_lock(&table_lock);
        make_defaults_locked();
        for (struct code_context *c = contexts; c && a; c = c->next)
                cJSON_AddItemToArray(a, ctx_json(c));
        pthread_mutex_unlock(&table_lock);
        return respond_json(r, 200, a);
}

/* Discard the body and look up context id. Returns 1 with *ret (a reference the caller drops
 * with ctx_unref), or the result of answering 404 (its status) / of a failed read (-errno). */
static int ctx_lookup(struct agent_request *r, const char *id, struct code_context **ret)
{
        struct code_context *c;
        int e = agent_request_discard_body(r, 64 * 1024);

        if (e < 0)
                return e;
        c = ctx_get(id, NULL);
        if (!c)
                return respond_text(r, 404, "Context %s not found", id);
        *ret = c;
        return 1;
}

static int handle_delete(struct agent_request *r, const char *id)
{
        struct code_context *c = NULL;
        int e = ctx_lookup(r, id, &c);

        if (e != 1)
                return e;
        ctx_kill_kernel(c);
        ctx_remove(c);
        ctx_unref(c);
        return agent_respond(r, 200, "application/json", "null", 4);
}

static int handle_restart(struct agent_request *r, const char *id)
{
        struct code_context *c = NULL;
        int e = ctx_lookup(r, id, &c);

        if (e != 1)
                return e;
        ctx_kill_kernel(c);
        pthread_mutex_lock(&c->exec_lock);
        ctx_set_kernel(c, NULL);
        c->lost = false; /* the client asked for it: nothing to tell */
        e = ctx_ensure_kernel(c, START_TIMEOUT_MS);
        pthread_mutex_unlock(&c->exec_lock);
        ctx_unref(c);
        char why[512];
        if (e < 0)
                return respond_text(r, kernel_error_status(e), "Failed to restart context %s: %s",
                                    id, kernel_error(e, c->lang, why, sizeof(why)));
        return agent_respond(r, 200, "application/json", "null", 4);
}

/* ---- handlers (the route table's port-49999 rows: guest-agent/routes.c) ---- */

/* A sandbox without sbx's runtime (sbxd started without one). E2B's proxy would answer 502,
 * which the SDKs turn into a misleading "sandbox timeout"; a 404 that says why becomes
 * NotFoundError(<this text>). */
static int no_kernels(struct agent_request *r)
{
        static const char msg[] = "{\"code\":404,\"message\":\"no code interpreter in "
                                  "this sandbox: sbxd runs without its runtime (the "
                                  "kernels)\"}";
        (void)agent_request_discard_body(r, 16u * 1024u * 1024u);
        return agent_respond(r, 404, "application/json", msg, sizeof(msg) - 1);
}

int agent_code_handle_execute(struct agent_request *r)
{
        return code_kernels_available() ? handle_execute(r) : no_kernels(r);
}

int agent_code_handle_create(struct agent_request *r)
{
        return code_kernels_available() ? handle_create(r) : no_kernels(r);
}

int agent_code_handle_list(struct agent_request *r)
{
        return code_kernels_available() ? handle_list(r) : no_kernels(r);
}

int agent_code_handle_health(struct agent_request *r)
{
        if (!code_kernels_available())
                return no_kernels(r);
        (void)agent_request_discard_body(r, 64 * 1024);
        return agent_respond(r, 200, "application/json", "\"OK\"", 4);
}

int agent_code_handle_not_found(struct agent_request *r)
{
        if (!code_kernels_available())
                return no_kernels(r);
        (void)agent_request_discard_body(r, 16u * 1024u * 1024u);
        return agent_respond(r, 404, "application/json", "{\"detail\":\"Not Found\"}", 22);
}

int agent_code_handle_context(struct agent_request *r)
{
        const char *m = r->head.method, *p = r->head.path;
        if (!code_kernels_available())
                return no_kernels(r);
        /* "/contexts/{id}" (DELETE) or "/contexts/{id}/restart" (POST) */
        const char *rest = p + strlen("/contexts/");
        const char *slash = strchr(rest, '/');
        if (!slash && *rest && streq_ptr(m, "DELETE"))
                return handle_delete(r, rest);
        if (slash && slash > rest && streq_ptr(slash, "/restart") && streq_ptr(m, "POST")) {
                _cleanup_free_ char *id = strndup(rest, (size_t)(slash - rest));
                return id ? handle_restart(r, id) : -ENOMEM;
        }
        return agent_code_handle_not_found(r);
}

/* Start lang's default context's kernel and wait (bounded) until it is ready. */
static void prewarm(const struct code_language *lang)
{
        struct code_context *c = ctx_get(NULL, lang);
        int e;

        if (!c)
                return;
        pthread_mutex_lock(&c->exec_lock);
        e = ctx_ensure_kernel(c, PREWARM_WAIT_MS);
        pthread_mutex_unlock(&c->exec_lock);
        if (e < 0)
                log_warning_errno(e, "prewarming the %s kernel: %m", lang->name);
        ctx_unref(c);
}

void agent_code_on_init(void)
{
        static pthread_once_t inside_once = PTHREAD_ONCE_INIT;

        if (!code_kernels_available())
                return;
        /* A template that ships a language's preload list is a code-interpreter template. */
        for (size_t i = 0; i < code_languages_n; i++) {
                if (!code_kernel_preload(&code_languages[i]))
                        continue;
                pthread_once(&inside_once, code_inside_start);
                prewarm(&code_languages[i]);
        }
}
