/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/forward.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cluster/cluster-volumes.h"
#include "cluster/hop-auth.h"
#include "core/errors.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"

struct fwd {
        CURL *h;
        struct curl_slist *req_headers;
        pthread_t thread;
        bool thread_started;
        int up[2];   /* request body: front writes up[1], curl reads up[0] */
        int down[2]; /* answer body: curl writes down[1], the response reads down[0] */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool head_done, done, abort;
        long status;
        struct curl_slist *resp_headers;
        size_t n_resp_headers;
        CURLcode result;
        char node[64];
        char addr[128];
};

/* Idle curl handles by owner address: a handle keeps its connection open, so the next request
 * to that node reuses it (no connect, and no new connection thread on the owner). */
static struct {
        char addr[128];
        CURL *h;
} pool[FORWARD_POOL_MAX];
static size_t pool_n;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static CURL *handle_take(const char *addr)
{
        CURL *h = NULL;
        pthread_mutex_lock(&pool_lock);
        for (size_t i = pool_n; i-- > 0;)
                if (strcmp(pool[i].addr, addr) == 0) {
                        h = pool[i].h;
                        pool[i] = pool[--pool_n];
                        break;
                }
        pthread_mutex_unlock(&pool_lock);
        if (h) {
                curl_easy_reset(h); /* options gone, the open connection kept */
                return h;
        }
        return curl_easy_init();
}

static void handle_give(const char *addr, CURL *h)
{
        CURL *drop = NULL;
        pthread_mutex_lock(&pool_lock);
        if (pool_n == FORWARD_POOL_MAX) {
                drop = pool[0].h;
                pool[0] = pool[--pool_n];
        }
        snprintf(pool[pool_n].addr, sizeof(pool[pool_n].addr), "%s", addr);
        pool[pool_n++].h = h;
        pthread_mutex_unlock(&pool_lock);
        if (drop)
                curl_easy_cleanup(drop);
}

static bool hop(const char *n)
{
        static const char *const names[] = {
            "Connection",     "Keep-Alive", "Transfer-Encoding", "TE",
            "Trailer",        "Upgrade",    "Proxy-Connection",  "Proxy-Authorization",
            "Content-Length", "Expect",     CLUSTER_HOP_HEADER};
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp(n, names[i]) == 0)
                        return true;
        return false;
}

static void fwd_free(void *p)
{
        struct fwd *f = p;
        if (!f)
                return;
        __atomic_store_n(&f->abort, true, __ATOMIC_RELAXED);
        if (f->up[1] >= 0)
                close(f->up[1]);
        if (f->down[0] >= 0)
                close(f->down[0]); /* curl's next write fails: the transfer stops */
        if (f->thread_started)
                pthread_join(f->thread, NULL);
        /* a transfer that ended well leaves its connection reusable */
        if (f->h && f->done && f->result == CURLE_OK)
                handle_give(f->addr, f->h);
        else if (f->h)
                curl_easy_cleanup(f->h);
        curl_slist_free_all(f->req_headers);
        curl_slist_free_all(f->resp_headers);
        pthread_mutex_destroy(&f->lock);
        pthread_cond_destroy(&f->cond);
        free(f);
}

