/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/hop-auth.h"

#include <errno.h>
#include <inttypes.h>
#include <nettle/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd.h"
#include "log.h"
#include "random-util.h"

static char the_secret[HOP_AUTH_SECRET_LEN + 1];
static bool have_secret; /* __atomic */

static void mac_hex(const char *secret, const char *method, const char *target, long long ts,
                    char out[static 2 * SHA256_DIGEST_SIZE + 1])
{
        struct hmac_sha256_ctx c;
        uint8_t d[SHA256_DIGEST_SIZE];
        char head[64];
        int hl = snprintf(head, sizeof(head), "sbx-cluster-hop v1\n%lld\n", ts);
        hmac_sha256_set_key(&c, strlen(secret), (const uint8_t *)secret);
        hmac_sha256_update(&c, (size_t)hl, (const uint8_t *)head);
        hmac_sha256_update(&c, strlen(method), (const uint8_t *)method);
        hmac_sha256_update(&c, 1, (const uint8_t *)"\n");
        hmac_sha256_update(&c, strlen(target), (const uint8_t *)target);
        hmac_sha256_digest(&c, sizeof(d), d);
        for (size_t i = 0; i < sizeof(d); i++)
                snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void hop_auth_sign(const char *secret, const char *method, const char *target, time_t now,
                   char out[static HOP_AUTH_VALUE_MAX])
{
        char mac[2 * SHA256_DIGEST_SIZE + 1];
        mac_hex(secret, method, target, (long long)now, mac);
        snprintf(out, HOP_AUTH_VALUE_MAX, "v1 %lld %s", (long long)now, mac);
}

int hop_auth_verify(const char *secret, const char *value, const char *method, const char *target,
                    time_t now)
{
        if (!value || strncmp(value, "v1 ", 3) != 0)
                return -EBADMSG;
        const char *p = value + 3;
        size_t dl = strspn(p, "0123456789");
        if (dl == 0 || dl > 18 || p[dl] != ' ')
                return -EBADMSG;
        long long ts = strtoll(p, NULL, 10);
        const char *got = p + dl + 1;
        if (strlen(got) != 2 * SHA256_DIGEST_SIZE ||
            strspn(got, "0123456789abcdef") != 2 * SHA256_DIGEST_SIZE)
                return -EBADMSG;
        if (ts < (long long)now - HOP_AUTH_WINDOW_S || ts > (long long)now + HOP_AUTH_WINDOW_S)
                return -ETIME;
        if (!secret || !*secret)
                return -EACCES;
        char want[2 * SHA256_DIGEST_SIZE + 1];
        mac_hex(secret, method, target, ts, want);
        unsigned char diff = 0; /* in constant time */
        for (size_t i = 0; i < 2 * SHA256_DIGEST_SIZE; i++)
                diff |= (unsigned char)(want[i] ^ got[i]);
        return diff ? -EACCES : 0;
}

void hop_auth_set(const char *secret)
{
        __atomic_store_n(&have_secret, false, __ATOMIC_RELEASE);
        if (!secret)
                return;
        snprintf(the_secret, sizeof(the_secret), "%s", secret);
        __atomic_store_n(&have_secret, true, __ATOMIC_RELEASE);
}

const char *hop_auth_secret(void)
{
        return __atomic_load_n(&have_secret, __ATOMIC_ACQUIRE) ? the_secret : NULL;
}

bool hop_auth_value(const char *method, const char *target, char out[static HOP_AUTH_VALUE_MAX])
{
        const char *s = hop_auth_secret();
        if (!s)
                return false;
        hop_auth_sign(s, method, target, time(NULL), out);
        return true;
}

int hop_auth_check(const char *value, const char *method, const char *target)
{
        return hop_auth_verify(hop_auth_secret(), value, method, target, time(NULL));
}

const char *hop_auth_strerror(int r)
{
        switch (-r) {
        case EBADMSG:
                return "malformed";
        case ETIME:
                return "expired or from a clock more than 30 s off";
        default:
                return "wrong signature";
        }
}

/* The stored secret, if any: 0 with it in out, -ENOENT (also for a value of another length),
 * or the etcd error. */
static int read_secret(struct etcd *e, const char *key, char out[static HOP_AUTH_SECRET_LEN + 1])
{
        _cleanup_free_ char *v = NULL;
        int r = etcd_get(e, key, &v);
        if (r < 0)
                return r;
        if (strlen(v) != HOP_AUTH_SECRET_LEN)
                return -ENOENT;
        memcpy(out, v, HOP_AUTH_SECRET_LEN + 1);
        return 0;
}

int hop_auth_load(struct etcd *e, const char *key)
{
        char s[HOP_AUTH_SECRET_LEN + 1];
        int r = read_secret(e, key, s);
        if (r == -ENOENT) {
                char fresh[HOP_AUTH_SECRET_LEN + 1];
                r = random_hex(fresh, HOP_AUTH_SECRET_LEN / 2);
                if (r >= 0)
                        r = etcd_put_absent(e, key, fresh);
                if (r >= 0) /* ours, or another node's that came first */
                        r = read_secret(e, key, s);
        }
        if (r < 0)
                return r;
        hop_auth_set(s);
        return 0;
}
