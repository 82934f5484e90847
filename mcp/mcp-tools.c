/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The MCP tools: the table (names, descriptions, input schemas, hints), the dispatch of a
 * tools/call, and run_shell / install_package, which run a command through the native API's
 * exec (/v1/sandboxes/{id}/exec). run_python and run_node run on the code interpreter
 * (mcp-code.c), the file tools in mcp-files.c. An error in the code or a failing command is
 * ordinary output (isError false); isError true means the tool could not do its job, with a
 * message a model can act on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-internal.h"

#define NO_NETWORK_EXIT 200

/* ---- running things ---- */

struct run_out {
        const char *stdout_, *stderr_;
        int exit_code;
        bool timed_out;
};

/* POST path (a native-API operation) with a JSON body; on success *ret holds the parsed
 * answer. Failures → *ret_fail; -ECANCELED (no *ret_fail) when the client cancelled the call:
 * the request is closed before the answer, and the sandbox kills the process. */
static int native_json(struct mcp_call *c, const char *path, cJSON *body, int timeout_ms,
                       cJSON **ret, cJSON **ret_fail)
{
        _cleanup_free_ char *text = cJSON_PrintUnformatted(body);
        struct mcp_reply rep = {};
        if (!text)
                return -ENOMEM;
        /* the agent answers once the process is done */
        int r = mcp_native_call(c, c->cancel, "POST", path, NULL, "application/json", text,
                                strlen(text), MCP_MAX_REPLY, timeout_ms + 10000, &rep);
        if (r == -ECANCELED)
                return r;
        if (r < 0) {
                *ret_fail = mcp_failure("The sandbox did not answer (%s). Try again; if it keeps "
                                        "failing the sandbox may have run out of memory.",
                                        strerror(-r));
                return r;
        }
        if (rep.status != 200) {
                char msg[1025];
                mcp_error_message(rep.body, rep.len, msg);
                mcp_reply_done(&rep);
                *ret_fail = mcp_failure("%.900s", msg);
                return -EIO;
        }
        cJSON *o = mcp_parse_object(rep.body, rep.len);
        mcp_reply_done(&rep);
        if (!o) {
                *ret_fail = mcp_failure("The sandbox sent an invalid answer.");
                return -EPROTO;
        }
        *ret = o;
        return 0;
}

static int read_run(const cJSON *o, struct run_out *out)
{
        const cJSON *so = cJSON_GetObjectItemCaseSensitive(o, "stdout");
        const cJSON *se = cJSON_GetObjectItemCaseSensitive(o, "stderr");
        const cJSON *ec = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
        const cJSON *to = cJSON_GetObjectItemCaseSensitive(o, "timed_out");
        if (!cJSON_IsString(so) || !cJSON_IsString(se) || !cJSON_IsNumber(ec))
                return -EPROTO;
        *out = (struct run_out){so->valuestring, se->valuestring, ec->valueint, cJSON_IsTrue(to)};
        return 0;
}

/* Text a model reads: output, then stderr, then the exit status when it is not 0. */
static cJSON *run_result(const struct run_out *o, const char *note, int timeout_ms)
{
        char *text = NULL;
        char tail[160] = "";
        if (o->timed_out)
                snprintf(tail, sizeof(tail),
                         "\n[timed out after %d ms and was killed; use a managed process for "
                         "long jobs]",
                         timeout_ms);
        else if (o->exit_code != 0)
                snprintf(tail, sizeof(tail), "\n[exit code %d]", o->exit_code);
        if (asprintf(&text, "%s%s%s%s%s", note ? note : "", o->stdout_,
                     *o->stderr_ ? (*o->stdout_ ? "\n[stderr]\n" : "[stderr]\n") : "", o->stderr_,
                     tail) < 0)
                return NULL;
        cJSON *r = mcp_text_result(*text ? text : "(no output)", false);
        free(text);
        cJSON *sc = cJSON_AddObjectToObject(r, "structuredContent");
        cJSON_AddStringToObject(sc, "stdout", o->stdout_);
        cJSON_AddStringToObject(sc, "stderr", o->stderr_);
        cJSON_AddNumberToObject(sc, "exitCode", o->exit_code);
        cJSON_AddBoolToObject(sc, "timedOut", o->timed_out);
        cJSON_AddBoolToObject(sc, "sessionPersistent", true);
        cJSON_AddBoolToObject(sc, "sandboxRecreated", note != NULL);
        return r;
}

