/* SPDX-License-Identifier: Apache-2.0 */
#include "egress-cert.h"

#include <errno.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

int egress_cert_make_ca(EVP_PKEY **ret_key, X509 **ret_cert)
{
        unsigned char rnd[4];
        char cn[64];
        EVP_PKEY *key = EVP_EC_gen("P-256");
        if (!key || RAND_bytes(rnd, sizeof(rnd)) != 1) {
                EVP_PKEY_free(key);
                return -EIO;
        }
        snprintf(cn, sizeof(cn), "sbx egress CA %02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
        X509 *cert = make_cert(key, cn, NULL, key, EGRESS_CA_DAYS, true, NULL);
        if (!cert) {
                EVP_PKEY_free(key);
                return -EIO;
        }
        *ret_key = key;
        *ret_cert = cert;
        return 0;
}

X509 *egress_cert_leaf(EVP_PKEY *key, const char *name, X509 *ca, EVP_PKEY *ca_key)
{
        char san[300];
        if ((size_t)snprintf(san, sizeof(san), "DNS:%s", name) >= sizeof(san))
                return NULL;
        return make_cert(key, name, ca, ca_key, EGRESS_LEAF_DAYS, false, san);
}

char *egress_cert_pem(EVP_PKEY *key, X509 *cert)
{
        BIO *b = BIO_new(BIO_s_mem());
        bool ok = b && (key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)
                            : PEM_write_bio_X509(b, cert));
        char *data, *out = NULL;
        long len = ok ? BIO_get_mem_data(b, &data) : 0;
        if (len > 0)
                out = strndup(data, (size_t)len);
        if (len > 0 && key)
                OPENSSL_cleanse(data, (size_t)len);
        BIO_free(b);
        return out;
}
