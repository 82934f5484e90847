/* SPDX-License-Identifier: Apache-2.0 */
#include "interp/code-lang.h"

#include <ctype.h>
#include <string.h>

#include "macros.h"

/* One row per language (code-lang.h). interp/README.md, "Languages", says what each kernel
 * does with the code; "Protocol between the agent and a kernel" has the transports. */
const struct code_language code_languages[] = {
    {
        .name = "python",
        .default_context = true,
        .interpreter = "python3",
        .requires = "3.9 or newer",
        .program = "python/kernel.py",
        .args = {CODE_ARG_PROGRAM},
        .transport = CODE_TRANSPORT_SOCKET,
        /* pandas and matplotlib imported before a sandbox is handed out */
        .preload = CODE_TEMPLATE_DIR "/python/preload.txt",
    },
    {
        .name = "javascript",
        .aliases = {"js"},
        .default_context = true,
        .interpreter = "node",
        .program = "javascript/kernel.mjs",
        .args = {CODE_ARG_PROGRAM},
        .transport = CODE_TRANSPORT_SOCKET,
    },
    {
        /* The javascript kernel, which type-strips each cell first. */
        .name = "typescript",
        .aliases = {"ts"},
        .interpreter = "node",
        .program = "javascript/kernel.mjs",
        .args = {CODE_ARG_PROGRAM},
        .transport = CODE_TRANSPORT_SOCKET,
        .dialect = "typescript",
    },
    {
        .name = "bash",
        .interpreter = "bash",
        .program = "bash/kernelrc",
        .args = {"--noprofile", "--rcfile", CODE_ARG_PROGRAM, "--noediting", "-i"},
        .transport = CODE_TRANSPORT_SHELL,
    },
    {
        .name = "r",
        .interpreter = "Rscript",
        .program = "r/kernel.R",
        .args = {"--no-save", "--no-restore", CODE_ARG_PROGRAM},
        .transport = CODE_TRANSPORT_FIFO, /* base R has no unix sockets */
    },
    {
        .name = "java",
        .interpreter = "java",
        /* compiled by the template (templates/code-interpreter-v1/kernels.sh) */
        .program = CODE_TEMPLATE_DIR "/java/sbx-kernel.jar",
        /* Start-up and memory over peak speed (interp/README.md, "Java"): the serial
         * collector, C1 only, a small initial heap; JVM warnings to stderr, never to the
         * user's stdout; per-execution env vars reach System.getenv() through the opened
         * java.util (kernels/java/SbxKernel.java). */
        .args = {"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xms16m", "-Xlog:disable",
                 "-Xlog:all=warning:stderr", "--add-opens=java.base/java.util=ALL-UNNAMED", "-cp",
                 CODE_ARG_PROGRAM, "SbxKernel"},
        .transport = CODE_TRANSPORT_SOCKET,
    },
};

const size_t code_languages_n = ELEMENTSOF(code_languages);

const struct code_language *code_language_default(void)
{
        return &code_languages[0];
}

static bool row_has(const struct code_language *l, const char *name)
{
        if (strcmp(l->name, name) == 0)
                return true;
        for (size_t i = 0; i < CODE_LANG_MAX_ALIASES && l->aliases[i]; i++)
                if (strcmp(l->aliases[i], name) == 0)
                        return true;
        return false;
}

const struct code_language *code_language_find(const char *name)
{
        char buf[32];
        size_t n;

        if (!name)
                return code_language_default();
        while (isspace((unsigned char)*name))
                name++;
        n = strlen(name);
        while (n > 0 && isspace((unsigned char)name[n - 1]))
                n--;
        if (n == 0)
                return code_language_default();
        if (n >= sizeof(buf))
                return NULL;
        for (size_t i = 0; i < n; i++)
                buf[i] = (char)tolower((unsigned char)name[i]);
        buf[n] = '\0';
        for (size_t i = 0; i < code_languages_n; i++)
                if (row_has(&code_languages[i], buf))
                        return &code_languages[i];
        return NULL;
}
