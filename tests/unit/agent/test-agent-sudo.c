/* SPDX-License-Identifier: Apache-2.0 */
/* sudo's request parsing and the command and environment it asks for (guest-agent/sudo/). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "sudo/sudo.h"
#include "unit.h"

#define REQ(lit) lit, sizeof(lit) - 1 /* the literal's bytes, its own NUL excluded */

static int parse(const char *buf, size_t len, struct agent_sudo_request *r, char *err)
{
        memset(r, 0, sizeof(*r));
        return agent_sudo_request_parse(buf, len, r, err, 256);
}

static void check_bad(const char *buf, size_t len, const char *msg)
{
        struct agent_sudo_request r;
        char err[256] = "";
        CHECK_EQ_INT(parse(buf, len, &r, err), -EINVAL);
        CHECK(strstr(err, msg) != NULL);
}

static const char *env_of(char **env, const char *name)
{
        size_t n = strlen(name);
        for (; *env; env++)
                if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
                        return *env + n + 1;
        return NULL;
}

int main(void)
{
        char root_s[] = "root", root_home[] = "/root", bash[] = "/bin/bash";
        char user_s[] = "user", user_home[] = "/home/user";
        struct agent_user root = {.name = root_s, .home = root_home, .shell = bash};
        struct agent_user user = {.name = user_s, .home = user_home, .uid = 1000, .gid = 1000};
        struct agent_sudo_request r;
        char err[256], **argv, **env;

        /* a plain command */
        CHECK_EQ_INT(
            parse(REQ("u=root\0f=\0a=id\0a=-u\0e=TERM=xterm\0e=FOO=bar\0e=junk\0"), &r, err), 0);
        CHECK_STREQ(r.user, "root");
        CHECK(!r.keep_env && !r.login && !r.shell);
        CHECK_EQ_INT(r.n_argv, 2);
        CHECK_STREQ(r.argv[1], "-u");
        CHECK(r.argv[2] == NULL);
        CHECK_EQ_INT(r.n_envp, 2); /* "junk" has no '=' */
        CHECK_EQ_INT(agent_sudo_command(&r, &root, &user, &argv, &env), 0);
        CHECK_STREQ(argv[0], "id");
        CHECK_STREQ(argv[1], "-u");
        CHECK(argv[2] == NULL);
        CHECK_STREQ(env_of(env, "TERM"), "xterm");
        CHECK(env_of(env, "FOO") == NULL); /* no -E */
        CHECK_STREQ(env_of(env, "SUDO_USER"), "user");
        CHECK_STREQ(env_of(env, "SUDO_UID"), "1000");
        strv_free(argv);
        strv_free(env);
        agent_sudo_request_done(&r);

        /* -E keeps everything but the target's own variables */
        CHECK_EQ_INT(
            parse(REQ("f=E\0a=env\0e=FOO=bar\0e=HOME=/home/user\0e=SUDO_USER=x\0"), &r, err), 0);
        CHECK_STREQ(r.user, "root");
        CHECK(r.keep_env);
        CHECK_EQ_INT(agent_sudo_command(&r, &root, &user, &argv, &env), 0);
        CHECK_STREQ(env_of(env, "FOO"), "bar");
        CHECK(env_of(env, "HOME") == NULL); /* envd's environment sets the target's */
        CHECK_STREQ(env_of(env, "SUDO_USER"), "user");
        strv_free(argv);
        strv_free(env);
        agent_sudo_request_done(&r);

        /* -s with a command: the shell gets it escaped; -i: a login shell, TERM only */
        CHECK_EQ_INT(parse(REQ("f=s\0a=echo\0a=a b;c\0e=SHELL=/bin/sh\0"), &r, err), 0);
        CHECK_EQ_INT(agent_sudo_command(&r, &root, &user, &argv, &env), 0);
        CHECK_STREQ(argv[0], "/bin/sh");
        CHECK_STREQ(argv[1], "-c");
        CHECK_STREQ(argv[2], "echo a\\ b\\;c");
        strv_free(argv);
        strv_free(env);
        agent_sudo_request_done(&r);
        CHECK_EQ_INT(parse(REQ("f=i\0e=TERM=dumb\0e=LANG=C\0"), &r, err), 0);
        CHECK_EQ_INT(agent_sudo_command(&r, &root, &user, &argv, &env), 0);
        CHECK_STREQ(argv[0], "/bin/bash");
        CHECK_STREQ(argv[1], "-l");
        CHECK(argv[2] == NULL);
        CHECK_STREQ(env_of(env, "TERM"), "dumb");
        CHECK(env_of(env, "LANG") == NULL);
        strv_free(argv);
        strv_free(env);
        agent_sudo_request_done(&r);

        /* NAME=value words before the command go to its environment */
        CHECK_EQ_INT(parse(REQ("a=FOO=1\0a=env\0a=X=2\0"), &r, err), 0);
        CHECK_EQ_INT(agent_sudo_command(&r, &root, &user, &argv, &env), 0);
        CHECK_STREQ(argv[0], "env");
        CHECK_STREQ(argv[1], "X=2");
        CHECK_STREQ(env_of(env, "FOO"), "1");
        strv_free(argv);
        strv_free(env);
        agent_sudo_request_done(&r);
        CHECK_EQ_INT(parse(REQ("a=FOO=1\0"), &r, err), 0);
        CHECK_EQ_INT(agent_sudo_command(&r, &root, &user, &argv, &env), -EINVAL);
        agent_sudo_request_done(&r);

        /* malformed */
        check_bad("", 0, "must end with NUL");
        check_bad(REQ("a=true"), "must end with NUL");
        check_bad(REQ("a=true\0x\0"), "malformed request field");
        check_bad(REQ("z=1\0a=true\0"), "unknown field");
        check_bad(REQ("u=a\0u=b\0a=true\0"), "two users");
        check_bad(REQ("u=\0a=true\0"), "empty user name");
        check_bad(REQ("f=Q\0a=true\0"), "bad flags");
        check_bad(REQ("f=EE\0a=true\0"), "bad flags");
        check_bad(REQ("f=is\0"), "both the -i and -s");
        check_bad(REQ("u=root\0e=A=b\0"), "no command given");
        check_bad(REQ("a=\0"), "empty command name");

        /* too many arguments */
        size_t n = (AGENT_SUDO_MAX_ARGS + 1) * 4;
        char *many = malloc(n);
        for (size_t i = 0; i < AGENT_SUDO_MAX_ARGS + 1; i++)
                memcpy(many + i * 4, "a=x", 4);
        check_bad(many, n, "too many arguments");
        free(many);

        return unit_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
