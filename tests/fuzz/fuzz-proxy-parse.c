/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what the TLS proxy reads of a sandbox's connection
 * (egress/policy/proxy-parse.c): a ClientHello's server name and an HTTP/1 request head, both
 * bytes from a sandbox, and the head it sends upstream with a transform's headers (the secret
 * goes there). Input: what the sandbox sends. Properties:
 *   - the server name and the head's end are found the same way however much has arrived: a
 *     prefix gives "more bytes needed" or the same answer as the whole;
 *   - a server name or a Host is lowercase letters, digits, '-' and '.', at most 253 bytes;
 *   - a head the proxy accepts for a name (proxy_http_check_target) is sent on with exactly one
 *     Host (that name) and one of each transform header (the sandbox's own dropped), every line
 *     ended by CRLF with no other CR or LF, and "Connection: close" last;
 *   - a placeholder resolved leaves no placeholder of a known secret behind.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "egress/policy/net-transform.h"
#include "egress/policy/proxy-parse.h"
#include "fuzz.h"

static void check_name(const char *name)
{
        size_t n = strlen(name);
        FUZZ_CHECK(n <= 253);
        for (size_t i = 0; i < n; i++)
                FUZZ_CHECK((name[i] >= 'a' && name[i] <= 'z') ||
                           (name[i] >= '0' && name[i] <= '9') || name[i] == '-' || name[i] == '.');
}

static void sni(const uint8_t *data, size_t size)
{
        char name[256], again[256];
        int r = proxy_tls_sni(data, size, name);
        if (r == 1)
                check_name(name);
        struct fuzz_chunker c;
        fuzz_chunker_init(&c, data, size, 97);
        for (size_t k = 0; k < size;) {
                k += fuzz_chunker_next(&c, size - k);
                int rk = proxy_tls_sni(data, k, again);
                FUZZ_CHECK(rk == 0 || rk == r);
                FUZZ_CHECK(rk != 1 || !strcmp(name, again));
        }
}

/* Lines of out (n bytes) that start with the header name (case-insensitively), then ':'. */
static int count(const char *out, size_t n, const char *name)
{
        int c = 0;
        size_t l = strlen(name);
        for (size_t i = 0; i + l < n; i++)
                if ((i == 0 || out[i - 1] == '\n') && !strncasecmp(out + i, name, l) &&
                    out[i + l] == ':')
                        c++;
        return c;
}

static int secret(void *arg, const char *name, char *buf, size_t size)
{
        (void)arg;
        if (strcmp(name, "k") != 0)
                return -ENOENT;
        if (size < 4)
                return -ENOBUFS;
        memcpy(buf, "S3C", 4);
        return 3;
}

static void http(const char *buf, size_t size)
{
        int h = proxy_http_head_len(buf, size);
        struct fuzz_chunker c;
        fuzz_chunker_init(&c, (const uint8_t *)buf, size, 61);
        for (size_t k = 0; k < size && h > 0;) {
                k += fuzz_chunker_next(&c, size - k);
                int hk = proxy_http_head_len(buf, k);
                FUZZ_CHECK(k >= (size_t)h ? hk == h : hk == 0);
        }
        if (h <= 0)
                return;
        char host[256];
        if (proxy_http_host(buf, (size_t)h, host) < 0)
                return;
        check_name(host);
        int t = proxy_http_check_target(buf, (size_t)h, host);
        FUZZ_CHECK(t == 0 || t == -EINVAL);
        if (t < 0)
                return;
        cJSON *hd = cJSON_CreateObject();
        cJSON_AddStringToObject(hd, "Authorization", "Bearer S3C");
        cJSON_AddStringToObject(hd, "X-Sbx", "v");
        static char out[2 * PROXY_HEAD_MAX + 2];
        int n = proxy_http_rewrite(buf, (size_t)h, hd, out, sizeof(out));
        cJSON_Delete(hd);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof(out));
        FUZZ_CHECK(count(out, (size_t)n, "authorization") == 1 &&
                   count(out, (size_t)n, "x-sbx") == 1);
        FUZZ_CHECK(count(out, (size_t)n, "host") == 1);
        FUZZ_CHECK(n >= 21 && !memcmp(out + n - 21, "Connection: close\r\n\r\n", 21));
        for (int i = 0; i < n; i++) {
                if (out[i] == '\r')
                        FUZZ_CHECK(i + 1 < n && out[i + 1] == '\n');
                if (out[i] == '\n')
                        FUZZ_CHECK(i > 0 && out[i - 1] == '\r');
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sni(data, size);
        http((const char *)data, size);
        char value[512], out[1024];
        size_t n = size < sizeof(value) - 1 ? size : sizeof(value) - 1;
        memcpy(value, data, n);
        value[n] = 0;
        const char *missing = NULL;
        int r = proxy_resolve_value(value, secret, NULL, out, sizeof(out), &missing);
        FUZZ_CHECK(r < 0 || (size_t)r < sizeof(out));
        if (r >= 0) /* every placeholder the value holds was resolved, or the call failed */
                FUZZ_CHECK(!strstr(out, NET_SECRET_PLACEHOLDER "k}"));
        return 0;
}
