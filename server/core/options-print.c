/* SPDX-License-Identifier: Apache-2.0 */
/* The option table (options-table.c) as --help, as a config file, as sbxd(8)'s OPTIONS and as
 * server/README.md's table. */
#include "core/options.h"

#include <string.h>

#include "core/server-config.h"
#include "macros.h"

#define HELP_LEFT 27 /* --help: the column where the help text starts */

/* text in words to f, from column col of the current line; each further line starts with
 * indent, and none is longer than OPTION_HELP_COLS (a longer word has a line of its own). */
static void wrap(FILE *f, size_t col, const char *indent, const char *text)
{
        bool line_empty = true;
        for (const char *p = text; *p;) {
                p += strspn(p, " ");
                size_t w = strcspn(p, " ");
                if (!w)
                        break;
                if (!line_empty && col + 1 + w > OPTION_HELP_COLS) {
                        fprintf(f, "\n%s", indent);
                        col = strlen(indent);
                        line_empty = true;
                }
                if (!line_empty) {
                        fputc(' ', f);
                        col++;
                }
                fwrite(p, 1, w, f);
                col += w;
                p += w;
                line_empty = false;
        }
        fputc('\n', f);
}

/* s without Markdown's marks (`code`, **bold**), into buf: for --help and the config file. */
static const char *plain(const char *s, char *buf, size_t len)
{
        size_t o = 0;
        for (; *s && o + 1 < len; s++) {
                if (*s == '`')
                        continue;
                if (s[0] == '*' && s[1] == '*') {
                        s++;
                        continue;
                }
                buf[o++] = *s;
        }
        buf[o] = 0;
        return buf;
}

static void default_text(const struct sbxd_option *o, char *buf, size_t len)
{
        if (o->def)
                snprintf(buf, len, "%s", o->def);
        else if (o->def_doc)
                snprintf(buf, len, "%s", o->def_doc);
        else
                buf[0] = 0;
}

void options_print_help(FILE *f)
{
        fputs("Usage: sbxd [OPTION]...\n"
              "The sbx sandbox daemon: E2B's API and sbx's /v1 API on one port, sandboxes on "
              "this host.\nEvery option but the commands may be set in the --config file as "
              "NAME = VALUE (sbxd(8)).\n",
              f);
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                char left[128], text[1024], def[256], bare[1024];
                if (o->kind == OPTION_SECTION) {
                        fprintf(f, "\n%s:\n", o->name);
                        continue;
                }
                int n = snprintf(left, sizeof(left), "  --%s%s%s", o->name, o->arg ? " " : "",
                                 o->arg ? o->arg : "");
                fputs(left, f);
                if (n + 1 > HELP_LEFT)
                        fprintf(f, "\n%*s", HELP_LEFT, "");
                else
                        fprintf(f, "%*s", HELP_LEFT - n, "");
                default_text(o, def, sizeof(def));
                if (*def)
                        snprintf(text, sizeof(text), "%s (default: %s)", o->help, def);
                else
                        snprintf(text, sizeof(text), "%s", o->help);
                wrap(f, HELP_LEFT, "                           ", plain(text, bare, sizeof(bare)));
        }
}

static const char config_header[] =
    "# sbxd's configuration (sbxd(8)): one option a line, NAME = VALUE, named as sbxd's\n"
    "# command-line options without their dashes. Lines starting with # are comments; each\n"
    "# option is listed, commented out at its default. Options on sbxd's command line win.\n"
    "#\n"
    "#   sbxd --config FILE --check-config   checks a file, naming the line of a mistake\n"
    "#   systemctl reload sbxd    applies the options marked (reload) without a restart\n"
    "#   systemctl restart sbxd   applies the others; running sandboxes keep running\n";

/* Whether the section starting at row i holds an option of the file. */
static bool section_in_file(size_t i)
{
        for (i++; i < sbxd_n_options && sbxd_options[i].kind != OPTION_SECTION; i++)
                if (sbxd_options[i].kind != OPTION_COMMAND)
                        return true;
        return false;
}

/* A list's values, one line each. */
static void print_list(FILE *f, const struct sbxd_option *o, const struct sbxd_config *c)
{
        char *const *v = *(char *const *const *)((const char *)c + o->offset);
        size_t n = *(const size_t *)((const char *)c + o->count_offset);
        for (size_t k = 0; k < n; k++)
                fprintf(f, "%s = %s\n", o->name, v[k]);
}

