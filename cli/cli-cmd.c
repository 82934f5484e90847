/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "macros.h"
#include "json-util.h"

static int usage_error(const char *msg)
{
        fprintf(stderr, "sbx: %s (see sbx --help)\n", msg);
        return 2;
}

/* JSON call; on success *ret is the parsed answer (or NULL for an empty one). Exit code. */
static int call_json(struct cli *c, const char *method, const char *path, cJSON *body, cJSON **ret)
{
        _cleanup_free_ char *text = body ? cJSON_PrintUnformatted(body) : NULL;
        struct cli_resp r;
        int e = cli_http(c, method, path, text ? "application/json" : NULL, text,
                         text ? strlen(text) : 0, NULL, &r);
        if (e < 0) {
                cli_resp_done(&r);
                return 1;
        }
        if (r.status >= 400) {
                e = cli_fail(&r);
                cli_resp_done(&r);
                return e;
        }
        *ret = r.len ? cJSON_Parse(r.body) : NULL;
        cli_resp_done(&r);
        return 0;
}

static void print_json(const cJSON *o)
{
        _cleanup_free_ char *t = cJSON_Print(o);
        if (t)
                printf("%s\n", t);
}

static const char *str(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? v->valuestring : "";
}

int cli_cmd_status(struct cli *c, int argc, char **argv)
{
        _cleanup_json_ cJSON *o = NULL;
        if (call_json(c, "GET", "/v1/sandboxes", NULL, &o) != 0)
                return 1;
        int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "sandboxes"));
        if (c->json) {
                printf("{\"url\":\"%s\",\"reachable\":true,\"sandboxes\":%d}\n", c->url, n);
                return 0;
        }
        printf("sbxd at %s: up, %d sandbox%s running\n", c->url, n, n == 1 ? "" : "es");
        return 0;
}

int cli_cmd_keys(struct cli *c, int argc, char **argv)
{
        const char *k = c->key ? c->key : "";
        bool e2b = argc == 1 && strcmp(argv[0], "--e2b") == 0;
        if (argc > 1 || (argc == 1 && !e2b))
                return usage_error("keys [--e2b]");
        if (e2b && *k && !c->json) { /* what sbxd prints at start, for the E2B SDKs */
                printf("export E2B_API_URL=%s\nexport E2B_SANDBOX_URL=%s\n"
                       "export E2B_VOLUME_API_URL=%s\nexport E2B_API_KEY=%s\n",
                       c->url, c->url, c->url, k);
                return 0;
        }
        if (c->json) {
                _cleanup_json_ cJSON *o = cJSON_CreateObject();
                _cleanup_free_ char *t = NULL;
                if (!o || !cJSON_AddStringToObject(o, "key", k) ||
                    !cJSON_AddStringToObject(o, "url", c->url) || !(t = cJSON_PrintUnformatted(o)))
                        return 1;
                printf("%s\n", t);
        } else if (!*k) {
                fprintf(stderr, "sbx: no API key: set SBX_API_KEY or SBX_STATE_DIR\n");
                return 1;
        } else
                printf("export SBX_URL=%s\nexport SBX_API_KEY=%s\n", c->url, k);
        return 0;
}

static int sandbox_create(struct cli *c, int argc, char **argv)
{
        _cleanup_json_ cJSON *body = cJSON_CreateObject(), *o = NULL;
        cJSON *env = NULL;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--template") == 0 && i + 1 < argc)
                        cJSON_AddStringToObject(body, "template", argv[++i]);
                else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
                        cJSON_AddNumberToObject(body, "timeout", atoi(argv[++i]));
                else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
                        char *kv = argv[++i], *eq = strchr(kv, '=');
                        if (!eq)
                                return usage_error("--env takes KEY=VALUE");
                        if (!env)
                                env = cJSON_AddObjectToObject(body, "env");
                        *eq = 0;
                        cJSON_AddStringToObject(env, kv, eq + 1);
                } else
                        return usage_error("sandbox create [--template T] [--timeout S] "
                                           "[--env K=V]...");
        }
        if (call_json(c, "POST", "/v1/sandboxes", body, &o) != 0)
                return 1;
        if (c->json)
                print_json(o);
        else
                printf("%s\n", str(o, "id"));
        return 0;
}