int mcp_arg_timeout(const cJSON *args)
{
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "timeout_ms");
        if (cJSON_IsNumber(t) && t->valuedouble >= 1 && t->valuedouble <= 300000)
                return (int)t->valuedouble;
        return MCP_TIMEOUT_MS;
}

/* exec or run-code in the session's sandbox and turn the answer into a CallToolResult. */
static cJSON *run_tool(struct mcp_call *c, const char *path, cJSON *body, int timeout_ms,
                       int (*interpret)(const struct run_out *, cJSON **))
{
        const char *note = NULL;
        _cleanup_json_ cJSON *ans = NULL;
        cJSON *fail = mcp_ensure_sandbox(c, timeout_ms, &note), *result = NULL;
        if (fail)
                return fail;
        cJSON_AddNumberToObject(body, "timeout_ms", timeout_ms);
        cJSON_AddNumberToObject(body, "max_output_bytes", MCP_MAX_OUTPUT);
        int r = native_json(c, path, body, timeout_ms, &ans, &fail);
        mcp_touch(c);
        if (r == -ECANCELED)
                return mcp_cancelled_result("[cancelled by the client: the command was killed]");
        if (r < 0)
                return fail;
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(ans, "result");
        struct run_out out;
        if (read_run(cJSON_IsObject(res) ? res : ans, &out) < 0)
                return mcp_failure("The sandbox sent an invalid answer.");
        if (interpret && interpret(&out, &result) != 0)
                return result;
        return run_result(&out, note, timeout_ms);
}

static cJSON *tool_run_shell(struct mcp_call *c, const cJSON *args)
{
        _cleanup_json_ cJSON *body = cJSON_CreateObject();
        cJSON_AddStringToObject(body, "cmd",
                                cJSON_GetObjectItemCaseSensitive(args, "command")->valuestring);
        return run_tool(c, "/exec", body, mcp_arg_timeout(args), NULL);
}

static int install_interpret(const struct run_out *o, cJSON **ret)
{
        if (o->exit_code != NO_NETWORK_EXIT)
                return 0;
        *ret = mcp_failure("install_failed: this sandbox has no network access (sbx sandboxes have "
                           "no egress unless the operator allows it), so packages cannot be "
                           "downloaded. Use what is already installed (e.g. run_shell 'pip list'), "
                           "or write the code without the package.");
        return 1;
}

static bool package_name_ok(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 200 || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr(
                        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@/=<>~^"
                        "+-:[],",
                        s[i]))
                        return false;
        return true;
}

static cJSON *tool_install(struct mcp_call *c, const cJSON *args, const char **ret_msg)
{
        const cJSON *mgr = cJSON_GetObjectItemCaseSensitive(args, "manager");
        const cJSON *pkgs = cJSON_GetObjectItemCaseSensitive(args, "packages"), *p;
        const char *m = cJSON_IsString(mgr) ? mgr->valuestring : "pip";
        static const char script[] =
            "grep -q '^[^\t]*\t00000000' /proc/net/route 2>/dev/null || exit 200\n"
            "m=$1; shift\n"
            "case $m in\n"
            "pip) exec python3 -m pip install --user --quiet \"$@\" ;;\n"
            "npm) cd \"$HOME\" && exec npm install --no-fund --no-audit \"$@\" ;;\n"
            "apt) apt-get update -qq && exec apt-get install -y -qq \"$@\" ;;\n"
            "esac\n";
        if (strcmp(m, "pip") != 0 && strcmp(m, "npm") != 0 && strcmp(m, "apt") != 0) {
                *ret_msg = "manager must be pip, npm or apt";
                return NULL;
        }
        if (!cJSON_IsArray(pkgs) || cJSON_GetArraySize(pkgs) < 1 || cJSON_GetArraySize(pkgs) > 64) {
                *ret_msg = "packages must be a non-empty array of package names";
                return NULL;
        }
        _cleanup_json_ cJSON *body = cJSON_CreateObject();
        cJSON *cmd = cJSON_AddArrayToObject(body, "cmd");
        const char *head[] = {"sh", "-c", script, "install", m};
        for (size_t i = 0; i < ELEMENTSOF(head); i++)
                cJSON_AddItemToArray(cmd, cJSON_CreateString(head[i]));
        cJSON_ArrayForEach(p, pkgs)
        {
                if (!cJSON_IsString(p) || !package_name_ok(p->valuestring)) {
                        *ret_msg = "invalid package name (letters, digits and ._@/=<>~^+-:[], "
                                   "only)";
                        return NULL;
                }
                cJSON_AddItemToArray(cmd, cJSON_CreateString(p->valuestring));
        }
        if (strcmp(m, "apt") == 0)
                cJSON_AddStringToObject(body, "user", "root");
        return run_tool(c, "/exec", body, mcp_arg_timeout(args), install_interpret);
}

