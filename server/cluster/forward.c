/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/forward.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "cluster/hop-auth.h"
#include "core/errors.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"
#include "cluster/forward-upgrade.h"
#include "cluster/owner-conn.h"

/* Idle curl handles by owner address, for the buffered calls: a handle keeps its connection
 * open, so the next call to that node reuses it. */
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

/* ---- the request's headers as they go to the owner ---- */

typedef int (*emit_fn)(void *ud, const char *name, const char *value);

struct each_ctx {
        emit_fn emit;
        void *ud;
        int r;
};

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
        struct each_ctx *c = cls;
        if (hop(key))
                return MHD_YES;
        c->r = c->emit(c->ud, key, value ? value : "");
        return c->r < 0 ? MHD_NO : MHD_YES;
}

/* Every header the owner gets, for the streamed relay and the buffered calls alike: the
 * request's own but hop-by-hop ones (Host and E2b-Sandbox-* kept), then CLUSTER_HOP_HEADER
 * signed over method and target (cluster/hop-auth.h), which makes the owner answer locally;
 * without the cluster's secret it is not sent. The framing headers are the caller's. */
static int forward_headers(struct request *req, const char *method, const char *target,
                           emit_fn emit, void *ud)
{
        struct each_ctx c = {.emit = emit, .ud = ud};
        if (req)
                MHD_get_connection_values(req->conn, MHD_HEADER_KIND, each_header, &c);
        if (c.r < 0)
                return c.r;
        char v[HOP_AUTH_VALUE_MAX];
        return hop_auth_value(method, target, v) ? emit(ud, CLUSTER_HOP_HEADER, v) : 0;
}

/* ---- the streamed relay ---- */

struct fwd {
        struct owner_conn *c;
        struct owner_head *h;
        struct forward_splice *splice; /* after a 101 */
        char node[64];
        char addr[128];
        int client_fd;
        bool upgrade, reserved; /* an upgrade; one of FORWARD_UPGRADE_MAX held */
        bool body, chunked;     /* a request body; sent chunked (its length unknown) */
        bool broken;            /* a write to the owner failed: the rest of the body dropped */
        bool reusable;          /* the connection goes back to the pool after the answer */
        struct buf out;         /* bytes not sent yet (the head waits for the first body piece) */
        struct buf sent;        /* on a reused connection: all sent so far, for one replay */
        bool replayable;
};

static void fwd_free(void *p)
{
        struct fwd *f = p;
        if (!f)
                return;
        owner_conn_release(f->c, false); /* an answer not read to its end */
        forward_upgrade_drop(f->splice);
        if (f->reserved)
                forward_upgrade_unreserve();
        buf_done(&f->out);
        buf_done(&f->sent);
        free(f->h);
        free(f);
}

static int head_line(void *ud, const char *name, const char *value)
{
        return buf_printf(ud, "%s: %s\r\n", name, value);
}

/* The head as it goes to the owner: method, raw target, forward_headers(), the framing. */
static int build_head(struct request *req, struct fwd *f, struct buf *b)
{
        int r = buf_printf(b, "%s %s HTTP/1.1\r\n", req->method, req->target);
        if (r >= 0)
                r = forward_headers(req, req->method, req->target, head_line, b);
        if (r >= 0 && !http_header(req, MHD_HTTP_HEADER_HOST))
                r = buf_printf(b, "Host: %s\r\n", f->addr);
        if (r < 0)
                return r;
        if (f->upgrade)
                return buf_printf(b, "Connection: Upgrade\r\nUpgrade: %s\r\n\r\n",
                                  http_header(req, "Upgrade"));
        if (f->chunked)
                return buf_adds(b, "Transfer-Encoding: chunked\r\n\r\n");
        if (f->body)
                return buf_printf(b, "Content-Length: %s\r\n\r\n",
                                  http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH));
        return buf_adds(b, "\r\n");
}

/* Upgrade: <protocol> with Connection: ... upgrade ... (RFC 9110 7.8). */
static bool wants_upgrade(struct request *req)
{
        const char *up = http_header(req, "Upgrade");
        const char *conn = http_header(req, MHD_HTTP_HEADER_CONNECTION);
        return up && up[0] && conn && strcasestr(conn, "upgrade");
}

/* Send f->out (emptied). What goes out on a reused connection is kept as well (up to
 * FORWARD_REPLAY_MAX): the owner may have closed that connection just before. */
