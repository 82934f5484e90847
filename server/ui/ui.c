/* SPDX-License-Identifier: Apache-2.0 */
#include "ui/ui.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "macros.h"
#include "ui/ui-files.h"

void ui_load(struct server *srv, const char *dir)
{
        struct ui_files *u = NULL;
        if (!dir) {
                log_info("console: off (--console-dir none)");
                return;
        }
        int r = ui_files_load(dir, &u);
        if (r < 0) {
                log_warning_errno(r, "console: no console in %s (%m): /ui/ answers 404", dir);
                return;
        }
        log_info("console: %zu files (%zu bytes) from %s at /ui/", u->n, u->total, dir);
        srv->ui = u;
}

void ui_free(struct server *srv)
{
        ui_files_free(srv->ui);
        srv->ui = NULL;
}

/* The headers of every console answer: the page may run only its own scripts, talk only to
 * this origin, never be framed (clickjacking), and its types are never sniffed. Browsers honour
 * Cross-Origin-Opener-Policy on HTTPS (and localhost) only, and complain of it elsewhere: sent
 * behind --tls-cert. */
static void add_security_headers(struct request *req, struct MHD_Response *resp)
{
        MHD_add_response_header(resp, "Content-Security-Policy", UI_CSP);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "X-Frame-Options", "DENY");
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
        if (req->srv->config->tls_cert_pem)
                MHD_add_response_header(resp, "Cross-Origin-Opener-Policy", "same-origin");
        MHD_add_response_header(resp, "Cross-Origin-Resource-Policy", "same-origin");
        /* revalidated on every load (a 304 when unchanged): an upgraded sbxd's console is
         * never mixed with a cached older one */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
}

int ui_handle_file(struct request *req)
{
        const struct ui_files *u = req->srv->ui;
        const char *name = req->args.tail ? req->args.tail + 1 : "index.html";
        const struct ui_file *f = ui_files_find(u, name);
        if (!f)
                return http_reply_error(req, -ENOENT, NULL,
                                        u ? "%s: no such file in the console"
                                          : "%s: the console is not installed (sbxd "
                                            "--console-dir)",
                                        req->path);
        const char *inm = http_header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
        bool unchanged = inm && ui_etag_matches(inm, f->etag);
        /* the table lives as long as the daemon: no copy */
        struct MHD_Response *resp =
            unchanged ? MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT)
                      : MHD_create_response_from_buffer(f->len, f->data, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return -ENOMEM;
        add_security_headers(req, resp);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, f->etag);
        if (!unchanged)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, f->content_type);
        int r = http_queue(req, unchanged ? 304 : 200, resp);
        MHD_destroy_response(resp);
        return r;
}

int ui_handle_redirect(struct request *req)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return -ENOMEM;
        add_security_headers(req, resp);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, "/ui/");
        int r = http_queue(req, 302, resp);
        MHD_destroy_response(resp);
        return r;
}
