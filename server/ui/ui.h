/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web console at /ui/ (console/README.md): its static files, served from the table
 * ui_files_load() read at start (ui/ui-files.h), with a strict Content-Security-Policy and the
 * other headers below on every answer, and strong ETags (answers 304 to a matching
 * If-None-Match). The console's data comes from the public APIs with the user's API key; these
 * routes need none.
 */
#pragma once

#include "http/http.h"

/* What the console may load and connect to: its own files and sbxd's API, same origin only
 * (WebSockets included); no inline script, no eval, no frames, no plugins, no form posts. */
#define UI_CSP                                                                                     \
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "    \
        "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "              \
        "form-action 'none'; frame-ancestors 'none'"

/* Read the console's files from dir into srv (a missing or empty dir is logged: /ui/ then
 * answers 404 saying so). */
void ui_load(struct server *srv, const char *dir);
void ui_free(struct server *srv);

/* GET|HEAD /ui/ and /ui/{file*}: the file, or 304, or 404. */
int ui_handle_file(struct request *req);
/* GET|HEAD / and /ui: a redirect to /ui/. */
int ui_handle_redirect(struct request *req);
