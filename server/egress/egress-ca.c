/* SPDX-License-Identifier: Apache-2.0 */
#include "egress/egress-ca.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress/cert/egress-cert.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"

static void free_wiped(char *s)
{
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
}

static int write_new(const char *path, mode_t mode, const char *text)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        int r = write_full(fd, text, strlen(text));
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        return r;
}

static int read_text(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        return read_all(fd, EGRESS_CA_PEM_MAX, ret, NULL);
}

/* Do the two texts hold a key and the certificate of that key? */
static bool pair_ok(const char *key, const char *cert)
{
        BIO *bk = BIO_new_mem_buf(key, -1), *bc = BIO_new_mem_buf(cert, -1);
        EVP_PKEY *k = bk ? PEM_read_bio_PrivateKey(bk, NULL, NULL, NULL) : NULL;
        X509 *c = bc ? PEM_read_bio_X509(bc, NULL, NULL, NULL) : NULL;
        bool ok = k && c && X509_check_private_key(c, k) == 1;
        EVP_PKEY_free(k);
        X509_free(c);
        BIO_free(bk);
        BIO_free(bc);
        ERR_clear_error();
        return ok;
}

static int make(const char *dir, const char *key_path, const char *crt_path, char **ret_key,
                char **ret_cert)
{
        EVP_PKEY *k = NULL;
        X509 *c = NULL;
        int r = egress_cert_make_ca(&k, &c);
        char *key = r >= 0 ? egress_cert_pem(k, NULL) : NULL;
        char *cert = r >= 0 ? egress_cert_pem(NULL, c) : NULL;
        EVP_PKEY_free(k);
        X509_free(c);
        ERR_clear_error();
        if (r >= 0 && (!key || !cert))
                r = -EIO;
        if (r >= 0) {
                (void)unlink(crt_path); /* a certificate without its key is of no use */
                r = write_new(crt_path, 0644, cert);
        }
        if (r >= 0)
                r = write_new(key_path, 0600, key);
        if (r < 0) {
                free_wiped(key);
                free(cert);
                return r;
        }
        log_info("egress: made the sandboxes' CA in %s", dir);
        *ret_key = key;
        *ret_cert = cert;
        return 0;
}

int egress_ca_load(const char *state_dir, char **ret_key, char **ret_cert, char *errmsg,
                   size_t errlen)
{
        char dir[4096], key_path[4200], crt_path[4200];
        snprintf(dir, sizeof(dir), "%s/" EGRESS_CA_DIRNAME, state_dir);
        snprintf(key_path, sizeof(key_path), "%s/" EGRESS_CA_KEY, dir);
        snprintf(crt_path, sizeof(crt_path), "%s/" EGRESS_CA_CERT, dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                int r = -errno;
                snprintf(errmsg, errlen, "egress CA: %s: %s", dir, strerror(-r));
                return r;
        }
        if (access(key_path, F_OK) < 0) {
                int r = make(dir, key_path, crt_path, ret_key, ret_cert);
                if (r < 0)
                        snprintf(errmsg, errlen, "egress CA: making it in %s: %s", dir,
                                 strerror(-r));
                return r;
        }
        char *key = NULL, *cert = NULL;
        int r = read_text(key_path, &key);
        if (r >= 0)
                r = read_text(crt_path, &cert);
        if (r >= 0 && !pair_ok(key, cert))
                r = -EBADMSG;
        if (r < 0) {
                snprintf(errmsg, errlen, "egress CA: loading it from %s: %s", dir,
                         r == -EBADMSG ? "not a key and its certificate" : strerror(-r));
                free_wiped(key);
                free(cert);
                return r;
        }
        *ret_key = key;
        *ret_cert = cert;
        return 0;
}