/* ---- the table ---- */

struct tool {
        const char *name;
        const char *description;
        const char *schema; /* inputSchema JSON */
};

/* What a host shows and may rely on (MCP tool annotations: hints, not guarantees): a title,
 * whether a tool only reads, whether calling it twice does no more than once, whether it
 * reaches outside the sandbox (only package installs would, and they need the network). */
struct tool_hints {
        const char *name, *title;
        bool read_only, destructive, idempotent, open_world;
};

static const struct tool_hints hints[] = {
    {"run_python", "Run Python (persistent kernel)", false, true, false, false},
    {"run_node", "Run JavaScript (persistent Node.js kernel)", false, true, false, false},
    {"run_shell", "Run a shell command", false, true, false, false},
    {"install_package", "Install packages (pip, npm, apt)", false, false, true, true},
    {"put_file", "Write a file into the sandbox", false, true, true, false},
    {"upload_file", "Upload a file into the sandbox", false, true, true, false},
    {"get_file", "Read a file from the sandbox", true, false, true, false},
};

static const struct tool_hints *hints_of(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(hints); i++)
                if (strcmp(hints[i].name, name) == 0)
                        return &hints[i];
        return NULL;
}

static const struct tool tools[] = {
    {"run_python",
     "Run Python code in this session's sandbox, in a persistent kernel: variables, imports, "
     "functions and files carry over between calls, so build on earlier steps instead of "
     "repeating them. Returns stdout/stderr, the value of a trailing expression and, for an "
     "error in the code, its traceback (that is ordinary output, not a tool failure). numpy, "
     "pandas and matplotlib are imported ready to use. Use it to process a large file, dataset "
     "or spreadsheet, to compute statistics or run ML, or to produce a chart, CSV or "
     "transformed output. Never read large files into the conversation: open the file path in "
     "Python, process it there and print only a summary. A matplotlib chart (plt.show()) comes "
     "back as an image you can look at; save files with plt.savefig(path) to fetch them later "
     "with get_file.",
     "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"description\":"
     "\"Python source\"},\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":300000,"
     "\"description\":\"default 120000; past it the code is interrupted, its state kept\"}},"
     "\"required\":[\"code\"]}"},
    {"run_node",
     "Run JavaScript in this session's sandbox on Node.js, in a persistent kernel: top-level "
     "variables (const, let, var), functions and imports carry over between calls; top-level "
     "await works, and the value of a trailing expression is returned. Node's built-in modules "
     "are available (import fs from 'node:fs' or require('fs')). For JSON manipulation, string "
     "work or anything JavaScript-specific; use run_python for data analysis.",
     "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"description\":"
     "\"JavaScript source\"},\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":"
     "300000,\"description\":\"default 120000; past it the code is interrupted\"}},"
     "\"required\":[\"code\"]}"},
    {"run_shell",
     "Run a shell command (sh -c) in this session's sandbox: git, curl, ffmpeg, duckdb, make, "
     "anything a terminal does. The sandbox lives for the whole session, so files and installed "
     "tools carry over; the working directory does not (start with 'cd dir && ...'). Check the "
     "exit code in the result (0 = success) and read stderr on failure.",
     "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},\"timeout_ms\":{"
     "\"type\":\"integer\",\"minimum\":1,\"maximum\":300000}},\"required\":[\"command\"]}"},
    {"install_package",
     "Install packages in this session's sandbox with pip (default, per user), npm (in the home "
     "directory) or apt. Needs network access: in a sandbox without it the tool fails with a "
     "clear message; then use what is installed.",
     "{\"type\":\"object\",\"properties\":{\"manager\":{\"type\":\"string\",\"enum\":[\"pip\","
     "\"npm\",\"apt\"]},\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
     "\"minItems\":1}},\"required\":[\"packages\"]}"},
    {"put_file",
     "Write a file INTO the sandbox so code can open it: bytes in at a path (missing "
     "directories are created). Give text as content, or bytes as content_base64. Returns the "
     "path actually written.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
     "\"absolute, or relative to /home/user\"},\"content\":{\"type\":\"string\"},"
     "\"content_base64\":{\"type\":\"string\"}},\"required\":[\"path\"]}"},
    {"upload_file", "Same as put_file: write bytes into the sandbox at a path; returns the path.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":"
     "\"string\"},\"content_base64\":{\"type\":\"string\"}},\"required\":[\"path\"]}"},
    {"get_file",
     "Read a file OUT of the sandbox: a text file comes back as text, an image (png, jpeg, "
     "gif, webp, svg) as image content you can look at (e.g. a chart you saved), other bytes as "
     "a blob. Give content_type to say what the bytes are. Only for small files and results: "
     "process large files with run_python instead.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content_type\":{"
     "\"type\":\"string\",\"description\":\"e.g. image/png; default from the file name\"}},"
     "\"required\":[\"path\"]}"},
};

