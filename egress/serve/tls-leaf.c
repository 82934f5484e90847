/* SPDX-License-Identifier: Apache-2.0 */
#include "serve/tls-leaf.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cert/egress-cert.h"
#include "macros.h"
#include "time-util.h"

struct leaf {
        char name[256];
        SSL_CTX *ctx;
        int64_t used_ms;
};

struct egress_tls {
        EVP_PKEY *ca_key, *leaf_key;
        X509 *ca;
        SSL_CTX *client;
        pthread_mutex_t lock; /* the cache */
        struct leaf cache[EGRESS_TLS_CACHE];
};

static int fail(char *errmsg, size_t errlen, const char *what)
{
        unsigned long e = ERR_get_error();
        char buf[256] = "";
        if (e)
                ERR_error_string_n(e, buf, sizeof(buf));
        snprintf(errmsg, errlen, "egress TLS: %s%s%s", what, e ? ": " : "", buf);
        ERR_clear_error();
        return -EIO;
}

static BIO *pem_bio(const char *pem)
{
        return BIO_new_mem_buf(pem, -1);
}

static int load_ca(struct egress_tls *t, const char *key, const char *cert)
{
        BIO *bk = pem_bio(key), *bc = pem_bio(cert);
        if (bk)
                t->ca_key = PEM_read_bio_PrivateKey(bk, NULL, NULL, NULL);
        if (bc)
                t->ca = PEM_read_bio_X509(bc, NULL, NULL, NULL);
        BIO_free(bk);
        BIO_free(bc);
        return t->ca_key && t->ca && X509_check_private_key(t->ca, t->ca_key) == 1 ? 0 : -EIO;
}

/* Every certificate of a PEM bundle into the context's trust store. */
static int trust_bundle(SSL_CTX *ctx, const char *pem)
{
        BIO *b = pem_bio(pem);
        STACK_OF(X509_INFO) *infos = b ? PEM_X509_INFO_read_bio(b, NULL, NULL, NULL) : NULL;
        X509_STORE *store = SSL_CTX_get_cert_store(ctx);
        int n = 0, r = infos ? 0 : -EIO;
        for (int i = 0; infos && i < sk_X509_INFO_num(infos) && r >= 0; i++) {
                X509_INFO *x = sk_X509_INFO_value(infos, i);
                if (x->x509 && X509_STORE_add_cert(store, x->x509) != 1)
                        r = -EIO;
                n += x->x509 != NULL;
        }
        sk_X509_INFO_pop_free(infos, X509_INFO_free);
        BIO_free(b);
        return r < 0 || n == 0 ? -EIO : 0;
}

int egress_tls_new(const char *ca_key, const char *ca_cert, const char *upstream_ca,
                   struct egress_tls **ret, char *errmsg, size_t errlen)
{
        struct egress_tls *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        pthread_mutex_init(&t->lock, NULL);
        int r = load_ca(t, ca_key, ca_cert);
        if (r < 0)
                r = fail(errmsg, errlen, "loading the sandboxes' CA");
        if (r >= 0 && !(t->leaf_key = EVP_EC_gen("P-256")))
                r = fail(errmsg, errlen, "making the leaf key");
        if (r >= 0) {
                t->client = SSL_CTX_new(TLS_client_method());
                if (!t->client || SSL_CTX_set_default_verify_paths(t->client) != 1 ||
                    SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION) != 1 ||
                    (upstream_ca && trust_bundle(t->client, upstream_ca) < 0))
                        r = fail(errmsg, errlen, "the upstream context");
                else
                        SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
        }
        if (r < 0) {
                egress_tls_free(t);
                return r;
        }
        *ret = t;
        return 0;
}

void egress_tls_free(struct egress_tls *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < EGRESS_TLS_CACHE; i++)
                SSL_CTX_free(t->cache[i].ctx);
        SSL_CTX_free(t->client);
        EVP_PKEY_free(t->ca_key);
        EVP_PKEY_free(t->leaf_key);
        X509_free(t->ca);
        pthread_mutex_destroy(&t->lock);
        free(t);
}

static SSL_CTX *leaf_ctx(struct egress_tls *t, const char *name)
{
        X509 *leaf = egress_cert_leaf(t->leaf_key, name, t->ca, t->ca_key);
        SSL_CTX *ctx = leaf ? SSL_CTX_new(TLS_server_method()) : NULL;
        if (!ctx || SSL_CTX_use_certificate(ctx, leaf) != 1 ||
            SSL_CTX_use_PrivateKey(ctx, t->leaf_key) != 1 ||
            SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
                SSL_CTX_free(ctx);
                ctx = NULL;
        }
        X509_free(leaf);
        return ctx;
}

SSL *egress_tls_server(struct egress_tls *t, const char *name)
{
        pthread_mutex_lock(&t->lock);
        struct leaf *hit = NULL, *oldest = &t->cache[0];
        for (size_t i = 0; i < EGRESS_TLS_CACHE && !hit; i++) {
                struct leaf *l = &t->cache[i];
                if (l->ctx && strcmp(l->name, name) == 0)
                        hit = l;
                else if (!l->ctx || (oldest->ctx && l->used_ms < oldest->used_ms))
                        oldest = l;
        }
        if (!hit) { /* minted under the lock: a few ms, and never twice for one name */
                SSL_CTX *ctx = leaf_ctx(t, name);
                if (ctx) {
                        SSL_CTX_free(oldest->ctx);
                        hit = oldest;
                        hit->ctx = ctx;
                        snprintf(hit->name, sizeof(hit->name), "%s", name);
                }
        }
        SSL *s = NULL;
        if (hit) {
                hit->used_ms = now_ms();
                s = SSL_new(hit->ctx);
        }
        pthread_mutex_unlock(&t->lock);
        return s;
}

SSL *egress_tls_client(struct egress_tls *t, const char *name)
{
        SSL *s = SSL_new(t->client);
        if (!s || SSL_set_tlsext_host_name(s, name) != 1 || SSL_set1_host(s, name) != 1) {
                SSL_free(s);
                return NULL;
        }
        return s;
}
