/* SPDX-License-Identifier: Apache-2.0 */
#include "random-util.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

int random_bytes(void *buf, size_t n)
{
        uint8_t *p = buf;
        while (n > 0) {
                ssize_t r = getrandom(p, n, 0);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += r;
                n -= (size_t)r;
        }
        return 0;
}

int random_hex(char *out, size_t n)
{
        static const char hex[] = "0123456789abcdef";
        uint8_t b[64];
        size_t o = 0;
        while (n > 0) {
                size_t k = n < sizeof(b) ? n : sizeof(b);
                int r = random_bytes(b, k);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < k; i++) {
                        out[o++] = hex[b[i] >> 4];
                        out[o++] = hex[b[i] & 15];
                }
                n -= k;
        }
        out[o] = 0;
        return 0;
}

int random_sandbox_id(char out[static 21])
{
        static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
        uint8_t b[20];
        int r = random_bytes(b, sizeof(b));
        if (r < 0)
                return r;
        /* 252 = 7*36: rejecting bytes >= 252 would be exact; a 36-symbol alphabet over 256
         * values biases the first 4 symbols by 1/256, acceptable for an identifier (the
         * secret is the access token, not the id). */
        out[0] = alnum[b[0] % 26];
        for (int i = 1; i < 20; i++)
                out[i] = alnum[b[i] % 36];
        out[20] = 0;
        return 0;
}
