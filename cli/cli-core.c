/* SPDX-License-Identifier: Apache-2.0 */
#include "cli.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fd-util.h"
#include "keys-file.h"
#include "macros.h"

static char *first_line(const char *path)
{
        FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t n = 0;
        if (!f)
                return NULL;
        if (getline(&line, &n, f) < 0) {
                free(line);
                line = NULL;
        } else
                line[strcspn(line, "\r\n")] = 0;
        fclose(f);
        return line;
}

/* The first key of a keys file (api/keys-file.h), or NULL. */
static char *first_key(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        _cleanup_(sbx_keys_file_done) struct sbx_keys_file f = {};
        size_t len;
        if (fd < 0 || read_all(fd, SBX_KEYS_FILE_MAX, &buf, &len) < 0 ||
            sbx_keys_file_parse(buf, &f) < 0)
                return NULL;
        for (size_t i = 0; i < f.n; i++)
                if (f.line[i].key[0])
                        return strdup(f.line[i].key);
        return NULL;
}

int cli_config(struct cli *c)
{
        const char *u = getenv("SBX_URL"), *k = getenv("SBX_API_KEY");
        if (!u || !*u)
                u = getenv("E2B_API_URL");
        if (!k || !*k)
                k = getenv("E2B_API_KEY");
        const char *st = getenv("SBX_STATE_DIR");
        char path[4096];
        if (!st || !*st)
                st = "/var/lib/sbx";
        c->state_dir = st;
        if (u && *u)
                c->url = strdup(u);
        else {
                snprintf(path, sizeof(path), "%s/url", st); /* sbxd writes it once listening */
                c->url = first_line(path);
                if (!c->url || strncmp(c->url, "http", 4) != 0) {
                        free(c->url);
                        c->url = strdup("http://127.0.0.1:3000");
                }
        }
        if (k && *k)
                c->key = strdup(k);
        else {
                snprintf(path, sizeof(path), "%s/" SBX_KEYS_FILE, st);
                c->key = first_key(path);
        }
        if (!c->url)
                return -ENOMEM;
        size_t l = strlen(c->url);
        while (l > 0 && c->url[l - 1] == '/')
                c->url[--l] = 0;
        return 0;
}

void cli_done(struct cli *c)
{
        free(c->url);
        free(c->key);
}

void cli_resp_done(struct cli_resp *r)
{
        free(r->body);
        r->body = NULL;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
        struct cli_resp *r = ud;
        size_t k = size * n;
        if (r->len + k > CLI_MAX_RESPONSE)
                return 0;
        char *nb = realloc(r->body, r->len + k + 1);
        if (!nb)
                return 0;
        memcpy(nb + r->len, p, k);
        r->body = nb;
        r->len += k;
        r->body[r->len] = 0;
        return k;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
        struct cli_resp *r = ud;
        size_t k = size * n;
        static const char name[] = "mcp-session-id:";
        if (k > sizeof(name) && strncasecmp(p, name, sizeof(name) - 1) == 0) {
                const char *v = p + sizeof(name) - 1;
                while (*v == ' ')
                        v++;
                size_t vl = strcspn(v, "\r\n");
                if (vl < sizeof(r->session))
                        snprintf(r->session, sizeof(r->session), "%.*s", (int)vl, v);
        }
        return k;
}

/* Perform h (its body options set, NULL when curl_easy_init() failed) as method to c's URL +
 * path, with the key, ctype and extra as headers, the answer into ret; then free h. */
static int perform(const struct cli *c, CURL *h, const char *method, const char *path,
                   const char *ctype, const char *extra, struct cli_resp *ret)
{
        struct curl_slist *hs = NULL;
        char auth[512], ct[256], url[8192];
        *ret = (struct cli_resp){0};
        if (!h)
                return -ENOMEM;
        snprintf(url, sizeof(url), "%s%s", c->url, path);
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->key ? c->key : "");
        hs = curl_slist_append(hs, auth);
        if (ctype) {
                snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
                hs = curl_slist_append(hs, ct);
        }
        hs = curl_slist_append(hs, "Expect:");
        if (extra)
                hs = curl_slist_append(hs, extra);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, ret);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, ret);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        CURLcode rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->status);
        curl_slist_free_all(hs);
        curl_easy_cleanup(h);
        if (!ret->body && (ret->body = strdup("")) == NULL)
                return -ENOMEM;
        if (rc != CURLE_OK) {
                fprintf(stderr, "sbx: %s: %s\n", c->url, curl_easy_strerror(rc));
                return -EHOSTUNREACH;
        }
        return 0;
}

int cli_http(const struct cli *c, const char *method, const char *path, const char *ctype,
             const void *body, size_t len, const char *extra, struct cli_resp *ret)
{
        CURL *h = curl_easy_init();
        if (h && body) {
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
                curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        }
        return perform(c, h, method, path, ctype, extra, ret);
}

static size_t read_file(char *buf, size_t size, size_t n, void *ud)
{
        return fread(buf, size, n, ud);
}

int cli_http_upload(const struct cli *c, const char *path, const char *ctype, FILE *f,
                    uint64_t size, struct cli_resp *ret)
{
        CURL *h = curl_easy_init();
        if (h) {
                curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
                curl_easy_setopt(h, CURLOPT_READFUNCTION, read_file);
                curl_easy_setopt(h, CURLOPT_READDATA, f);
                curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
        }
        return perform(c, h, "POST", path, ctype, NULL, ret);
}

int cli_fail(const struct cli_resp *r)
{
        cJSON *o = cJSON_Parse(r->body);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o, "error"), "message");
        fprintf(stderr, "sbx: %s (HTTP %ld)\n", cJSON_IsString(m) ? m->valuestring : r->body,
                r->status);
        cJSON_Delete(o);
        return 1;
}

char *cli_escape(const char *s)
{
        char *out = malloc(strlen(s) * 3 + 1), *o = out;
        if (!out)
                return NULL;
        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;
                if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || strchr("-._~/", ch))
                        *o++ = (char)ch;
                else
                        o += sprintf(o, "%%%02X", ch);
        }
        *o = 0;
        return out;
}
