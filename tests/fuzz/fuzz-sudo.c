/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for sudo's request parser and the command it builds
 * (guest-agent/sudo/request.c): the bytes a sandbox's default user sends to the agent, which
 * runs what they ask as root. The input is the request's fields (what follows the 12-byte
 * header). Properties:
 *   - a refusal is -EINVAL with a message; nothing else but success (-ENOMEM aside);
 *   - a parsed request stays within its bytes and its bounds: every argv and envp entry points
 *     at a field of the input, envp entries have a name, a command is named unless -i or -s,
 *     -i and -s are never both set, AGENT_SUDO_MAX_ARGS and AGENT_SUDO_MAX_ENVS hold;
 *   - the command for root asked by user: argv[0] is the command (or a shell for -i/-s, with
 *     "-l" for -i), the "-c" string unescapes to the words joined by spaces (nothing the client
 *     sends can break out of its word), and without -E the client's environment reaches the
 *     command only through the kept names and the NAME=value words before the command.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "fuzz.h"
#include "macros.h"
#include "sudo/sudo.h"

static bool within(const char *p, const char *buf, size_t len)
{
        return p >= buf && p < buf + len;
}

static bool kept_name(const char *kv)
{
        static const char *const keep[] = {
            "TERM=", "COLORTERM=", "LANG=",     "LANGUAGE=", "LC_",          "DISPLAY=",
            "TZ=",   "SUDO_USER=", "SUDO_UID=", "SUDO_GID=", "SUDO_COMMAND="};
        for (size_t i = 0; i < ELEMENTSOF(keep); i++)
                if (strncmp(kv, keep[i], strlen(keep[i])) == 0)
                        return true;
        return false;
}

/* Undo escape_words(): a backslash quotes the next character; words are joined by spaces. */
static char *unescape(const char *s)
{
        char *out = malloc(strlen(s) + 1), *o = out;
        FUZZ_CHECK(out);
        for (; *s; s++) {
                if (*s == '\\') {
                        s++;
                        FUZZ_CHECK(*s); /* never a dangling backslash */
                } else {
                        /* unquoted: only what sudo leaves plain, or the separating space */
                        FUZZ_CHECK(*s == ' ' || *s == '_' || *s == '-' || *s == '$' ||
                                   (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                                   (*s >= '0' && *s <= '9'));
                }
                *o++ = *s;
        }
        *o = '\0';
        return out;
}

static void check_command(const struct agent_sudo_request *r)
{
        char name[] = "root", home[] = "/root", shell[] = "/bin/bash";
        char uname[] = "user", uhome[] = "/home/user", ushell[] = "/bin/bash";
        struct agent_user target = {.name = name, .home = home, .shell = shell};
        struct agent_user caller = {
            .name = uname, .home = uhome, .shell = ushell, .uid = 1000, .gid = 1000};
        char **argv = NULL, **env = NULL;

        int e = agent_sudo_command(r, &target, &caller, &argv, &env);
        if (e == -ENOMEM)
                return;
        /* the words before the command that are NAME=value */
        size_t first = 0;
        while (first < r->n_argv && agent_sudo_is_assignment(r->argv[first]))
                first++;
        if (e < 0) {
                FUZZ_CHECK(e == -EINVAL);
                FUZZ_CHECK(!argv && !env);
                return;
        }
        FUZZ_CHECK(argv && argv[0] && env);
        size_t na = 0;
        while (argv[na])
                na++;
        if (r->login || r->shell) {
                if (r->login)
                        FUZZ_CHECK(na >= 2 && strcmp(argv[1], "-l") == 0);
                size_t c = r->login ? 2 : 1;
                if (na > c) {
                        FUZZ_CHECK(strcmp(argv[c], "-c") == 0 && na == c + 2);
                        _cleanup_free_ char *words = unescape(argv[c + 1]);
                        /* the joined words after the assignments the parser took */
                        size_t n = 0;
                        for (size_t i = 0; i < r->n_argv; i++)
                                n += strlen(r->argv[i]) + 1;
                        _cleanup_free_ char *want = calloc(1, n + 1);
                        FUZZ_CHECK(want);
                        for (size_t i = first; i < r->n_argv; i++) {
                                if (i > first)
                                        strcat(want, " ");
                                strcat(want, r->argv[i]);
                        }
                        FUZZ_CHECK(strcmp(words, want) == 0);
                } else {
                        FUZZ_CHECK(na == c);
                }
        } else {
                FUZZ_CHECK(na == r->n_argv - first);
                for (size_t i = 0; i < na; i++)
                        FUZZ_CHECK(strcmp(argv[i], r->argv[first + i]) == 0);
        }
        size_t sudo_user = 0;
        for (size_t i = 0; env[i]; i++) {
                const char *eq = strchr(env[i], '=');
                FUZZ_CHECK(eq && eq != env[i]);
                sudo_user += strncmp(env[i], "SUDO_USER=", 10) == 0;
                if (r->keep_env)
                        continue;
                bool assigned = false;
                for (size_t k = 0; k < first && !assigned; k++)
                        assigned = strcmp(env[i], r->argv[k]) == 0;
                FUZZ_CHECK(assigned || kept_name(env[i]));
        }
        FUZZ_CHECK(sudo_user >= 1);
        strv_free(argv);
        strv_free(env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > AGENT_SUDO_MAX_REQUEST)
                return 0;
        /* an exact-size copy, so a read past the request is seen by ASan */
        char *buf = malloc(size ? size : 1);
        FUZZ_CHECK(buf);
        if (size)
                memcpy(buf, data, size);
        struct agent_sudo_request r = {};
        char err[256] = "";
        int e = agent_sudo_request_parse(buf, size, &r, err, sizeof(err));
        if (e < 0) {
                FUZZ_CHECK(e == -EINVAL || e == -ENOMEM);
                if (e == -EINVAL)
                        FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
                free(buf);
                return 0;
        }
        FUZZ_CHECK(r.user && *r.user);
        FUZZ_CHECK(!(r.login && r.shell));
        FUZZ_CHECK(r.n_argv > 0 || r.login || r.shell);
        FUZZ_CHECK(r.n_argv <= AGENT_SUDO_MAX_ARGS && r.n_envp <= AGENT_SUDO_MAX_ENVS);
        FUZZ_CHECK(r.argv[r.n_argv] == NULL && r.envp[r.n_envp] == NULL);
        if (strcmp(r.user, "root") != 0)
                FUZZ_CHECK(within(r.user, buf, size));
        for (size_t i = 0; i < r.n_argv; i++)
                FUZZ_CHECK(within(r.argv[i], buf, size) && r.argv[i][-1] == '=' &&
                           r.argv[i][-2] == 'a');
        if (r.n_argv)
                FUZZ_CHECK(r.argv[0][0] != '\0');
        for (size_t i = 0; i < r.n_envp; i++) {
                FUZZ_CHECK(within(r.envp[i], buf, size) && r.envp[i][-2] == 'e');
                FUZZ_CHECK(r.envp[i][0] != '=' && strchr(r.envp[i], '='));
        }
        check_command(&r);
        agent_sudo_request_done(&r);
        free(buf);
        return 0;
}
