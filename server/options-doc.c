/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd-options-doc: sbxd's option table (core/options-table.c) in the documents made from it,
 * at build time (not installed):
 *   sbxd-options-doc man TEMPLATE   TEMPLATE with @OPTIONS@ replaced by the OPTIONS section
 *                                   and @VERSION@ by the version: sbxd(8)
 *   sbxd-options-doc markdown       the option tables of server/README.md
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "fd-util.h"
#include "macros.h"
#include "version.h"

#define TEMPLATE_MAX (256 * 1024)

static int man(const char *template)
{
        _cleanup_free_ char *text = NULL;
        FILE *in = fopen(template, "re");
        if (!in) {
                perror(template);
                return 1;
        }
        text = calloc(1, TEMPLATE_MAX + 1);
        size_t n = text ? fread(text, 1, TEMPLATE_MAX, in) : 0;
        fclose(in);
        if (!text || n == TEMPLATE_MAX) {
                fprintf(stderr, "%s: unreadable or larger than %d bytes\n", template, TEMPLATE_MAX);
                return 1;
        }
        for (const char *p = text; *p;) {
                const char *at = strchr(p, '@');
                if (!at) {
                        fputs(p, stdout);
                        break;
                }
                fwrite(p, 1, (size_t)(at - p), stdout);
                if (strncmp(at, "@OPTIONS@\n", 10) == 0) {
                        options_print_man(stdout);
                        p = at + 10;
                } else if (strncmp(at, "@VERSION@", 9) == 0) {
                        fputs(SBX_VERSION, stdout);
                        p = at + 9;
                } else {
                        fputc('@', stdout);
                        p = at + 1;
                }
        }
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 3 && strcmp(argv[1], "man") == 0)
                return man(argv[2]);
        if (argc == 2 && strcmp(argv[1], "markdown") == 0) {
                options_print_markdown(stdout);
                return 0;
        }
        fputs("usage: sbxd-options-doc man TEMPLATE | markdown\n", stderr);
        return 2;
}
