/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter's languages: one descriptor row each (code-lang.c) holding everything
 * the agent knows of a language: the names a request may give, whether its default context
 * exists from the start, the kernel it runs (the image's interpreter, the kernel program and
 * its argv, the transport the agent speaks with it), what a missing interpreter's message adds,
 * the dialect the kernel is told, and the template's preload list that makes /init prewarm it.
 * The rest of interp/ reads rows and never names a language: adding one is a row plus its
 * kernel files in kernels/ (interp/README.md, "Adding a language"). Pure data, unit-tested.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Where a code-interpreter template puts what it adds for its kernels
 * (templates/code-interpreter-v1/kernels.sh): a preload list, a compiled kernel. */
#define CODE_TEMPLATE_DIR "/opt/sbx/kernels"

/* How the agent and a kernel speak (interp/README.md, "Protocol between the agent and a
 * kernel"). The user's output arrives on the kernel's stdout and stderr pipes in every case. */
enum code_transport {
        /* One JSON request a line to the kernel ({"code","env"?,"genv"?,"lang"?}), tagged
         * lines back (Y ready, 1/2 + a JSON string: the kernel's own output, R + a result or
         * error line forwarded verbatim, D done), on a one-shot unix socket the kernel connects
         * to ($SBX_KERNEL_SOCKET). */
        CODE_TRANSPORT_SOCKET,
        /* The same lines over two FIFOs, $SBX_KERNEL_FIFO.in (requests) and .out (answers),
         * for an interpreter without unix sockets (base R). */
        CODE_TRANSPORT_FIFO,
        /* An interactive shell: a command line a request on stdin (`__sbx_run SEQ $'code'
         * [NAME $'value']...`), each ended by a marker on stderr that carries its status
         * ($SBX_KERNEL_NONCE; bash_marker_scan() in code-json.h) and is stripped by the agent.
         * No results; a non-zero status is an error named "" with the status as value. */
        CODE_TRANSPORT_SHELL,
};

#define CODE_LANG_MAX_ALIASES 4  /* per row */
#define CODE_LANG_MAX_ARGS    16 /* of a kernel's command line after the interpreter */
/* In a row's args: stands for the kernel program's path. */
#define CODE_ARG_PROGRAM "{program}"

struct code_language {
        /* E2B's name, lower case: what a request asks for and /contexts answers. */
        const char *name;
        /* Other names a request may give for it, lower case ("js"). */
        const char *aliases[CODE_LANG_MAX_ALIASES];
        /* Its default context exists from the start (GET /contexts lists it); else the default
         * context is made on the first /execute that names the language. */
        bool default_context;
        /* The image's program that runs the kernel, searched in the template's PATH; named
         * in the 404 when the image lacks it. */
        const char *interpreter;
        /* What that interpreter must be, added to a missing one's message, or NULL. */
        const char *requires;
        /* The kernel program: relative to the runtime's kernels dir (code_kernels_dir()), or
         * absolute (what a template compiled: CODE_TEMPLATE_DIR). Missing: 404 as above. */
        const char *program;
        /* The kernel's command line after the interpreter; CODE_ARG_PROGRAM is the program. */
        const char *args[CODE_LANG_MAX_ARGS];
        enum code_transport transport;
        /* Told to the kernel as the request's "lang" when one kernel program serves two
         * languages (typescript on the javascript kernel), or NULL. */
        const char *dialect;
        /* A template's preload list, or NULL. When the file exists, the default context's
         * kernel imports it before it says it is ready ($SBX_KERNEL_PRELOAD), and /init starts
         * that kernel and waits for it (prewarm); otherwise kernels start on first use. */
        const char *preload;
};

/* The rows, in the order of /contexts' default contexts; the first is the default language. */
extern const struct code_language code_languages[];
extern const size_t code_languages_n;

/* The language of a request that names none: the first row (python). */
const struct code_language *code_language_default(void);

/* E2B's normalisation: trimmed and lower-cased, then a row's name or one of its aliases; NULL
 * or empty gives the default language. NULL for a name no row has. */
const struct code_language *code_language_find(const char *name);
