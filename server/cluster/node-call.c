/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/node-call.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cluster/forward.h"
#include "cluster/hop-auth.h"
#include "fd-util.h"

/* The key (the same key file on every node) and the signed hop header (cluster/hop-auth.h):
 * without the cluster's secret the call is not made. */
static struct curl_slist *headers(struct server *srv, const char *method, const char *target,
                                  bool json)
{
        char auth[64 + API_KEY_LEN], v[HOP_AUTH_VALUE_MAX], key[API_KEY_LEN + 1],
            hop[sizeof(CLUSTER_HOP_HEADER ": ") + HOP_AUTH_VALUE_MAX];
        if (!hop_auth_value(method, target, v) || keys_first(&srv->keys, key) < 0)
                return NULL;
        snprintf(hop, sizeof(hop), CLUSTER_HOP_HEADER ": %s", v);
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
        struct curl_slist *h = curl_slist_append(NULL, auth);
        struct curl_slist *h2 = h ? curl_slist_append(h, hop) : NULL;
        struct curl_slist *h3 =
            h2 && json ? curl_slist_append(h2, "Content-Type: application/json") : h2;
        if (!h3) {
                curl_slist_free_all(h);
                return NULL;
        }
        return h3;
}

static CURL *handle(const char *addr, const char *method, const char *target)
{
        char url[512];
        if ((size_t)snprintf(url, sizeof(url), "http://%s%s", addr, target) >= sizeof(url))
                return NULL;
        CURL *h = curl_easy_init();
        if (!h)
                return NULL;
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)NODE_CALL_CONNECT_MS);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
        curl_easy_setopt(h, CURLOPT_PROXY, "");
        return h;
}

int node_call(struct server *srv, const char *addr, const char *method, const char *target,
              const char *body, size_t len, long timeout_ms, struct node_answer *ret)
{
        *ret = (struct node_answer){};
        CURL *h = handle(addr, method, target);
        struct curl_slist *hd = headers(srv, method, target, body != NULL);
        if (!h || !hd) {
                curl_easy_cleanup(h);
                curl_slist_free_all(hd);
                return -ENOMEM;
        }
        struct buf_capped answer = {.max = NODE_CALL_MAX_ANSWER};
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
        if (body) {
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        }
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_capped_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer);
        CURLcode c = curl_easy_perform(h);
        if (c == CURLE_OK) {
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->status);
                ret->len = answer.b.len;
                ret->body = buf_steal(&answer.b);
        } else {
                snprintf(ret->error, sizeof(ret->error), "%s", curl_easy_strerror(c));
        }
        buf_done(&answer.b);
        curl_easy_cleanup(h);
        curl_slist_free_all(hd);
        return 0;
}

void node_answer_done(struct node_answer *a)
{
        free(a->body);
        *a = (struct node_answer){};
}

struct sink {
        int fd;
        uint64_t bytes, max;
        int err;
};

static size_t on_stream(char *data, size_t size, size_t nmemb, void *ud)
{
        struct sink *s = ud;
        size_t n = size * nmemb;
        if (s->bytes + n > s->max) {
                s->err = -EFBIG;
                return 0;
        }
        int r = write_full(s->fd, data, n);
        if (r < 0) {
                s->err = r; /* the reader stopped (a refused stream): EPIPE */
                return 0;
        }
        s->bytes += n;
        return n;
}

int node_stream(struct server *srv, const char *addr, const char *target, int fd,
                uint64_t max_bytes, long timeout_s, uint64_t *ret_bytes, char *err, size_t errlen)
{
        struct sink s = {.fd = fd, .max = max_bytes};
        CURL *h = handle(addr, "GET", target);
        struct curl_slist *hd = headers(srv, "GET", target, false);
        int r = 0;
        err[0] = 0;
        if (!h || !hd) {
                r = -ENOMEM;
                goto out;
        }
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)NODE_CALL_STALL_S);
        curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
        CURLcode c = curl_easy_perform(h);
        if (c != CURLE_OK) {
                long status = 0;
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
                r = s.err ? s.err : c == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
                if (s.err == -EFBIG)
                        snprintf(err, errlen, "more than %llu bytes",
                                 (unsigned long long)max_bytes);
                else if (status >= 400)
                        snprintf(err, errlen, "node %s answered %ld", addr, status);
                else
                        snprintf(err, errlen, "%s", curl_easy_strerror(c));
        }
out:
        *ret_bytes = s.bytes;
        close(fd);
        curl_easy_cleanup(h);
        curl_slist_free_all(hd);
        return r;
}