void options_print_config(FILE *f, const struct sbxd_config *c)
{
        fputs(config_header, f);
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                char text[1024], value[OPTION_MAX_LINE], bare[1024];
                if (o->kind == OPTION_SECTION) {
                        if (section_in_file(i))
                                fprintf(f, "\n## %s\n", o->name);
                        continue;
                }
                if (o->kind == OPTION_COMMAND)
                        continue;
                snprintf(text, sizeof(text), "%s%s", o->help, o->reload ? " (reload)" : "");
                fputs("\n# ", f);
                wrap(f, 2, "# ", plain(text, bare, sizeof(bare)));
                if (!o->def && o->def_doc) {
                        fputs("# default: ", f);
                        wrap(f, 11, "#   ", plain(o->def_doc, bare, sizeof(bare)));
                }
                enum option_origin from = c ? c->given[i] : ORIGIN_DEFAULT;
                if (from == ORIGIN_COMMAND_LINE)
                        fputs("# (set on the command line)\n", f);
                if (from != ORIGIN_DEFAULT && o->kind == OPTION_LIST)
                        print_list(f, o, c);
                else if (from != ORIGIN_DEFAULT)
                        fprintf(f, "%s = %s\n", o->name, option_format(o, c, value, sizeof(value)));
                else if (o->def)
                        fprintf(f, "#%s = %s\n", o->name, o->def);
                else
                        fprintf(f, "#%s =\n", o->name);
        }
}

/* roff text: backslashes escaped, `code` and **bold** in bold, a leading dot or quote
 * neutralised, dashes as \- where they are options. */
static void roff(FILE *f, const char *s)
{
        bool bold = false, line_start = true;
        for (; *s; s++) {
                if (line_start && (*s == '.' || *s == '\''))
                        fputs("\\&", f);
                line_start = false;
                if (*s == '`' || (s[0] == '*' && s[1] == '*')) {
                        fputs(bold ? "\\fR" : "\\fB", f);
                        bold = !bold;
                        if (*s == '*')
                                s++;
                } else if (*s == '\\') {
                        fputs("\\e", f);
                } else if (*s == '-') {
                        fputs("\\-", f);
                } else {
                        fputc(*s, f);
                }
        }
        if (bold)
                fputs("\\fR", f);
}

void options_print_man(FILE *f)
{
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                char def[256];
                if (o->kind == OPTION_SECTION) {
                        fputs(".SS \"", f);
                        roff(f, o->name);
                        fputs("\"\n", f);
                        continue;
                }
                fputs(".TP\n\\fB\\-\\-", f);
                roff(f, o->name);
                fputs("\\fR", f);
                if (o->arg) {
                        fputs(" \\fI", f);
                        roff(f, o->arg);
                        fputs("\\fR", f);
                }
                fputc('\n', f);
                roff(f, o->help);
                fputs(".", f);
                if (o->doc) {
                        fputc(' ', f);
                        roff(f, o->doc);
                }
                fputc('\n', f);
                default_text(o, def, sizeof(def));
                if (*def || o->reload) {
                        fputs(".br\n", f);
                        if (*def) {
                                fputs(o->def ? "Default: \\fB" : "Default: ", f);
                                roff(f, def);
                                fputs(o->def ? "\\fR." : ".", f);
                        }
                        if (o->reload)
                                fputs(*def ? " A reload applies it." : "A reload applies it.", f);
                        fputc('\n', f);
                }
        }
}

/* s in a table cell: pipes escaped, and < outside `code` (not an HTML tag). */
static void cell(FILE *f, const char *s)
{
        bool code = false;
        for (; *s; s++) {
                if (*s == '`')
                        code = !code;
                if (*s == '|' || (*s == '<' && !code))
                        fputc('\\', f);
                fputc(*s, f);
        }
}

void options_print_markdown(FILE *f)
{
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                if (o->kind == OPTION_SECTION) {
                        fprintf(f,
                                "%s**%s**\n\n| option | default | reload | notes |\n"
                                "|---|---|---|---|\n",
                                i ? "\n" : "", o->name);
                        continue;
                }
                fprintf(f, "| `--%s%s%s` | ", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
                if (o->def) {
                        fputc('`', f);
                        cell(f, o->def);
                        fputc('`', f);
                } else if (o->def_doc) {
                        cell(f, o->def_doc);
                }
                fprintf(f, " | %s | ", o->reload ? "yes" : "");
                cell(f, o->help);
                if (o->doc) {
                        fputs(". ", f);
                        cell(f, o->doc);
                }
                fputs(" |\n", f);
        }
}