cJSON *mcp_tools_list(void)
{
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < ELEMENTSOF(tools); i++) {
                cJSON *t = cJSON_CreateObject();
                const struct tool_hints *h = hints_of(tools[i].name);
                cJSON_AddStringToObject(t, "name", tools[i].name);
                cJSON_AddStringToObject(t, "description", tools[i].description);
                cJSON_AddItemToObject(t, "inputSchema", cJSON_Parse(tools[i].schema));
                if (h) {
                        cJSON_AddStringToObject(t, "title", h->title);
                        cJSON *a = cJSON_AddObjectToObject(t, "annotations");
                        cJSON_AddStringToObject(a, "title", h->title);
                        cJSON_AddBoolToObject(a, "readOnlyHint", h->read_only);
                        cJSON_AddBoolToObject(a, "destructiveHint", h->destructive);
                        cJSON_AddBoolToObject(a, "idempotentHint", h->idempotent);
                        cJSON_AddBoolToObject(a, "openWorldHint", h->open_world);
                }
                cJSON_AddItemToArray(arr, t);
        }
        return arr;
}

static bool string_arg(const cJSON *args, const char *name)
{
        return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, name));
}

int mcp_tools_call(struct mcp_call *c, const char *name, const cJSON *args, cJSON **ret,
                   const char **ret_msg)
{
        cJSON *r = NULL;
        *ret_msg = "invalid arguments";
        if (!cJSON_IsObject(args)) {
                *ret_msg = "params.arguments must be an object";
                return -EINVAL;
        }
        if (strcmp(name, "run_python") == 0 || strcmp(name, "run_node") == 0) {
                if (!string_arg(args, "code")) {
                        *ret_msg = "code must be a string";
                        return -EINVAL;
                }
                r = mcp_run_code(c, name[4] == 'p' ? "python" : "javascript",
                                 cJSON_GetObjectItemCaseSensitive(args, "code")->valuestring,
                                 mcp_arg_timeout(args));
        } else if (strcmp(name, "run_shell") == 0) {
                if (!string_arg(args, "command")) {
                        *ret_msg = "command must be a string";
                        return -EINVAL;
                }
                r = tool_run_shell(c, args);
        } else if (strcmp(name, "install_package") == 0)
                r = tool_install(c, args, ret_msg);
        else if (strcmp(name, "put_file") == 0 || strcmp(name, "upload_file") == 0)
                r = mcp_tool_put_file(c, args, ret_msg);
        else if (strcmp(name, "get_file") == 0)
                r = mcp_tool_get_file(c, args, ret_msg);
        else {
                *ret_msg = "unknown tool";
                return -EINVAL;
        }
        if (!r)
                return -EINVAL;
        *ret = r;
        return 0;
}
