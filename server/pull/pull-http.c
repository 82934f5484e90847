/* SPDX-License-Identifier: Apache-2.0 */
#include "pull/pull-http.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <nettle/base64.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"

#define USER_AGENT "sbxd (OCI distribution client)"

_printf_(2, 3) static int fail(char *err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, PULL_ERR_MAX, fmt, ap);
        va_end(ap);
        return 0;
}

void pull_remote_init(struct pull_remote *rm, const struct pull_options *opt, const char *host,
                      const char *repo, const struct pull_creds *creds, const int *cancel)
{
        *rm = (struct pull_remote){.opt = opt, .creds = creds, .cancel = cancel};
        snprintf(rm->host, sizeof(rm->host), "%s", host);
        snprintf(rm->repo, sizeof(rm->repo), "%s", repo);
        for (size_t i = 0; opt && i < opt->n_insecure; i++)
                if (strcasecmp(opt->insecure[i], host) == 0)
                        rm->insecure = true;
        rm->plain_ok = rm->insecure || pull_host_is_loopback(host);
        pthread_mutex_init(&rm->lock, NULL);
}

void pull_remote_done(struct pull_remote *rm)
{
        if (rm->authorization) {
                explicit_bzero(rm->authorization, strlen(rm->authorization));
                free(rm->authorization);
        }
        pthread_mutex_destroy(&rm->lock);
        rm->authorization = NULL;
}

/* ---- one transfer ---- */

struct xfer {
        struct pull_sink *sink;
        const int *cancel;
        struct pull_answer ans;
        char challenge[PULL_CHALLENGE_MAX];
        char errbody[PULL_ERROR_BODY_MAX + 1];
        size_t errlen;
        int sink_err;
};

static void header_value(const char *line, size_t n, size_t skip, char *out, size_t size)
{
        const char *v = line + skip;
        size_t l = n - skip;
        while (l && (*v == ' ' || *v == '\t'))
                v++, l--;
        while (l && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' '))
                l--;
        snprintf(out, size, "%.*s", (int)MIN(l, size - 1), v);
}

static size_t on_header(char *line, size_t size, size_t nitems, void *ud)
{
        struct xfer *x = ud;
        size_t n = size * nitems;
        if (n > 5 && strncmp(line, "HTTP/", 5) == 0) {
                /* a new answer (after a redirect, or a 100): only the last one counts */
                const char *sp = memchr(line, ' ', n);
                x->ans = (struct pull_answer){.status = sp ? strtol(sp + 1, NULL, 10) : 0};
                x->challenge[0] = 0;
                x->errlen = 0;
                return n;
        }
        static const char ct[] = "content-type:", dcd[] = "docker-content-digest:",
                          wa[] = "www-authenticate:";
        if (n > sizeof(ct) - 1 && strncasecmp(line, ct, sizeof(ct) - 1) == 0)
                header_value(line, n, sizeof(ct) - 1, x->ans.content_type,
                             sizeof(x->ans.content_type));
        else if (n > sizeof(dcd) - 1 && strncasecmp(line, dcd, sizeof(dcd) - 1) == 0)
                header_value(line, n, sizeof(dcd) - 1, x->ans.digest, sizeof(x->ans.digest));
        else if (n > sizeof(wa) - 1 && strncasecmp(line, wa, sizeof(wa) - 1) == 0 &&
                 !x->challenge[0])
                header_value(line, n, sizeof(wa) - 1, x->challenge, sizeof(x->challenge));
        return n;
}

static int sink_put(struct pull_sink *s, const char *data, size_t n)
{
        if (s->written + n > s->max) {
                s->too_large = true;
                return -EFBIG;
        }
        if (s->fd >= 0) {
                int r = write_full(s->fd, data, n);
                if (r < 0)
                        return r;
                EVP_DigestUpdate(s->hash, data, n);
        } else {
                char *nb = realloc(s->buf, s->len + n + 1);
                if (!nb)
                        return -ENOMEM;
                s->buf = nb;
                memcpy(s->buf + s->len, data, n);
                s->len += n;
                s->buf[s->len] = 0;
        }
        s->written += n;
        if (s->progress)
                s->progress(s->ud, s->written);
        return 0;
}

static size_t on_data(char *data, size_t size, size_t nitems, void *ud)
{
        struct xfer *x = ud;
        size_t n = size * nitems;
        if (x->ans.status != 200) {
                size_t keep = MIN(n, PULL_ERROR_BODY_MAX - x->errlen);
                memcpy(x->errbody + x->errlen, data, keep);
                x->errlen += keep;
                x->errbody[x->errlen] = 0;
                return n;
        }
        int r = sink_put(x->sink, data, n);
        if (r < 0) {
                x->sink_err = r;
                return 0; /* libcurl stops: CURLE_WRITE_ERROR */
        }
        return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
        (void)dt, (void)dn, (void)ut, (void)un;
        const struct xfer *x = ud;
        return x->cancel && __atomic_load_n(x->cancel, __ATOMIC_RELAXED) ? 1 : 0;
}

