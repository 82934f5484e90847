/* SPDX-License-Identifier: Apache-2.0 */
/* sudo's request: parsing the client's fields, and the command and environment they ask for. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "format-util.h"
#include "macros.h"
#include "sudo/sudo.h"

void agent_sudo_request_done(struct agent_sudo_request *r)
{
        free(r->argv);
        free(r->envp);
        r->argv = NULL;
        r->envp = NULL;
}

static int bad(char *err, size_t errlen, const char *msg)
{
        snprintf(err, errlen, "%s", msg);
        return -EINVAL;
}

int agent_sudo_request_parse(const char *buf, size_t len, struct agent_sudo_request *ret, char *err,
                             size_t errlen)
{
        struct agent_sudo_request r = {.user = NULL};
        const char *flags = NULL;
        size_t na = 0, ne = 0;

        if (len == 0 || buf[len - 1] != '\0')
                return bad(err, errlen, "malformed request (fields must end with NUL)");
        /* First pass: check and count. */
        for (size_t o = 0; o < len; o += strlen(buf + o) + 1) {
                const char *f = buf + o;
                if (strlen(f) < 2 || f[1] != '=')
                        return bad(err, errlen, "malformed request field");
                switch (f[0]) {
                case 'u':
                        if (r.user)
                                return bad(err, errlen, "malformed request (two users)");
                        r.user = f + 2;
                        break;
                case 'f':
                        if (flags)
                                return bad(err, errlen, "malformed request (two flag fields)");
                        flags = f + 2;
                        break;
                case 'a':
                        na++;
                        break;
                case 'e':
                        ne++;
                        break;
                default:
                        return bad(err, errlen, "malformed request (unknown field)");
                }
        }
        if (na > AGENT_SUDO_MAX_ARGS || ne > AGENT_SUDO_MAX_ENVS)
                return bad(err, errlen, "too many arguments or environment variables");
        if (!r.user)
                r.user = "root";
        if (!*r.user)
                return bad(err, errlen, "empty user name");
        for (const char *c = flags ? flags : ""; *c; c++) {
                bool *b = *c == 'E'   ? &r.keep_env
                          : *c == 'i' ? &r.login
                          : *c == 's' ? &r.shell
                                      : NULL;
                if (!b || *b)
                        return bad(err, errlen, "malformed request (bad flags)");
                *b = true;
        }
        if (r.login && r.shell)
                return bad(err, errlen, "you may not specify both the -i and -s options");
        if (na == 0 && !r.login && !r.shell)
                return bad(err, errlen, "no command given");

        r.argv = calloc(na + 1, sizeof(char *));
        r.envp = calloc(ne + 1, sizeof(char *));
        if (!r.argv || !r.envp) {
                agent_sudo_request_done(&r);
                return -ENOMEM;
        }
        for (size_t o = 0; o < len; o += strlen(buf + o) + 1) {
                const char *f = buf + o;
                if (f[0] == 'a')
                        r.argv[r.n_argv++] = f + 2;
                else if (f[0] == 'e' && strchr(f + 2, '=') && f[2] != '=')
                        r.envp[r.n_envp++] = f + 2; /* entries without a name are dropped */
        }
        if (r.n_argv > 0 && !*r.argv[0]) {
                agent_sudo_request_done(&r);
                return bad(err, errlen, "empty command name");
        }
        *ret = r;
        return 0;
}

/* ---- the command ---- */

/* words, each with every character but [A-Za-z0-9_$-] backslash-escaped, joined by spaces
 * (what sudo hands a shell's -c for -s and -i). */
static char *escape_words(const char *const *words, size_t n)
{
        size_t cap = 1;
        for (size_t i = 0; i < n; i++)
                cap += 2 * strlen(words[i]) + 1;
        char *s = malloc(cap), *p = s;
        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (i)
                        *p++ = ' ';
                for (const char *c = words[i]; *c; c++) {
                        unsigned char u = (unsigned char)*c;
                        bool plain = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
                                     (u >= '0' && u <= '9') || u == '_' || u == '-' || u == '$';
                        if (!plain)
                                *p++ = '\\';
                        *p++ = *c;
                }
        }
        *p = '\0';
        return s;
}

static const char *env_get(const struct agent_sudo_request *r, const char *name)
{
        size_t n = strlen(name);
        for (size_t i = 0; i < r->n_envp; i++)
                if (strncmp(r->envp[i], name, n) == 0 && r->envp[i][n] == '=')
                        return r->envp[i] + n + 1;
        return NULL;
}

/* Kept without -E (as sudo's env_reset keeps them). */
static bool env_kept(const char *kv)
{
        static const char *const keep[] = {
            "TERM=", "COLORTERM=", "LANG=", "LANGUAGE=", "LC_", "DISPLAY=", "TZ="};
        for (size_t i = 0; i < ELEMENTSOF(keep); i++)
                if (strncmp(kv, keep[i], strlen(keep[i])) == 0)
                        return true;
        return false;
}

