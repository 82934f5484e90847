/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter's language rows (guest-agent/interp/code-lang.h): E2B's name
 * normalisation, and that every row is one the agent can run: a unique lower-case name and
 * aliases, an interpreter, a kernel program that is in the source tree's kernels/ (or a
 * template's absolute path), its path once on the command line, a dialect only where the
 * request is JSON, the default language first with a default context.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "interp/code-lang.h"
#include "unit.h"

static const char *name_of(const char *asked)
{
        const struct code_language *l = code_language_find(asked);
        return l ? l->name : NULL;
}

static void test_find(void)
{
        CHECK_STREQ(name_of(NULL), "python");
        CHECK_STREQ(name_of("  "), "python");
        CHECK_STREQ(name_of(""), "python");
        CHECK_STREQ(name_of(" Python "), "python");
        CHECK_STREQ(name_of("JS"), "javascript");
        CHECK_STREQ(name_of("javascript"), "javascript");
        CHECK_STREQ(name_of("ts"), "typescript");
        CHECK_STREQ(name_of("TypeScript"), "typescript");
        CHECK_STREQ(name_of("bash"), "bash");
        CHECK_STREQ(name_of("r"), "r");
        CHECK_STREQ(name_of(" R "), "r");
        CHECK_STREQ(name_of("Java"), "java");
        CHECK(code_language_find("rust") == NULL);
        CHECK(code_language_find("deno") == NULL);
        CHECK(code_language_find("pythonpythonpythonpythonpythonpython") == NULL);
        CHECK(code_language_find("py") == NULL); /* E2B has no such alias */
        CHECK(code_language_default() == &code_languages[0]);
}

static bool lower(const char *s)
{
        for (; *s; s++)
                if (isupper((unsigned char)*s) || isspace((unsigned char)*s))
                        return false;
        return true;
}

/* Each name and alias is one row's: code_language_find() gives that row back. */
static void check_names(const struct code_language *l)
{
        CHECK(l->name && *l->name && lower(l->name));
        CHECK(code_language_find(l->name) == l);
        for (size_t a = 0; a < CODE_LANG_MAX_ALIASES && l->aliases[a]; a++) {
                CHECK(lower(l->aliases[a]));
                CHECK(code_language_find(l->aliases[a]) == l);
        }
}

static void check_kernel(const struct code_language *l, const char *kernels_dir)
{
        char path[4096];
        size_t program_args = 0;

        CHECK(l->interpreter && *l->interpreter && !strchr(l->interpreter, '/'));
        CHECK(l->program && *l->program);
        if (l->program && l->program[0] != '/') {
                snprintf(path, sizeof(path), "%s/%s", kernels_dir, l->program);
                if (access(path, R_OK) != 0)
                        fprintf(stderr, "%s: kernel program %s is missing\n", l->name, path);
                CHECK(access(path, R_OK) == 0);
        }
        for (size_t a = 0; a < CODE_LANG_MAX_ARGS && l->args[a]; a++)
                program_args += strcmp(l->args[a], CODE_ARG_PROGRAM) == 0;
        CHECK_EQ_INT(program_args, 1);
        /* A shell kernel gets command lines, where no "lang" field can go. */
        CHECK(!l->dialect || l->transport != CODE_TRANSPORT_SHELL);
        CHECK(!l->preload || l->preload[0] == '/');
}

static void test_rows(const char *kernels_dir)
{
        CHECK(code_languages_n > 0);
        CHECK(code_languages[0].default_context);
        for (size_t i = 0; i < code_languages_n; i++) {
                check_names(&code_languages[i]);
                check_kernel(&code_languages[i], kernels_dir);
        }
}

int main(void)
{
        test_find();
        test_rows(KERNELS_DIR);
        return unit_finish("test-code-lang");
}