static size_t on_read(char *out, size_t size, size_t nmemb, void *ud)
{
        struct fwd *f = ud;
        for (;;) {
                ssize_t n = read(f->up[0], out, size * nmemb);
                if (n >= 0)
                        return (size_t)n;
                if (errno != EINTR)
                        return CURL_READFUNC_ABORT;
        }
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
        struct fwd *f = ud;
        size_t n = size * nmemb, off = 0;
        while (off < n) {
                ssize_t w = write(f->down[1], data + off, n - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return 0; /* the client left */
                off += (size_t)w;
        }
        return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
        struct fwd *f = ud;
        size_t n = size * nmemb;
        _cleanup_free_ char *line = strndup(data, n);
        if (!line)
                return 0;
        line[strcspn(line, "\r\n")] = 0;
        pthread_mutex_lock(&f->lock);
        if (strncmp(line, "HTTP/", 5) == 0) { /* a new head (after a 1xx, too) */
                curl_slist_free_all(f->resp_headers);
                f->resp_headers = NULL;
                f->n_resp_headers = 0;
                const char *sp = strchr(line, ' ');
                f->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        } else if (!*line) {
                if (f->status >= 200) {
                        f->head_done = true;
                        pthread_cond_broadcast(&f->cond);
                }
        } else if (f->n_resp_headers < FORWARD_MAX_HEADERS) {
                struct curl_slist *l = curl_slist_append(f->resp_headers, line);
                if (l) {
                        f->resp_headers = l;
                        f->n_resp_headers++;
                }
        }
        pthread_mutex_unlock(&f->lock);
        return n;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
        struct fwd *f = ud;
        return __atomic_load_n(&f->abort, __ATOMIC_RELAXED) ? 1 : 0;
}

static void *run(void *p)
{
        struct fwd *f = p;
        CURLcode c = curl_easy_perform(f->h);
        close(f->up[0]); /* a body still coming is dropped (EPIPE) */
        close(f->down[1]);
        f->up[0] = f->down[1] = -1;
        pthread_mutex_lock(&f->lock);
        f->result = c;
        f->done = true;
        pthread_cond_broadcast(&f->cond);
        pthread_mutex_unlock(&f->lock);
        return NULL;
}

struct hdr_ctx {
        struct curl_slist *l;
        bool failed;
};

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
        struct hdr_ctx *c = cls;
        if (hop(key))
                return MHD_YES;
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, "%s: %s", key, value ? value : "") < 0) {
                c->failed = true;
                return MHD_NO;
        }
        /* an empty value: curl's "Name;" form sends the header empty */
        if (!value || !*value)
                snprintf(line + strlen(key), 2, ";");
        struct curl_slist *l = curl_slist_append(c->l, line);
        if (!l) {
                c->failed = true;
                return MHD_NO;
        }
        c->l = l;
        return MHD_YES;
}

static struct curl_slist *request_headers(struct request *req, const char *method,
                                          const char *target)
{
        struct hdr_ctx c = {};
        if (req)
                MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect, &c);
        struct curl_slist *l = c.failed ? NULL : curl_slist_append(c.l, "Expect:");
        char hop[HOP_AUTH_HEADER_MAX]; /* cluster/hop-auth.h: signed, or not sent at all */
        if (l && hop_auth_header_line(method, target, hop))
                l = curl_slist_append(l, hop);
        if (!l)
                curl_slist_free_all(c.l);
        return l;
}

static void base_options(CURL *h, struct request *req, const char *addr, const char *method,
                         const char *target)
{
        char url[1024];
        snprintf(url, sizeof(url), "http://%s%s", addr, target);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)FORWARD_CONNECT_MS);
        curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
        /* an idle pooled connection is reused only well before the owner's gate closes it,
         * so a body that cannot be replayed never meets a connection closing under it */
        curl_easy_setopt(h, CURLOPT_MAXAGE_CONN, (long)FORWARD_REUSE_IDLE_S);
        curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
        curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
        curl_easy_setopt(h, CURLOPT_HTTP_TRANSFER_DECODING, 1L);
        if (strcmp(method, "HEAD") == 0)
                curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
}