/* Set by the target user whatever the client's environment says. */
static bool env_target(const char *kv)
{
        static const char *const own[] = {"HOME=", "USER=", "LOGNAME=", "SHELL=", "MAIL="};
        for (size_t i = 0; i < ELEMENTSOF(own); i++)
                if (strncmp(kv, own[i], strlen(own[i])) == 0)
                        return true;
        return strncmp(kv, "SUDO_", 5) == 0;
}

static int push(char **l, size_t *n, char *s)
{
        if (!s)
                return -ENOMEM;
        l[(*n)++] = s;
        return 0;
}

static char *printfs(const char *fmt, ...) _printf_(1, 2);
static char *printfs(const char *fmt, ...)
{
        return FORMAT_VARARGS_DUP(fmt);
}

static int command(const struct agent_sudo_request *r, const struct agent_user *target,
                   const struct agent_user *caller, char ***ret_argv, char ***ret_env)
{
        _cleanup_strv_free_ char **argv = calloc(r->n_argv + 5, sizeof(char *));
        _cleanup_strv_free_ char **env = calloc(r->n_envp + 5, sizeof(char *));
        _cleanup_free_ char *words = escape_words(r->argv, r->n_argv);
        size_t na = 0, ne = 0;
        int e = 0;

        if (!argv || !env || !words)
                return -ENOMEM;
        if (r->login || r->shell) {
                /* -s: the caller's $SHELL, else the target's; -i: the target's login shell. */
                const char *sh = r->shell ? env_get(r, "SHELL") : NULL;
                if (!sh || !*sh)
                        sh = target->shell && *target->shell ? target->shell : "/bin/sh";
                e = push(argv, &na, strdup(sh));
                if (!e && r->login)
                        e = push(argv, &na, strdup("-l"));
                if (!e && r->n_argv > 0) {
                        e = push(argv, &na, strdup("-c"));
                        if (!e)
                                e = push(argv, &na, strdup(words));
                }
        } else {
                for (size_t i = 0; i < r->n_argv && !e; i++)
                        e = push(argv, &na, strdup(r->argv[i]));
        }
        for (size_t i = 0; i < r->n_envp && !e; i++) {
                const char *kv = r->envp[i];
                if (env_target(kv) || (!r->keep_env && !env_kept(kv)))
                        continue;
                if (r->login && strncmp(kv, "TERM=", 5) != 0)
                        continue; /* -i: a login environment, only TERM comes along */
                e = push(env, &ne, strdup(kv));
        }
        if (!e)
                e = push(env, &ne, printfs("SUDO_USER=%s", caller->name));
        if (!e)
                e = push(env, &ne, printfs("SUDO_UID=%u", (unsigned)caller->uid));
        if (!e)
                e = push(env, &ne, printfs("SUDO_GID=%u", (unsigned)caller->gid));
        if (!e)
                e = push(env, &ne, printfs("SUDO_COMMAND=%s", r->n_argv ? words : argv[0]));
        if (e)
                return e;
        *ret_argv = TAKE_PTR(argv);
        *ret_env = TAKE_PTR(env);
        return 0;
}

bool agent_sudo_is_assignment(const char *a)
{
        const char *eq = strchr(a, '=');
        if (!eq || eq == a || (*a >= '0' && *a <= '9'))
                return false;
        for (const char *c = a; c < eq; c++)
                if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9')))
                        return false;
        return true;
}

int agent_sudo_command(const struct agent_sudo_request *r, const struct agent_user *target,
                       const struct agent_user *caller, char ***ret_argv, char ***ret_env)
{
        size_t first = 0;
        *ret_argv = *ret_env = NULL;
        while (first < r->n_argv && agent_sudo_is_assignment(r->argv[first]))
                first++;
        if (first == r->n_argv && first > 0 && !r->login && !r->shell)
                return -EINVAL;
        struct agent_sudo_request c = *r; /* the command after the assignments */
        c.argv += first;
        c.n_argv -= first;
        int e = command(&c, target, caller, ret_argv, ret_env);
        for (size_t i = 0; i < first && !e; i++) {
                char **env = *ret_env;
                size_t n = 0;
                while (env[n])
                        n++;
                char **m = realloc(env, (n + 2) * sizeof(char *));
                if (!m || !(m[n] = strdup(r->argv[i]))) {
                        *ret_env = m ? m : env;
                        e = -ENOMEM;
                        break;
                }
                m[n + 1] = NULL;
                *ret_env = m;
        }
        if (e) {
                strv_free(*ret_argv);
                strv_free(*ret_env);
                *ret_argv = *ret_env = NULL;
        }
        return e;
}
