/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbx image pull REF [--name NAME[:TAG]] [--username USER --password-stdin]: sbxd's
 * POST /v1/images/pull (api/openapi/sbx-v1.yaml), its progress stream (NDJSON) printed on
 * stderr as it comes, the result on stdout.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json-util.h"
#include "macros.h"

#define PULL_LINE_MAX (1024 * 1024) /* one progress line (the last holds the image) */

struct stream {
        const struct cli *c;
        char *line;
        size_t len;
        cJSON *result; /* the last line: done or error */
        bool tty;
        bool overflow;
};

static void on_line(struct stream *s, const char *text)
{
        cJSON *o = cJSON_Parse(text);
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "status"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "message"));
        if (!st) {
                cJSON_Delete(o);
                return;
        }
        if (strcmp(st, "done") == 0 || strcmp(st, "error") == 0) {
                cJSON_Delete(s->result);
                s->result = o;
                return;
        }
        if (msg && !s->c->json) {
                bool progress = strcmp(st, "layer") == 0;
                /* a terminal shows a layer's progress on one line */
                if (progress && s->tty)
                        fprintf(stderr, "\r\033[K%s", msg);
                else if (!progress)
                        fprintf(stderr, "%s%s\n", s->tty ? "\r\033[K" : "", msg);
        }
        cJSON_Delete(o);
}

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
        struct stream *s = ud;
        size_t len = size * n;
        for (size_t i = 0; i < len; i++) {
                if (p[i] != '\n') {
                        if (s->len + 1 >= PULL_LINE_MAX) {
                                s->overflow = true;
                                return 0;
                        }
                        if (!s->line && !(s->line = malloc(PULL_LINE_MAX)))
                                return 0;
                        s->line[s->len++] = p[i];
                        continue;
                }
                if (!s->line)
                        continue;
                s->line[s->len] = 0;
                on_line(s, s->line);
                s->len = 0;
        }
        return len;
}

static int usage_error(void)
{
        fprintf(stderr, "sbx: image pull REF [--name NAME[:TAG]] [--username USER "
                        "--password-stdin] (see sbx --help)\n");
        return 2;
}

/* The password: the first line of stdin. */
static char *read_password(void)
{
        char *line = NULL;
        size_t cap = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (n <= 0) {
                free(line);
                return NULL;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                line[--n] = 0;
        return line;
}

static cJSON *request_body(int argc, char **argv)
{
        const char *image = NULL, *name = NULL, *user = NULL;
        bool pw = false;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
                        name = argv[++i];
                else if (strcmp(argv[i], "--username") == 0 && i + 1 < argc)
                        user = argv[++i];
                else if (strcmp(argv[i], "--password-stdin") == 0)
                        pw = true;
                else if (!image && argv[i][0] != '-')
                        image = argv[i];
                else
                        return NULL;
        }
        if (!image || !user != !pw)
                return NULL;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "image", image);
        if (name) {
                char *n = strdup(name), *tag = n ? strchr(n, ':') : NULL;
                if (tag)
                        *tag++ = 0;
                cJSON_AddStringToObject(o, "name", n ? n : "");
                if (tag)
                        cJSON_AddStringToObject(o, "tag", tag);
                free(n);
        }
        if (user) {
                _cleanup_free_ char *p = read_password();
                if (!p || !*p) {
                        fprintf(stderr, "sbx: --password-stdin: no password on stdin\n");
                        cJSON_Delete(o);
                        return NULL;
                }
                cJSON_AddStringToObject(o, "username", user);
                cJSON_AddStringToObject(o, "password", p);
                explicit_bzero(p, strlen(p));
        }
        return o;
}

static int print_result(const struct cli *c, const cJSON *res)
{
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "status"));
        if (!st || strcmp(st, "done") != 0) {
                const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");
                const char *m =
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
                fprintf(stderr, "sbx: %s\n", m ? m : "the pull ended without a result");
                return 1;
        }
        const cJSON *img = cJSON_GetObjectItemCaseSensitive(res, "image"), *l;
        if (c->json) {
                _cleanup_free_ char *t = cJSON_PrintUnformatted(img);
                printf("%s\n", t ? t : "{}");
                return 0;
        }
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(img, "layers");
        int reused = 0;
        cJSON_ArrayForEach(l, layers) reused +=
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "reused"));
        printf("%s: %d layer(s), %d already stored; template %s\n",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(img, "digest")),
               cJSON_GetArraySize(layers), reused,
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(img, "template")));
        return 0;
}

int cli_cmd_image_pull(struct cli *c, int argc, char **argv)
{
        _cleanup_json_ cJSON *body = request_body(argc, argv);
        if (!body)
                return usage_error();
        _cleanup_free_ char *text = cJSON_PrintUnformatted(body);
        CURL *h = curl_easy_init();
        struct curl_slist *hs = NULL;
        char auth[512], url[8192];
        struct stream s = {.c = c, .tty = isatty(STDERR_FILENO)};
        if (!h || !text)
                return 1;
        snprintf(url, sizeof(url), "%s/v1/images/pull", c->url);
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->key ? c->key : "");
        hs = curl_slist_append(hs, auth);
        hs = curl_slist_append(hs, "Content-Type: application/json");
        hs = curl_slist_append(hs, "Accept: application/x-ndjson");
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        CURLcode rc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(hs);
        curl_easy_cleanup(h);
        explicit_bzero(text, strlen(text));
        int e = 0;
        if (rc != CURLE_OK && !s.result) {
                fprintf(stderr, "sbx: %s: %s\n", c->url, curl_easy_strerror(rc));
                e = 1;
        } else if (status >= 400) {
                struct cli_resp r = {.status = status, .body = s.line, .len = s.len};
                if (s.line)
                        s.line[s.len] = 0;
                e = cli_fail(&r);
        } else {
                e = print_result(c, s.result);
        }
        cJSON_Delete(s.result);
        free(s.line);
        return e;
}