int forward_begin(struct request *req, const char *addr, const char *node)
{
        struct fwd *f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        snprintf(f->node, sizeof(f->node), "%s", node);
        snprintf(f->addr, sizeof(f->addr), "%s", addr);
        f->up[0] = f->up[1] = f->down[0] = f->down[1] = -1;
        pthread_mutex_init(&f->lock, NULL);
        pthread_cond_init(&f->cond, NULL);
        req->state = f;
        req->state_free = fwd_free;
        if (pipe2(f->up, O_CLOEXEC) < 0 || pipe2(f->down, O_CLOEXEC) < 0)
                return -errno;
        f->h = handle_take(addr);
        f->req_headers = request_headers(req, req->method, req->target);
        if (!f->h || !f->req_headers)
                return -ENOMEM;
        base_options(f->h, req, addr, req->method, req->target);
        curl_easy_setopt(f->h, CURLOPT_HTTPHEADER, f->req_headers);
        const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
        bool body = http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
                    (cl && strtoull(cl, NULL, 10) > 0);
        if (body) {
                curl_easy_setopt(f->h, CURLOPT_UPLOAD, 1L);
                curl_easy_setopt(f->h, CURLOPT_READFUNCTION, on_read);
                curl_easy_setopt(f->h, CURLOPT_READDATA, f);
                if (cl)
                        curl_easy_setopt(f->h, CURLOPT_INFILESIZE_LARGE,
                                         (curl_off_t)strtoull(cl, NULL, 10));
                curl_easy_setopt(f->h, CURLOPT_CUSTOMREQUEST, req->method); /* not PUT */
        } else {
                close(f->up[1]);
                f->up[1] = -1;
        }
        curl_easy_setopt(f->h, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(f->h, CURLOPT_WRITEDATA, f);
        curl_easy_setopt(f->h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(f->h, CURLOPT_HEADERDATA, f);
        curl_easy_setopt(f->h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(f->h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(f->h, CURLOPT_XFERINFODATA, f);
        int r = pthread_create(&f->thread, NULL, run, f);
        if (r != 0)
                return -r;
        f->thread_started = true;
        return 0;
}

int forward_upload(struct request *req, const char *data, size_t len)
{
        struct fwd *f = req->state;
        size_t off = 0;
        while (f->up[1] >= 0 && off < len) {
                ssize_t w = write(f->up[1], data + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) { /* the owner answered already: the rest is dropped */
                        close(f->up[1]);
                        f->up[1] = -1;
                        break;
                }
                off += (size_t)w;
        }
        return 0;
}

static ssize_t body_read(void *cls, uint64_t pos, char *out, size_t max)
{
        struct fwd *f = cls;
        for (;;) {
                ssize_t n = read(f->down[0], out, max);
                if (n > 0)
                        return n;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                pthread_mutex_lock(&f->lock);
                CURLcode c = f->result;
                pthread_mutex_unlock(&f->lock);
                return c == CURLE_OK ? MHD_CONTENT_READER_END_OF_STREAM
                                     : MHD_CONTENT_READER_END_WITH_ERROR;
        }
}

int forward_finish(struct request *req)
{
        struct fwd *f = req->state;
        if (f->up[1] >= 0) {
                close(f->up[1]); /* end of the request body */
                f->up[1] = -1;
        }
        /* Wait for the owner's head; a client that hangs up meanwhile stops the transfer (an
         * owner that hangs would otherwise hold this thread until it answers). */
        int cfd = http_client_fd(req);
        pthread_mutex_lock(&f->lock);
        while (!f->head_done && !f->done) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += FORWARD_HANGUP_CHECK_MS * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&f->cond, &f->lock, &ts);
                struct pollfd p = {.fd = cfd, .events = POLLRDHUP};
                if (!f->head_done && !f->done && cfd >= 0 && poll(&p, 1, 0) > 0 &&
                    (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                        pthread_mutex_unlock(&f->lock);
                        return -ECONNABORTED; /* fwd_free stops curl */
                }
        }
        bool ok = f->head_done;
        pthread_mutex_unlock(&f->lock);
        if (!ok)
                return forward_reply_lost(req, f->node, curl_easy_strerror(f->result));
        bool no_body = f->status == 204 || f->status == 304 || strcmp(req->method, "HEAD") == 0;
        struct MHD_Response *resp;
        uint64_t size = MHD_SIZE_UNKNOWN;
        for (struct curl_slist *l = f->resp_headers; l; l = l->next)
                if (strncasecmp(l->data, "Content-Length:", 15) == 0)
                        size = strtoull(l->data + 15, NULL, 10);
        if (no_body)
                resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        else /* the fwd stays the request's: freed (thread joined) after the response */
                resp = MHD_create_response_from_callback(size, 64 * 1024, body_read, f, NULL);
        if (!resp)
                return -ENOMEM;
        for (struct curl_slist *l = f->resp_headers; l; l = l->next) {
                char *colon = strchr(l->data, ':');
                if (!colon)
                        continue;
                *colon = 0;
                const char *v = colon + 1;
                while (*v == ' ' || *v == '\t')
                        v++;
                if (!hop(l->data) && strcasecmp(l->data, "Date") != 0)
                        (void)MHD_add_response_header(resp, l->data, v);
                *colon = ':';
        }
        int r = http_queue(req, (unsigned)f->status, resp);
        MHD_destroy_response(resp);
        return r;
}

static size_t on_buffered(char *data, size_t size, size_t nmemb, void *ud)
{
        struct buf *b = ud;
        size_t n = size * nmemb;
        if (b->len + n > FORWARD_BUFFERED_MAX || buf_add(b, data, n) < 0)
                return 0;
        return n;
}

static void take_header(CURL *h, const char *name, char **out)
{
        struct curl_header *hd = NULL;
        if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &hd) == CURLHE_OK && hd)
                *out = strdup(hd->value);
}

int forward_buffered(struct request *req, const char *addr, const char *method, const char *target,
                     const char *body, size_t len, struct forward_answer *ret)
{
        *ret = (struct forward_answer){};
        CURL *h = handle_take(addr);
        struct curl_slist *hd = request_headers(req, method, target);
        if (!h || !hd) {
                curl_easy_cleanup(h);
                curl_slist_free_all(hd);
                return -ENOMEM;
        }
        base_options(h, req, addr, method, target);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        if (body) {
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        }
        struct buf b = {};
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_buffered);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        CURLcode c = curl_easy_perform(h);
        if (c == CURLE_OK) {
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->status);
                take_header(h, "Content-Type", &ret->content_type);
                take_header(h, "X-Next-Token", &ret->next_token);
                take_header(h, "Retry-After", &ret->retry_after);
                take_header(h, "X-Total-Running", &ret->total_running);
                ret->len = b.len;
                ret->body = buf_steal(&b);
        } else {
                log_debug("forward %s %s to %s: %s", method, target, addr, curl_easy_strerror(c));
        }
        buf_done(&b);
        if (c == CURLE_OK)
                handle_give(addr, h);
        else
                curl_easy_cleanup(h);
        curl_slist_free_all(hd);
        return 0;
}