static int sandbox_list(struct cli *c)
{
        _cleanup_json_ cJSON *o = NULL;
        const cJSON *s;
        if (call_json(c, "GET", "/v1/sandboxes", NULL, &o) != 0)
                return 1;
        if (c->json) {
                print_json(cJSON_GetObjectItemCaseSensitive(o, "sandboxes"));
                return 0;
        }
        printf("%-22s %-20s %-7s %-22s %-22s %s\n", "ID", "TEMPLATE", "STATE", "STARTED", "ENDS",
               "DISK");
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "sandboxes"))
        {
                char disk[64];
                cli_disk_figure(s, "disk_used", "disk_mb", disk, sizeof(disk));
                printf("%-22s %-20s %-7s %-22s %-22s %s\n", str(s, "id"), str(s, "template"),
                       str(s, "state"), str(s, "started_at"), str(s, "end_at"), disk);
        }
        return 0;
}

static int sandbox_kill(struct cli *c, const char *id)
{
        char path[256];
        _cleanup_json_ cJSON *o = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
        if (call_json(c, "DELETE", path, NULL, &o) != 0)
                return 1;
        if (!c->json)
                printf("killed %s\n", id);
        return 0;
}

/* Print the command's output as its own and exit with its code (124 on timeout). */
static int relay_run(struct cli *c, const cJSON *res)
{
        if (c->json) {
                print_json(res);
        } else {
                fputs(str(res, "stdout"), stdout);
                fputs(str(res, "stderr"), stderr);
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "timed_out"))) {
                if (!c->json)
                        fprintf(stderr, "sbx: timed out\n");
                return 124;
        }
        const cJSON *ec = cJSON_GetObjectItemCaseSensitive(res, "exit_code");
        return cJSON_IsNumber(ec) ? ec->valueint & 255 : 1;
}

static int sandbox_run(struct cli *c, const char *id, bool code, int argc, char **argv)
{
        _cleanup_json_ cJSON *body = cJSON_CreateObject(), *o = NULL;
        const char *text = NULL;
        char path[256];
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--lang") == 0 && i + 1 < argc && code)
                        cJSON_AddStringToObject(body, "lang", argv[++i]);
                else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc)
                        cJSON_AddNumberToObject(body, "timeout_ms", atoi(argv[++i]));
                else if (strcmp(argv[i], "--root") == 0)
                        cJSON_AddStringToObject(body, "user", "root");
                else if (!text)
                        text = argv[i];
                else
                        return usage_error("one command string only (quote it)");
        }
        if (!text)
                return usage_error(code ? "sandbox run-code ID [--lang L] 'code'"
                                        : "sandbox exec ID 'command'");
        cJSON_AddStringToObject(body, code ? "code" : "cmd", text);
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", id, code ? "run-code" : "exec");
        if (call_json(c, "POST", path, body, &o) != 0)
                return 1;
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(o, "result");
        return relay_run(c, code ? o : res);
}

int cli_cmd_sandbox(struct cli *c, int argc, char **argv)
{
        if (argc < 1)
                return usage_error("sandbox create|list|kill|exec|run-code|files|terminal");
        const char *sub = argv[0];
        if (strcmp(sub, "create") == 0)
                return sandbox_create(c, argc - 1, argv + 1);
        if (strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0)
                return sandbox_list(c);
        if (strcmp(sub, "files") == 0)
                return cli_cmd_files(c, argc - 1, argv + 1);
        if (argc < 2)
                return usage_error("a sandbox ID is required");
        if (strcmp(sub, "kill") == 0)
                return sandbox_kill(c, argv[1]);
        if (strcmp(sub, "exec") == 0)
                return sandbox_run(c, argv[1], false, argc - 2, argv + 2);
        if (strcmp(sub, "run-code") == 0)
                return sandbox_run(c, argv[1], true, argc - 2, argv + 2);
        if (strcmp(sub, "terminal") == 0)
                return cli_cmd_terminal(c, argv[1]);
        return usage_error("unknown sandbox command");
}

