/* SPDX-License-Identifier: Apache-2.0 */
#include "egress/egress-tls.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
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
        char *ca_pem;
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

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
        X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        if (!ext)
                return -EIO;
        int ok = X509_add_ext(cert, ext, -1);
        X509_EXTENSION_free(ext);
        return ok ? 0 : -EIO;
}

/* A certificate for key, signed by issuer_key (self-signed when issuer is NULL). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, long days,
                       bool ca, const char *san)
{
        X509 *c = X509_new();
        unsigned char serial[16];
        BIGNUM *bn = NULL;
        bool ok = c && RAND_bytes(serial, sizeof(serial)) == 1;
        serial[0] &= 0x7f;
        if (ok)
                ok = (bn = BN_bin2bn(serial, sizeof(serial), NULL)) &&
                     BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c)) && X509_set_version(c, 2) &&
                     X509_gmtime_adj(X509_getm_notBefore(c), -3600) &&
                     X509_gmtime_adj(X509_getm_notAfter(c), days * 86400) &&
                     X509_set_pubkey(c, key);
        BN_free(bn);
        X509_NAME *n = ok ? X509_get_subject_name(c) : NULL;
        ok = ok && X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
                                              -1, 0);
        ok = ok && X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : n);
        X509 *iss = issuer ? issuer : c;
        if (ok && ca)
                ok = add_ext(c, iss, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == 0 &&
                     add_ext(c, iss, NID_key_usage, "critical,keyCertSign,cRLSign") == 0 &&
                     add_ext(c, iss, NID_subject_key_identifier, "hash") == 0;
        if (ok && !ca)
                ok = add_ext(c, iss, NID_basic_constraints, "critical,CA:FALSE") == 0 &&
                     add_ext(c, iss, NID_key_usage, "critical,digitalSignature") == 0 &&
                     add_ext(c, iss, NID_ext_key_usage, "serverAuth") == 0 &&
                     add_ext(c, iss, NID_subject_alt_name, san) == 0 &&
                     add_ext(c, iss, NID_authority_key_identifier, "keyid") == 0;
        if (!ok || !X509_sign(c, issuer_key, EVP_sha256())) {
                X509_free(c);
                return NULL;
        }
        return c;
}

static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, X509 *cert)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        BIO *b = BIO_new(BIO_s_mem());
        bool ok = b && (key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)
                            : PEM_write_bio_X509(b, cert));
        char *data;
        long len = ok ? BIO_get_mem_data(b, &data) : 0;
        int r = ok ? write_full(fd, data, (size_t)len) : -EIO;
        BIO_free(b);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        return r;
}

/* ca.key and ca.crt: loaded, or made when neither exists. */
static int load_or_make_ca(struct egress_tls *t, const char *state_dir, char *errmsg, size_t errlen)
{
        char dir[4096], key[4200], crt[4200];
        snprintf(dir, sizeof(dir), "%s/" EGRESS_CA_DIRNAME, state_dir);
        snprintf(key, sizeof(key), "%s/ca.key", dir);
        snprintf(crt, sizeof(crt), "%s/" EGRESS_CA_CERT, dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return snprintf(errmsg, errlen, "egress TLS: %s: %s", dir, strerror(errno)), -errno;
        if (access(key, F_OK) < 0) {
                char cn[64], rnd[8];
                t->ca_key = EVP_EC_gen("P-256");
                if (!t->ca_key || RAND_bytes((unsigned char *)rnd, sizeof(rnd)) != 1)
                        return fail(errmsg, errlen, "making the CA key");
                snprintf(cn, sizeof(cn), "sbx egress CA %02x%02x%02x%02x", (uint8_t)rnd[0],
                         (uint8_t)rnd[1], (uint8_t)rnd[2], (uint8_t)rnd[3]);
                t->ca = make_cert(t->ca_key, cn, NULL, t->ca_key, EGRESS_CA_DAYS, true, NULL);
                if (!t->ca)
                        return fail(errmsg, errlen, "making the CA certificate");
                (void)unlink(crt);
                int r = write_pem(crt, 0644, NULL, t->ca);
                if (r >= 0)
                        r = write_pem(key, 0600, t->ca_key, NULL);
                if (r < 0)
                        return snprintf(errmsg, errlen, "egress TLS: writing %s: %s", dir,
                                        strerror(-r)),
                               r;
                log_info("egress: made the sandboxes' CA in %s", dir);
                return 0;
        }
        FILE *fk = fopen(key, "re"), *fc = fopen(crt, "re");
        if (fk)
                t->ca_key = PEM_read_PrivateKey(fk, NULL, NULL, NULL);
        if (fc)
                t->ca = PEM_read_X509(fc, NULL, NULL, NULL);
        if (fk)
                fclose(fk);
        if (fc)
                fclose(fc);
        if (!t->ca_key || !t->ca || X509_check_private_key(t->ca, t->ca_key) != 1)
                return fail(errmsg, errlen, "loading the CA in " EGRESS_CA_DIRNAME);
        return 0;
}

int egress_tls_new(const char *state_dir, const char *upstream_ca, struct egress_tls **ret,
                   char *errmsg, size_t errlen)
{
        struct egress_tls *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        pthread_mutex_init(&t->lock, NULL);
        int r = load_or_make_ca(t, state_dir, errmsg, errlen);
        if (r >= 0 && !(t->leaf_key = EVP_EC_gen("P-256")))
                r = fail(errmsg, errlen, "making the leaf key");
        BIO *b = r >= 0 ? BIO_new(BIO_s_mem()) : NULL;
        char *data;
        long len;
        if (r >= 0 &&
            (!b || !PEM_write_bio_X509(b, t->ca) || (len = BIO_get_mem_data(b, &data)) <= 0 ||
             !(t->ca_pem = strndup(data, (size_t)len))))
                r = fail(errmsg, errlen, "the CA's PEM");
        BIO_free(b);
        if (r >= 0) {
                t->client = SSL_CTX_new(TLS_client_method());
                if (!t->client || SSL_CTX_set_default_verify_paths(t->client) != 1 ||
                    SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION) != 1 ||
                    (upstream_ca &&
                     SSL_CTX_load_verify_locations(t->client, upstream_ca, NULL) != 1))
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
        free(t->ca_pem);
        pthread_mutex_destroy(&t->lock);
        free(t);
}

const char *egress_tls_ca_pem(const struct egress_tls *t)
{
        return t->ca_pem;
}

static SSL_CTX *leaf_ctx(struct egress_tls *t, const char *name)
{
        char san[300];
        snprintf(san, sizeof(san), "DNS:%s", name);
        X509 *leaf = make_cert(t->leaf_key, name, t->ca, t->ca_key, EGRESS_LEAF_DAYS, false, san);
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