static int sink_reset(struct pull_sink *s)
{
        s->written = 0;
        s->too_large = false;
        s->len = 0;
        if (s->fd < 0)
                return 0;
        if (ftruncate(s->fd, 0) < 0 || lseek(s->fd, 0, SEEK_SET) < 0)
                return -errno;
        if (!s->hash && !(s->hash = EVP_MD_CTX_new()))
                return -ENOMEM;
        return EVP_DigestInit_ex(s->hash, EVP_sha256(), NULL) == 1 ? 0 : -ENOMEM;
}

void pull_sink_digest(struct pull_sink *sink, char ret_hex[static 65])
{
        unsigned char md[32];
        unsigned len = 0;
        ret_hex[0] = 0;
        if (!sink->hash || EVP_DigestFinal_ex(sink->hash, md, &len) != 1 || len != 32)
                return;
        for (unsigned i = 0; i < 32; i++)
                snprintf(ret_hex + 2 * i, 3, "%02x", md[i]);
}

void pull_sink_done(struct pull_sink *sink)
{
        free(sink->buf);
        sink->buf = NULL;
        EVP_MD_CTX_free(sink->hash);
        sink->hash = NULL;
}

/* The options every request sets: transport, TLS, bounds. */
static void set_transport(CURL *h, const struct pull_remote *rm, struct xfer *x)
{
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_USERAGENT, USER_AGENT);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, (long)PULL_MAX_REDIRECTS);
        curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, rm->plain_ok ? "http,https" : "https");
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)PULL_CONNECT_TIMEOUT_S);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)PULL_STALL_S);
        if (rm->insecure) {
                curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
        } else if (rm->opt && rm->opt->ca_blob) {
                struct curl_blob blob = {
                    .data = rm->opt->ca_blob, .len = rm->opt->ca_len, .flags = CURL_BLOB_NOCOPY};
                curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
        }
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
}

/* The message of an error answer: the distribution API's {"errors":[{code,message}]}. */
static void error_text(const struct xfer *x, char *out, size_t size)
{
        _cleanup_json_ cJSON *j = cJSON_ParseWithLength(x->errbody, x->errlen);
        const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "errors"), 0);
        const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
        if (code || msg)
                snprintf(out, size, ": %s%s%.200s", code ? code : "", code && msg ? " " : "",
                         msg ? msg : "");
        else
                out[0] = 0;
}

/* ---- authentication ---- */

static int set_authorization(struct pull_remote *rm, const char *scheme, const char *value)
{
        char *a = NULL;
        if (asprintf(&a, "%s %s", scheme, value) < 0)
                return -ENOMEM;
        pthread_mutex_lock(&rm->lock);
        if (rm->authorization) {
                explicit_bzero(rm->authorization, strlen(rm->authorization));
                free(rm->authorization);
        }
        rm->authorization = a;
        pthread_mutex_unlock(&rm->lock);
        return 0;
}

static int basic_auth(struct pull_remote *rm, char *err)
{
        const struct pull_creds *c = rm->creds;
        if (!c || !c->username)
                return fail(err,
                            "registry %s wants credentials (Basic auth): give a user name and "
                            "password, or add them to sbxd's Docker config.json",
                            rm->host),
                       -EACCES;
        _cleanup_free_ char *plain = NULL;
        int n = asprintf(&plain, "%s:%s", c->username, c->password);
        if (n < 0)
                return -ENOMEM;
        _cleanup_free_ char *b64 = malloc(BASE64_ENCODE_RAW_LENGTH((size_t)n) + 1);
        if (!b64) {
                explicit_bzero(plain, (size_t)n);
                return -ENOMEM;
        }
        base64_encode_raw(b64, (size_t)n, (const uint8_t *)plain);
        b64[BASE64_ENCODE_RAW_LENGTH((size_t)n)] = 0;
        explicit_bzero(plain, (size_t)n);
        int r = set_authorization(rm, "Basic", b64);
        explicit_bzero(b64, strlen(b64));
        return r;
}

/* Whether the token realm may be contacted: https, or http when its host is one sbxd may
 * reach in plain HTTP. */
static bool realm_ok(const struct pull_remote *rm, const char *realm)
{
        if (strncmp(realm, "https://", 8) == 0)
                return true;
        if (strncmp(realm, "http://", 7) != 0)
                return false;
        char host[PULL_HOST_MAX];
        snprintf(host, sizeof(host), "%.*s", (int)MIN(strcspn(realm + 7, "/?#"), sizeof(host) - 1),
                 realm + 7);
        if (pull_host_is_loopback(host) || (rm->plain_ok && strcasecmp(host, rm->host) == 0))
                return true;
        for (size_t i = 0; rm->opt && i < rm->opt->n_insecure; i++)
                if (strcasecmp(rm->opt->insecure[i], host) == 0)
                        return true;
        return false;
}

