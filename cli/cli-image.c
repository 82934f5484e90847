/* SPDX-License-Identifier: Apache-2.0 */
/* sbx image import | ls | rm (pull: cli-pull.c): sbxd's /v1/images (api/openapi/sbx-v1.yaml). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "json-util.h"
#include "macros.h"

static int usage_error(const char *msg)
{
        fprintf(stderr, "sbx: %s (see sbx --help)\n", msg);
        return 2;
}

static int cmd_import(struct cli *c, int argc, char **argv)
{
        const char *ref = NULL;
        const char *pos[2] = {};
        int n = 0;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--ref") == 0 && i + 1 < argc)
                        ref = argv[++i];
                else if (n < 2)
                        pos[n++] = argv[i];
                else
                        return usage_error("image import NAME[:TAG] FILE [--ref REF]");
        }
        if (n != 2)
                return usage_error("image import NAME[:TAG] FILE [--ref REF]");
        _cleanup_free_ char *name = strdup(pos[0]);
        if (!name)
                return 1;
        char *tag = strchr(name, ':');
        if (tag)
                *tag++ = 0;
        FILE *f = fopen(pos[1], "rb");
        struct stat st;
        if (!f || fstat(fileno(f), &st) < 0) {
                fprintf(stderr, "sbx: %s: %s\n", pos[1], strerror(errno));
                if (f)
                        fclose(f);
                return 1;
        }
        _cleanup_free_ char *en = cli_escape(name), *et = tag ? cli_escape(tag) : NULL;
        _cleanup_free_ char *er = ref ? cli_escape(ref) : NULL;
        char path[1024];
        snprintf(path, sizeof(path), "/v1/images?name=%s%s%s%s%s", en ? en : "", et ? "&tag=" : "",
                 et ? et : "", er ? "&ref=" : "", er ? er : "");
        struct cli_resp r;
        int e = cli_http_upload(c, path, "application/x-tar", f, (uint64_t)st.st_size, &r);
        fclose(f);
        if (e < 0 || r.status >= 400) {
                e = e < 0 ? 1 : cli_fail(&r);
                cli_resp_done(&r);
                return e;
        }
        _cleanup_json_ cJSON *o = cJSON_Parse(r.body);
        cli_resp_done(&r);
        if (c->json) {
                _cleanup_free_ char *t = cJSON_PrintUnformatted(o);
                printf("%s\n", t ? t : "{}");
                return 0;
        }
        const cJSON *w, *layers = cJSON_GetObjectItemCaseSensitive(o, "layers");
        int reused = 0;
        cJSON_ArrayForEach(w, layers) reused +=
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "reused"));
        cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(o, "warnings"))
        {
                if (cJSON_IsString(w))
                        fprintf(stderr, "sbx: warning: %s\n", w->valuestring);
        }
        printf("%s: %d layer(s), %d already stored; template %s\n",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "digest")),
               cJSON_GetArraySize(layers), reused,
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "template")));
        return 0;
}

static int call(struct cli *c, const char *method, const char *path, cJSON **ret)
{
        struct cli_resp r;
        int e = cli_http(c, method, path, NULL, NULL, 0, NULL, &r);
        if (e < 0 || r.status >= 400) {
                e = e < 0 ? 1 : cli_fail(&r);
                cli_resp_done(&r);
                return e;
        }
        if (ret)
                *ret = r.len ? cJSON_Parse(r.body) : NULL;
        cli_resp_done(&r);
        return 0;
}

static int cmd_ls(struct cli *c)
{
        _cleanup_json_ cJSON *o = NULL;
        if (call(c, "GET", "/v1/images", &o) != 0)
                return 1;
        const cJSON *i, *list = cJSON_GetObjectItemCaseSensitive(o, "images");
        if (c->json) {
                _cleanup_free_ char *t = cJSON_PrintUnformatted(list);
                printf("%s\n", t ? t : "[]");
                return 0;
        }
        printf("%-32s %-14s %-19s %6s  %s\n", "NAME", "TAG", "DIGEST", "LAYERS", "IMPORTED");
        cJSON_ArrayForEach(i, list)
        {
                const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(i, "digest"));
                int nl = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(i, "layers"));
                printf("%-32s %-14s %-19.19s %6d  %s\n",
                       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(i, "name")),
                       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(i, "tag")), d ? d : "",
                       nl, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(i, "importedAt")));
        }
        return 0;
}

static int cmd_rm(struct cli *c, int argc, char **argv)
{
        if (argc < 1)
                return usage_error("image rm NAME[:TAG]...");
        int rc = 0;
        for (int i = 0; i < argc; i++) {
                /* "x:latest" is the template "x" */
                _cleanup_free_ char *id = strdup(argv[i]);
                if (!id)
                        return 1;
                size_t l = strlen(id);
                if (l > 7 && strcmp(id + l - 7, ":latest") == 0)
                        id[l - 7] = 0;
                _cleanup_free_ char *e = cli_escape(id);
                char path[1024];
                snprintf(path, sizeof(path), "/v1/images/%s", e ? e : "");
                rc |= call(c, "DELETE", path, NULL);
        }
        return rc;
}

int cli_cmd_image(struct cli *c, int argc, char **argv)
{
        if (argc < 1)
                return usage_error("image import|pull|ls|rm");
        if (strcmp(argv[0], "pull") == 0)
                return cli_cmd_image_pull(c, argc - 1, argv + 1);
        if (strcmp(argv[0], "import") == 0)
                return cmd_import(c, argc - 1, argv + 1);
        if (strcmp(argv[0], "ls") == 0 || strcmp(argv[0], "list") == 0)
                return cmd_ls(c);
        if (strcmp(argv[0], "rm") == 0)
                return cmd_rm(c, argc - 1, argv + 1);
        return usage_error("image import|pull|ls|rm");
}
