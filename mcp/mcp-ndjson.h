/* SPDX-License-Identifier: Apache-2.0 */
/* Reading one execution's NDJSON stream from the code interpreter (mcp-ndjson.c). */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define CODE_MAX_LINE        (16 * 1024 * 1024)
#define CODE_MAX_IMAGES      4
#define CODE_MAX_IMAGE_BYTES (4 * 1024 * 1024)
#define CODE_MAX_RESULTS     64 /* result summaries kept in structuredContent */
#define CODE_MAX_TRACEBACK   (64 * 1024)

struct mcp_exec {
        struct buf out[2];  /* stdout, stderr */
        struct buf results; /* the text of each result, one per line */
        struct buf traceback;
        size_t dropped; /* output bytes beyond MCP_MAX_OUTPUT */
        unsigned results_dropped;
        cJSON *images;      /* content items */
        cJSON *result_list; /* structuredContent.results */
        cJSON *error;       /* {name, value, traceback} */
        struct buf line;    /* the NDJSON line being read */
        bool skipping;      /* inside a line longer than CODE_MAX_LINE */
};

int mcp_exec_init(struct mcp_exec *x); /* -ENOMEM */
void mcp_exec_done(struct mcp_exec *x);
/* Feed a piece of the stream (any cut: lines are put back together). A last line without its
 * newline is never read. */
void mcp_exec_feed(struct mcp_exec *x, const char *data, size_t len);
/* The CallToolResult of what was read (taking its images, results and error): note (may be
 * NULL) first; stop is 0, -ETIMEDOUT or -ECANCELED (the execution was interrupted). */
cJSON *mcp_exec_result(struct mcp_exec *x, const char *note, const char *language, int stop,
                       int timeout_ms);