static int bearer_auth(struct pull_remote *rm, const struct pull_challenge *c, char *err)
{
        if (!realm_ok(rm, c->realm))
                return fail(err,
                            "registry %s sends its clients for tokens to '%.200s', which is not "
                            "https (plain HTTP only on loopback or an --insecure-registry)",
                            rm->host, c->realm),
                       -EACCES;
        CURL *h = curl_easy_init();
        if (!h)
                return -ENOMEM;
        char scope[PULL_REPO_MAX + 32];
        snprintf(scope, sizeof(scope), "repository:%s:pull", rm->repo);
        char *es = curl_easy_escape(h, c->scope[0] ? c->scope : scope, 0);
        char *sv = curl_easy_escape(h, c->service, 0);
        _cleanup_free_ char *url = NULL;
        int r = es && sv &&
                        asprintf(&url, "%s%cservice=%s&scope=%s", c->realm,
                                 strchr(c->realm, '?') ? '&' : '?', sv, es) >= 0
                    ? 0
                    : -ENOMEM;
        curl_free(es);
        curl_free(sv);
        struct pull_sink sink = {.fd = -1, .max = PULL_TOKEN_MAX};
        struct xfer x = {.sink = &sink, .cancel = rm->cancel};
        CURLcode cc = CURLE_OK;
        if (r >= 0) {
                set_transport(h, rm, &x);
                curl_easy_setopt(h, CURLOPT_URL, url);
                if (rm->creds && rm->creds->username) {
                        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
                        curl_easy_setopt(h, CURLOPT_USERNAME, rm->creds->username);
                        curl_easy_setopt(h, CURLOPT_PASSWORD, rm->creds->password);
                }
                cc = curl_easy_perform(h);
        }
        curl_easy_cleanup(h);
        if (r >= 0 && cc != CURLE_OK)
                r = x.sink_err ? x.sink_err : -EHOSTUNREACH,
                fail(err, "the token server of registry %s (%.200s) cannot be reached: %s",
                     rm->host, c->realm, curl_easy_strerror(cc));
        else if (r >= 0 && (x.ans.status == 401 || x.ans.status == 403))
                r = -EACCES,
                fail(err,
                     rm->creds && rm->creds->username
                         ? "registry %s refused the credentials given for %s"
                         : "registry %s wants credentials for %s: give a user name and "
                           "password, or add them to sbxd's Docker config.json",
                     rm->host, rm->repo);
        else if (r >= 0 && x.ans.status != 200)
                r = -EPROTO,
                fail(err, "the token server of registry %s answered %ld", rm->host, x.ans.status);
        _cleanup_json_ cJSON *j = r >= 0 ? cJSON_ParseWithLength(sink.buf, sink.len) : NULL;
        const char *tok = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "token"));
        if (!tok)
                tok = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "access_token"));
        if (r >= 0 && (!tok || !*tok))
                r = -EPROTO, fail(err, "the token server of registry %s sent no token", rm->host);
        if (r >= 0)
                r = set_authorization(rm, "Bearer", tok);
        if (sink.buf)
                explicit_bzero(sink.buf, sink.len);
        pull_sink_done(&sink);
        return r;
}

static int authenticate(struct pull_remote *rm, const char *challenge, char *err)
{
        struct pull_challenge c;
        if (pull_challenge_parse(challenge, &c) < 0)
                return fail(err,
                            "registry %s refused the request (401) with no challenge sbxd "
                            "understands",
                            rm->host),
                       -EACCES;
        if (strcasecmp(c.scheme, "Basic") == 0)
                return basic_auth(rm, err);
        return bearer_auth(rm, &c, err);
}

/* ---- the request ---- */

