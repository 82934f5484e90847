/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/connect-json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macros.h"

#define DEFAULT_KEEPALIVE_S 90
#define MAX_TIMEOUT_MS      (100LL * 365 * 24 * 3600 * 1000)

static int dup_out(const char *s, char **ret, size_t *ret_len)
{
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        *ret = d;
        *ret_len = strlen(d);
        return 0;
}

static int print_out(cJSON *j, char **ret, size_t *ret_len)
{
        char *s = cJSON_PrintUnformatted(j);
        if (!s)
                return -ENOMEM;
        *ret = s;
        *ret_len = strlen(s);
        return 0;
}

int cj_event_start(uint32_t pid, char **ret, size_t *ret_len)
{
        char buf[64];
        snprintf(buf, sizeof(buf), "{\"event\":{\"start\":{\"pid\":%u}}}", pid);
        return dup_out(buf, ret, ret_len);
}

int cj_event_data(enum agent_output_stream stream, const uint8_t *buf, size_t len, char **ret,
                  size_t *ret_len)
{
        static const char *const names[] = {"stdout", "stderr", "pty"};
        const char *name = names[stream];
        size_t b64 = BASE64_ENCODE_RAW_LENGTH(len);
        size_t total = strlen("{\"event\":{\"data\":{\"\":\"\"}}}") + strlen(name) + b64;
        char *s = malloc(total + 1);
        int o;

        if (!s)
                return -ENOMEM;
        o = sprintf(s, "{\"event\":{\"data\":{\"%s\":\"", name);
        base64_encode_raw(s + o, len, buf);
        memcpy(s + o + b64, "\"}}}", 5);
        *ret = s;
        *ret_len = total;
        return 0;
}

int cj_event_keepalive(char **ret, size_t *ret_len)
{
        return dup_out("{\"event\":{\"keepalive\":{}}}", ret, ret_len);
}

int cj_event_end(const struct agent_exit *e, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();
        cJSON *ev, *end;

        if (!root || !(ev = cJSON_AddObjectToObject(root, "event")) ||
            !(end = cJSON_AddObjectToObject(ev, "end")))
                return -ENOMEM;
        /* proto3 JSON omits defaults: exitCode 0, exited false, empty status. */
        if (e->exit_code != 0 && !cJSON_AddNumberToObject(end, "exitCode", e->exit_code))
                return -ENOMEM;
        if (e->exited && !cJSON_AddTrueToObject(end, "exited"))
                return -ENOMEM;
        if (e->status[0] && !cJSON_AddStringToObject(end, "status", e->status))
                return -ENOMEM;
        if (e->has_error && !cJSON_AddStringToObject(end, "error", e->status))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int cj_bytes_decode(const char *s, uint8_t **ret, size_t *ret_len)
{
        struct base64_decode_ctx ctx;
        size_t n = strlen(s), outlen;
        bool url = strpbrk(s, "-_") != NULL;

        /* nettle wants complete quanta: re-pad unpadded input. */
        _cleanup_free_ char *padded = malloc(n + 4);
        _cleanup_free_ uint8_t *out = malloc(BASE64_DECODE_LENGTH(n + 3) + 1);
        if (!padded || !out)
                return -ENOMEM;
        memcpy(padded, s, n);
        if (n % 4 == 1)
                return -EINVAL;
        while (n % 4)
                padded[n++] = '=';
        if (url)
                base64url_decode_init(&ctx);
        else
                base64_decode_init(&ctx);
        outlen = BASE64_DECODE_LENGTH(n);
        if (!base64_decode_update(&ctx, &outlen, out, n, padded) || !base64_decode_final(&ctx))
                return -EINVAL;
        *ret = TAKE_PTR(out);
        *ret_len = outlen;
        return 0;
}

/* Connect-Timeout-Ms: 1..10 ASCII digits (Connect protocol). 0 = no header. */
int agent_parse_connect_timeout(const char *s, int64_t *ret)
{
        int64_t v = 0;
        size_t n = 0;

        *ret = 0;
        if (!s)
                return 0;
        for (; s[n]; n++) {
                if (s[n] < '0' || s[n] > '9' || n >= 10)
                        return -EINVAL;
                v = v * 10 + (s[n] - '0');
        }
        if (n == 0)
                return -EINVAL;
        *ret = MIN(v, MAX_TIMEOUT_MS);
        return 0;
}

int agent_parse_keepalive(const char *s)
{
        char *end;
        long v;

        if (!s)
                return DEFAULT_KEEPALIVE_S;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v <= 0)
                return DEFAULT_KEEPALIVE_S;
        return (int)MIN(v, 24L * 3600);
}