static int flush(struct fwd *f)
{
        if (f->broken || f->out.len == 0) {
                buf_consume(&f->out, f->out.len);
                return 0;
        }
        if (f->replayable && (f->sent.len + f->out.len > FORWARD_REPLAY_MAX ||
                              buf_add(&f->sent, f->out.p, f->out.len) < 0)) {
                f->replayable = false;
                buf_done(&f->sent);
        }
        int r = owner_conn_send(f->c, f->out.p, f->out.len);
        buf_consume(&f->out, f->out.len);
        return r;
}

/* A new connection in place of a reused one the owner closed, and what was sent, again. */
static int replay(struct fwd *f)
{
        if (!f->replayable)
                return -EPIPE;
        f->replayable = false;
        owner_conn_release(TAKE_PTR(f->c), false);
        int r = owner_conn_open(f->addr, true, &f->c);
        if (r >= 0)
                r = owner_conn_send(f->c, f->sent.p, f->sent.len);
        buf_done(&f->sent);
        return r;
}

static void send_out(struct fwd *f)
{
        int r = flush(f);
        if (r < 0 && replay(f) >= 0)
                r = 0;
        if (r < 0) {
                log_debug("forward to %s: %s (the rest of the body dropped)", f->addr,
                          strerror(-r));
                f->broken = true;
        }
}

int forward_begin(struct request *req, const char *addr, const char *node)
{
        struct fwd *f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        snprintf(f->node, sizeof(f->node), "%s", node);
        snprintf(f->addr, sizeof(f->addr), "%s", addr);
        req->state = f;
        req->state_free = fwd_free;
        f->client_fd = http_client_fd(req);
        f->upgrade = wants_upgrade(req);
        const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
        f->chunked = !f->upgrade && http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        f->body = f->chunked || (!f->upgrade && cl && strtoull(cl, NULL, 10) > 0);
        if (f->upgrade && !(f->reserved = forward_upgrade_reserve()))
                return http_reply_error(req, -EAGAIN, req->sandbox_id,
                                        "too many upgraded connections relayed to other nodes "
                                        "(at most %d)",
                                        FORWARD_UPGRADE_MAX);
        f->h = malloc(sizeof(*f->h));
        if (!f->h || build_head(req, f, &f->out) < 0)
                return -ENOMEM;
        /* a connection of its own for an upgrade, and for a body too large to send again if
         * a pooled connection turned out closed */
        bool fresh =
            f->upgrade || f->chunked || (f->body && strtoull(cl, NULL, 10) > FORWARD_REPLAY_MAX);
        int r = owner_conn_open(addr, fresh, &f->c);
        if (r < 0)
                return forward_reply_lost(req, node, strerror(-r));
        f->replayable = f->c->reused;
        /* with a body the head waits for its first piece: one write, one wake-up there */
        if (!f->body)
                send_out(f);
        return 0;
}

int forward_upload(struct request *req, const char *data, size_t len)
{
        struct fwd *f = req->state;
        if (f->broken)
                return 0; /* the owner answered or left: the rest is dropped */
        int r = f->chunked ? buf_printf(&f->out, "%zx\r\n", len) : 0;
        if (r >= 0)
                r = buf_add(&f->out, data, len);
        if (r >= 0 && f->chunked)
                r = buf_adds(&f->out, "\r\n");
        if (r < 0)
                return r;
        send_out(f);
        return 0;
}