static CURLcode perform(struct pull_remote *rm, CURL *h, const char *scheme, const char *path,
                        const char *accept, struct xfer *x)
{
        char url[PULL_HOST_MAX + PULL_REPO_MAX + 512], ah[256];
        struct curl_slist *hdr = NULL;
        snprintf(url, sizeof(url), "%s://%s%s", scheme, rm->host, path);
        curl_easy_reset(h);
        set_transport(h, rm, x);
        curl_easy_setopt(h, CURLOPT_URL, url);
        if (accept) {
                snprintf(ah, sizeof(ah), "Accept: %s", accept);
                hdr = curl_slist_append(hdr, ah);
        }
        pthread_mutex_lock(&rm->lock);
        _cleanup_free_ char *auth = NULL;
        if (rm->authorization && asprintf(&auth, "Authorization: %s", rm->authorization) < 0)
                auth = NULL;
        pthread_mutex_unlock(&rm->lock);
        if (auth)
                hdr = curl_slist_append(hdr, auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        CURLcode cc = curl_easy_perform(h);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
        curl_slist_free_all(hdr);
        if (auth)
                explicit_bzero(auth, strlen(auth));
        return cc;
}

static bool tls_refused(CURLcode cc)
{
        return cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING;
}

static int map_status(struct pull_remote *rm, const char *path, const struct xfer *x, char *err)
{
        char why[300];
        error_text(x, why, sizeof(why));
        switch (x->ans.status) {
        case 404:
                fail(err, "registry %s has no %.300s%s", rm->host, path, why);
                return -ENOENT;
        case 401:
        case 403:
                fail(err,
                     rm->creds && rm->creds->username
                         ? "registry %s refused the credentials given for %s (%ld%s)"
                         : "registry %s refused access to %s (%ld%s): it wants credentials",
                     rm->host, rm->repo, x->ans.status, why);
                return -EACCES;
        case 429:
                fail(err, "registry %s limits this client's requests (429%s): try later", rm->host,
                     why);
                return -EBUSY;
        default:
                fail(err, "registry %s answered %ld for %.300s%s", rm->host, x->ans.status, path,
                     why);
                return -EPROTO;
        }
}

int pull_http_get(struct pull_remote *rm, void **hp, const char *path, const char *accept,
                  struct pull_sink *sink, struct pull_answer *ret, char err[static PULL_ERR_MAX])
{
        if (!*hp && !(*hp = curl_easy_init()))
                return -ENOMEM;
        CURL *h = *hp;
        struct xfer *x = calloc(1, sizeof(*x));
        bool authed = false;
        int r = 0;
        if (!x)
                return -ENOMEM;
        x->sink = sink;
        x->cancel = rm->cancel;
        for (int attempt = 0; attempt < 4; attempt++) {
                char scheme[8];
                pthread_mutex_lock(&rm->lock);
                bool settled = rm->scheme[0];
                snprintf(scheme, sizeof(scheme), "%s", settled ? rm->scheme : "https");
                pthread_mutex_unlock(&rm->lock);
                if ((r = sink_reset(sink)) < 0)
                        break;
                x->sink_err = 0;
                x->ans = (struct pull_answer){};
                CURLcode cc = perform(rm, h, scheme, path, accept, x);
                if (cc != CURLE_OK && !settled && rm->plain_ok && strcmp(scheme, "https") == 0 &&
                    (tls_refused(cc) || (rm->insecure && cc == CURLE_COULDNT_CONNECT))) {
                        /* no TLS there: a registry that may speak plain HTTP does */
                        pthread_mutex_lock(&rm->lock);
                        snprintf(rm->scheme, sizeof(rm->scheme), "http");
                        pthread_mutex_unlock(&rm->lock);
                        continue;
                }
                if (cc == CURLE_ABORTED_BY_CALLBACK) {
                        r = -ECANCELED;
                        fail(err, "the pull was cancelled");
                        break;
                }
                if (cc == CURLE_WRITE_ERROR && x->sink_err) {
                        r = x->sink_err;
                        if (r == -EFBIG)
                                fail(err, "registry %s sent more than %llu bytes for %.300s",
                                     rm->host, (unsigned long long)sink->max, path);
                        else
                                fail(err, "storing what registry %s sent failed: %s", rm->host,
                                     strerror(-r));
                        break;
                }
                if (cc != CURLE_OK) {
                        r = -EHOSTUNREACH;
                        const char *hint =
                            cc == CURLE_PEER_FAILED_VERIFICATION && !rm->opt->extra_ca
                                ? " (a private CA: sbxd --registry-ca FILE)"
                            : tls_refused(cc) && !rm->plain_ok
                                ? " (a registry that speaks plain HTTP: sbxd "
                                  "--insecure-registry HOST[:PORT])"
                                : "";
                        fail(err, "registry %s cannot be reached over %s: %s%s", rm->host, scheme,
                             curl_easy_strerror(cc), hint);
                        break;
                }
                if (!settled) {
                        pthread_mutex_lock(&rm->lock);
                        if (!rm->scheme[0])
                                snprintf(rm->scheme, sizeof(rm->scheme), "%s", scheme);
                        pthread_mutex_unlock(&rm->lock);
                }
                if (x->ans.status == 401 && !authed) {
                        authed = true;
                        if ((r = authenticate(rm, x->challenge, err)) < 0)
                                break;
                        continue;
                }
                r = x->ans.status == 200 ? 0 : map_status(rm, path, x, err);
                break;
        }
        if (r >= 0)
                *ret = x->ans;
        free(x);
        return r;
}
