/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd's options, declared once: every row of sbxd_options[] (options-table.c) is an option of
 * the command line (--NAME VALUE) and of the config file (NAME = VALUE), with its value's
 * kind and bounds, its default, its help, and whether a reload (SIGHUP, `systemctl reload
 * sbxd`) applies a changed value. Parsing, --help, --print-config, the man page sbxd(8) and
 * the option table of server/README.md are all made from the rows (options-print.c); nothing
 * else lists the options.
 *
 * Adding an option: a field in struct sbxd_config (server-config.h) and one row, in the
 * section it belongs to.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sbxd_config;

enum option_kind {
        OPTION_SECTION, /* not an option: the heading of the rows below it (name: its title) */
        OPTION_COMMAND, /* the command line only: what sbxd does rather than how (--help...) */
        OPTION_STRING,  /* char *, a copy of the value */
        OPTION_PATH,    /* char *, absolute: a relative path is taken from the working directory
                         * on the command line and refused in the config file */
        OPTION_UINT,    /* unsigned or uint64_t (by the field's size), decimal, min..max */
        OPTION_DOUBLE,  /* double, min..max */
        OPTION_ENUM,    /* one of names[], stored as its index in a bool, unsigned or enum */
        OPTION_SIZE,    /* uint64_t bytes: digits with an optional K, M, G or T (powers of
                         * 1024), a bare number counting .unit bytes; min..max bytes */
        OPTION_LIST,    /* char ** with a size_t count at count_offset: each value adds one, at
                         * most max; the command line's values replace the file's */
};

enum option_command {
        COMMAND_RUN, /* no command: serve */
        COMMAND_HELP,
        COMMAND_VERSION,
        COMMAND_CONFIG, /* --config FILE: read it (not an action of its own) */
        COMMAND_CHECK,  /* --check-config: validate and exit */
        COMMAND_PRINT,  /* --print-config: the effective configuration as a config file */
        COMMAND_GET,    /* --get NAME: one option's effective value */
};

struct sbxd_option {
        enum option_kind kind;
        const char *name;         /* --NAME on the command line, NAME in the config file */
        const char *arg;          /* the value's name in --help ("N", "HOST:PORT"); NULL: none */
        const char *def;          /* the default, set as a given value would be; NULL: none */
        const char *def_doc;      /* the default in words when none is set (derived at start) */
        const char *help;         /* one line: --help and the config file's comment */
        const char *doc;          /* more, for sbxd(8) and server/README.md; NULL: help says it */
        bool reload;              /* a reload applies a changed value (scalar kinds only) */
        size_t offset, size;      /* the field of struct sbxd_config */
        size_t count_offset;      /* OPTION_LIST: its size_t count */
        uint64_t min, max;        /* OPTION_UINT, OPTION_DOUBLE, OPTION_SIZE; OPTION_LIST: max */
        uint64_t unit;            /* OPTION_SIZE: the bytes of a bare number (1, 1 << 20) */
        const char *const *names; /* OPTION_ENUM: NULL-terminated */
        const char *keyword;      /* OPTION_PATH: a word taken as itself, not as a path ("none") */
        /* Extra validation of a value (after the kind's); 0, or -EINVAL with *why set. */
        int (*check)(const char *value, const char **why);
        enum option_command command; /* OPTION_COMMAND */
};

/* Where a value came from (struct sbxd_config's given[]). */
enum option_origin { ORIGIN_DEFAULT, ORIGIN_FILE, ORIGIN_COMMAND_LINE };

/* The longest config file line and value accepted; the most rows. */
#define OPTION_MAX_LINE  4096
#define OPTION_MAX_ROWS  128
#define OPTION_HELP_COLS 100 /* --help, the config file */

extern const struct sbxd_option sbxd_options[];
extern const size_t sbxd_n_options;

/* The row of option NAME (an option or a command, never a section); NULL when none. */
const struct sbxd_option *option_find(const char *name);
/* Its index in sbxd_options (for given[]). */
size_t option_index(const struct sbxd_option *o);

/* Set o's field in c from value. from_file: relative paths are refused (the file's meaning
 * must not depend on where sbxd was started). 0, or -EINVAL/-ENOMEM with a message (without
 * the option's name) in err. */
int option_set(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
               bool from_file, char *err, size_t errlen);

/* o's value in c as the config file would say it, "" when unset (a list's values separated by
 * spaces). Returns buf. */
const char *option_format(const struct sbxd_option *o, const struct sbxd_config *c, char *buf,
                          size_t len);

/* Free o's field in c when it is a string or a list, and zero it. */
void option_clear(const struct sbxd_option *o, struct sbxd_config *c);

/* Copy o's field (a scalar of a reloadable row) from src to dst with one atomic store, so a
 * thread reading it concurrently sees the old or the new value. */
void option_copy_scalar(const struct sbxd_option *o, struct sbxd_config *dst,
                        const struct sbxd_config *src);

/* Printers (options-print.c). help: --help. config: a config file of every option, commented
 * out at its default unless c has it from the file or the command line (NULL: all
 * defaults). man: the OPTIONS section of sbxd(8), in roff. markdown: server/README.md's
 * table. */
void options_print_help(FILE *f);
void options_print_config(FILE *f, const struct sbxd_config *c);
void options_print_man(FILE *f);
void options_print_markdown(FILE *f);