static ssize_t body_read(void *cls, uint64_t pos, char *out, size_t max)
{
        struct fwd *f = cls;
        if (!f->c)
                return MHD_CONTENT_READER_END_OF_STREAM;
        ssize_t n = owner_conn_body_read(f->c, f->client_fd, out, max);
        if (n > 0)
                return n;
        if (n == 0) { /* the whole answer: the connection is clean for the next request */
                owner_conn_release(TAKE_PTR(f->c), f->reusable);
                return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (n != -ECONNABORTED)
                log_debug("forward to %s: the answer broke off: %s", f->addr, strerror((int)-n));
        return MHD_CONTENT_READER_END_WITH_ERROR; /* fwd_free closes the connection */
}

static int read_head(struct fwd *f)
{
        int r = owner_conn_read_head(f->c, f->client_fd, f->upgrade, f->h);
        if ((r == -EPIPE || r == -ECONNRESET) && !f->broken && replay(f) >= 0)
                r = owner_conn_read_head(f->c, f->client_fd, f->upgrade, f->h);
        return r;
}

int forward_finish(struct request *req)
{
        struct fwd *f = req->state;
        if (f->chunked && buf_adds(&f->out, "0\r\n\r\n") < 0)
                return -ENOMEM;
        send_out(f);
        int r = read_head(f);
        if (r == -ECONNABORTED)
                return r; /* the client left: fwd_free closes the owner's connection */
        if (r < 0)
                return forward_reply_lost(req, f->node, strerror(-r));
        struct owner_head *h = f->h;
        if (h->status == 101) {
                f->reserved = false; /* the splice's now */
                return forward_upgrade_queue(req, TAKE_PTR(f->c), h, &f->splice);
        }
        f->reusable = owner_conn_body_start(f->c, h, req->method) && !f->broken && !f->upgrade;
        bool no_body = h->status == 204 || h->status == 304 || strcmp(req->method, "HEAD") == 0;
        struct MHD_Response *resp;
        uint64_t size = h->chunked || !h->has_length ? MHD_SIZE_UNKNOWN : h->length;
        if (no_body) {
                resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
                owner_conn_release(TAKE_PTR(f->c), f->reusable);
        } else { /* f stays the request's: freed after the response */
                resp = MHD_create_response_from_callback(size, 64 * 1024, body_read, f, NULL);
        }
        if (!resp)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_headers; i++)
                if (!hop(h->headers[i].name) && strcasecmp(h->headers[i].name, "Date") != 0)
                        (void)MHD_add_response_header(resp, h->headers[i].name,
                                                      h->headers[i].value);
        r = http_queue(req, h->status, resp);
        MHD_destroy_response(resp);
        return r;
}

/* ---- buffered calls: libcurl ---- */

static int curl_line(void *ud, const char *name, const char *value)
{
        struct curl_slist **l = ud;
        _cleanup_free_ char *line = NULL;
        /* an empty value: curl's "Name;" form sends the header empty */
        if ((*value ? asprintf(&line, "%s: %s", name, value) : asprintf(&line, "%s;", name)) < 0)
                return -ENOMEM;
        struct curl_slist *n = curl_slist_append(*l, line);
        if (!n)
                return -ENOMEM;
        *l = n;
        return 0;
}

/* forward_headers(), and no Expect: 100-continue of curl's */
static struct curl_slist *request_headers(struct request *req, const char *method,
                                          const char *target)
{
        struct curl_slist *l = NULL;
        struct curl_slist *n = forward_headers(req, method, target, curl_line, &l) < 0
                                   ? NULL
                                   : curl_slist_append(l, "Expect:");
        if (!n)
                curl_slist_free_all(l);
        return n;
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
        struct buf_capped answer = {.max = FORWARD_BUFFERED_MAX};
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_capped_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer);
        CURLcode c = curl_easy_perform(h);
        if (c == CURLE_OK) {
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->status);
                take_header(h, "Content-Type", &ret->content_type);
                take_header(h, "X-Next-Token", &ret->next_token);
                take_header(h, "Retry-After", &ret->retry_after);
                take_header(h, "X-Total-Running", &ret->total_running);
                ret->len = answer.b.len;
                ret->body = buf_steal(&answer.b);
        } else {
                log_debug("forward %s %s to %s: %s", method, target, addr, curl_easy_strerror(c));
        }
        buf_done(&answer.b);
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

int forward_buffered_body(struct request *req, const char *addr, struct forward_answer *ret)
{
        const struct buf *b = &req->body->raw;
        return forward_buffered(req, addr, req->method, req->target, b->p ? b->p : "", b->len, ret);
}

int forward_reply_answer(struct request *req, struct forward_answer *a)
{
        int r = http_reply_bytes(
            req, (unsigned)a->status, a->content_type ? a->content_type : "application/json",
            a->body ? a->body : "", a->len, a->retry_after ? "Retry-After" : NULL, a->retry_after);
        forward_answer_done(a);
        return r;
}

int forward_reply_lost(struct request *req, const char *node, const char *why)
{
        const char *id = req->sandbox_id[0] ? req->sandbox_id : NULL;
        char msg[512];
        if (!id && req->route && req->route->place == PLACE_VOLUME)
                snprintf(msg, sizeof(msg), "node lost: volume %s lives on node %s, which %s",
                         req->args.v[0], node, why);
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