void forward_answer_done(struct forward_answer *a)
{
        free(a->body);
        free(a->content_type);
        free(a->next_token);
        free(a->retry_after);
        free(a->total_running);
        *a = (struct forward_answer){};
}

int forward_reply_lost(struct request *req, const char *node, const char *why)
{
        const char *id = req->sandbox_id[0] ? req->sandbox_id : NULL;
        char msg[512], vol[VOLUME_ID_LEN + 1];
        if (!id && cluster_volume_path_id(req->path, vol)) /* cluster/cluster-volumes.h */
                snprintf(msg, sizeof(msg), "node lost: volume %s lives on node %s, which %s", vol,
                         node, why);
        else
                snprintf(msg, sizeof(msg), "node lost: sandbox %s lives on node %s, which %s",
                         req->sandbox_id, node, why);
        if (strncmp(req->path, "/v1/", 4) == 0)
                return v1_reply_error(req, 503, "node_lost", "%s", msg);
        const char *ct = http_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
        bool connect_stream = ct && strncmp(ct, "application/connect+", 20) == 0;
        bool connect_unary = !connect_stream && http_header(req, "Connect-Protocol-Version");
        if (!connect_stream && !connect_unary)
                return http_reply_error(req, -EAGAIN, id, "%s", msg);
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *e = connect_stream ? cJSON_AddObjectToObject(o, "error") : o;
        if (!e || !cJSON_AddStringToObject(e, "code", "failed_precondition") ||
            !cJSON_AddStringToObject(e, "message", msg))
                return -ENOMEM;
        _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
        if (!text)
                return -ENOMEM;
        if (connect_unary) /* Connect's unary error: HTTP 400 for failed_precondition */
                return http_reply_bytes(req, 400, "application/json", text, strlen(text), NULL,
                                        NULL);
        /* a stream: HTTP 200, then the end-of-stream envelope carrying the error */
        size_t l = strlen(text);
        _cleanup_free_ char *env = malloc(l + 5);
        if (!env)
                return -ENOMEM;
        env[0] = 0x02;
        env[1] = (char)(l >> 24);
        env[2] = (char)(l >> 16);
        env[3] = (char)(l >> 8);
        env[4] = (char)l;
        memcpy(env + 5, text, l);
        return http_reply_bytes(req, 200, ct, env, l + 5, NULL, NULL);
}