static int files_ls(struct cli *c, const char *id, const char *path)
{
        _cleanup_free_ char *p = cli_escape(path);
        _cleanup_json_ cJSON *o = NULL;
        char url[8192];
        const cJSON *e;
        snprintf(url, sizeof(url), "/v1/sandboxes/%s/fs/list?path=%s", id, p);
        if (call_json(c, "GET", url, NULL, &o) != 0)
                return 1;
        if (c->json) {
                print_json(o);
                return 0;
        }
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "entries"))
        {
                const cJSON *sz = cJSON_GetObjectItemCaseSensitive(e, "size");
                printf("%-8s %12.0f  %s\n", str(e, "type"),
                       cJSON_IsNumber(sz) ? sz->valuedouble : 0, str(e, "name"));
        }
        return 0;
}

static int files_get(struct cli *c, const char *id, const char *path, const char *local)
{
        _cleanup_free_ char *p = cli_escape(path);
        char url[8192];
        struct cli_resp r;
        snprintf(url, sizeof(url), "/v1/sandboxes/%s/files?path=%s", id, p);
        if (cli_http(c, "GET", url, NULL, NULL, 0, NULL, &r) < 0)
                return 1;
        int e = 0;
        if (r.status >= 400)
                e = cli_fail(&r);
        else {
                FILE *f = !local || strcmp(local, "-") == 0 ? stdout : fopen(local, "we");
                if (!f || fwrite(r.body, 1, r.len, f) != r.len) {
                        fprintf(stderr, "sbx: writing %s: %m\n", local);
                        e = 1;
                }
                if (f && f != stdout)
                        fclose(f);
        }
        cli_resp_done(&r);
        return e;
}

static int files_put(struct cli *c, const char *id, const char *local, const char *path)
{
        _cleanup_free_ char *p = cli_escape(path), *data = NULL;
        char url[8192];
        size_t len = 0, cap = 0;
        FILE *f = strcmp(local, "-") == 0 ? stdin : fopen(local, "re");
        if (!f) {
                fprintf(stderr, "sbx: %s: %m\n", local);
                return 1;
        }
        for (;;) {
                if (len + 65536 > cap) {
                        char *n = realloc(data, cap = cap * 2 + 65536);
                        if (!n)
                                return 1;
                        data = n;
                }
                size_t k = fread(data + len, 1, cap - len, f);
                len += k;
                if (k == 0)
                        break;
        }
        if (f != stdin)
                fclose(f);
        snprintf(url, sizeof(url), "/v1/sandboxes/%s/files?path=%s", id, p);
        struct cli_resp r;
        if (cli_http(c, "PUT", url, "application/octet-stream", data ? data : "", len, NULL, &r) <
            0)
                return 1;
        int e = r.status >= 400 ? cli_fail(&r) : 0;
        if (!e)
                printf(c->json ? "%s\n" : "wrote %s\n", c->json ? r.body : path);
        cli_resp_done(&r);
        return e;
}

int cli_cmd_files(struct cli *c, int argc, char **argv)
{
        if (argc >= 3 && strcmp(argv[0], "ls") == 0)
                return files_ls(c, argv[1], argv[2]);
        if (argc >= 2 && strcmp(argv[0], "ls") == 0)
                return files_ls(c, argv[1], "");
        if (argc >= 3 && strcmp(argv[0], "get") == 0)
                return files_get(c, argv[1], argv[2], argc > 3 ? argv[3] : NULL);
        if (argc >= 4 && strcmp(argv[0], "put") == 0)
                return files_put(c, argv[1], argv[2], argv[3]);
        return usage_error("files ls ID [PATH] | get ID PATH [LOCAL] | put ID LOCAL PATH");
}
