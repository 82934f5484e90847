/* SPDX-License-Identifier: Apache-2.0 */
#include "front/routes.h"

#include "e2b/routes-lifecycle.h"
#include "cluster/cluster-http.h"
#include "cluster/layer-pull.h"
#include "cluster/move.h"
#include "cluster/owner-find.h"
#include "e2b/routes-network.h"
#include "e2b/routes-sandboxes.h"
#include "e2b/routes-secrets.h"
#include "e2b/routes-volumes.h"
#include "e2b/volume-content.h"
#include "e2b/routes-templates.h"
#include "http/http.h"
#include "http/upload.h"
#include "macros.h"
#include "native/health.h"
#include "native/mcp-host.h"
#include "native/v1-images-pull.h"
#include "native/v1-images.h"
#include "native/v1-storage.h"
#include "native/v1-relay.h"
#include "native/v1-templates.h"
#include "native/v1.h"
#include "native/ws-terminal.h"
#include "ui/ui.h"

#define GET    ROUTE_GET
#define POST   ROUTE_POST
#define DELETE ROUTE_DELETE

/* Where a row is answered in cluster mode (http/route.h, enum route_place): PLACE_LOCAL unless
 * the row says otherwise. */
#define SBX  PLACE_SANDBOX
#define VOL  PLACE_VOLUME
#define HERE PLACE_LOCAL

/* The E2B control plane: X-API-KEY, a JSON body of at most HTTP_MAX_CONTROL_BODY. */
#define E2B_AT(pl, m, p, h)                                                                        \
        {                                                                                          \
                .methods = (m), .pattern = (p), .auth = AUTH_API_KEY, .body = BODY_JSON,           \
                .max_body = HTTP_MAX_CONTROL_BODY, .errors = ERRORS_E2B, .place = (pl),            \
                .handle = (h)                                                                      \
        }
#define E2B(m, p, h) E2B_AT(HERE, m, p, h)
/* The volume content API: no API key at the door (the handler takes the volume's token), a
 * small JSON body (PATCH's); on the volume's node. */
#define VC(m, p, h)                                                                                \
        {                                                                                          \
                .methods = (m), .pattern = (p), .auth = AUTH_NONE, .body = BODY_JSON,              \
                .max_body = 64 * 1024, .errors = ERRORS_E2B, .place = VOL, .handle = (h)           \
        }
/* The native API answered in sbxd: Bearer, a JSON body of at most V1_MAX_JSON_BODY. */
#define V1_AT(pl, m, p, b, h)                                                                      \
        {                                                                                          \
                .methods = (m), .pattern = (p), .auth = AUTH_BEARER, .body = BODY_JSON,            \
                .max_body = V1_MAX_JSON_BODY, .errors = ERRORS_NATIVE, .place = (pl),              \
                .begin = (b), .handle = (h)                                                        \
        }
#define V1(m, p, b, h) V1_AT(HERE, m, p, b, h)

/* First match wins. Trailing slashes are rows of their own where sbxd takes them. */
const struct route sbxd_routes[] = {
    /* E2B: sandboxes (e2b/routes-sandboxes.h) */
    E2B_AT(PLACE_CREATE, POST, "/sandboxes", e2b_create),
    E2B_AT(PLACE_CREATE, POST, "/sandboxes/", e2b_create),
    E2B_AT(PLACE_CREATE, POST, "/v2/sandboxes", e2b_create),
    E2B_AT(PLACE_CREATE, POST, "/v2/sandboxes/", e2b_create),
    E2B_AT(PLACE_LIST, GET, "/sandboxes", e2b_list_v1),
    E2B_AT(PLACE_LIST, GET, "/sandboxes/", e2b_list_v1),
    E2B_AT(PLACE_LIST, GET, "/v2/sandboxes", e2b_list_v2),
    E2B_AT(PLACE_LIST, GET, "/v2/sandboxes/", e2b_list_v2),
    E2B_AT(SBX, GET, "/sandboxes/{id}", e2b_get),
    E2B_AT(SBX, GET, "/sandboxes/{id}/", e2b_get),
    E2B_AT(SBX, DELETE, "/sandboxes/{id}", e2b_kill),
    E2B_AT(SBX, DELETE, "/sandboxes/{id}/", e2b_kill),
    E2B_AT(SBX, POST, "/sandboxes/{id}/timeout", e2b_timeout),
    E2B_AT(SBX, ROUTE_PUT, "/sandboxes/{id}/network", e2b_set_network), /* e2b/routes-network.h */
    E2B_AT(SBX, POST, "/sandboxes/{id}/connect", e2b_connect),
    E2B_AT(SBX, POST, "/v2/sandboxes/{id}/connect", e2b_connect),
    {.methods = GET | POST, /* a signed URL without E2b-Sandbox-* headers: the signer's node */
     .pattern = "/files",
     .place = PLACE_SIGNED_FILES,
     .begin = e2b_files,
     .handle = e2b_files},
    /* E2B: lifecycle (e2b/routes-lifecycle.h) */
    E2B_AT(SBX, POST, "/sandboxes/{id}/pause", e2b_pause),
    E2B_AT(SBX, POST, "/sandboxes/{id}/resume", e2b_resume),
    E2B_AT(SBX, POST, "/sandboxes/{id}/refreshes", e2b_refresh),
    E2B_AT(SBX, GET, "/sandboxes/{id}/metrics", e2b_metrics),
    E2B_AT(SBX, POST, "/sandboxes/{id}/snapshots", e2b_snapshot_create),
    E2B_AT(SBX, POST, "/sandboxes/{id}/fork", e2b_fork),
    E2B(GET, "/snapshots", e2b_snapshot_list),
    /* E2B: volumes (e2b/routes-volumes.h) */
    E2B_AT(PLACE_CREATE_VOLUME, POST, "/volumes", e2b_volume_create),
    E2B_AT(PLACE_LIST_VOLUMES, GET, "/volumes", e2b_volume_list),
    E2B_AT(VOL, GET, "/volumes/{id}", e2b_volume_get),
    E2B_AT(VOL, DELETE, "/volumes/{id}", e2b_volume_delete),
    /* E2B: secrets (e2b/routes-secrets.h) */
    E2B(POST, "/secrets", e2b_secret_create),
    E2B(GET, "/secrets", e2b_secret_list),
    E2B(GET, "/secrets/{id}", e2b_secret_get),
    E2B(POST, "/secrets/{id}", e2b_secret_update),
    E2B(DELETE, "/secrets/{id}", e2b_secret_delete),
    /* E2B: the volume content API (e2b/volume-content.h): the volume's own token, checked by
     * the handlers */
    VC(GET | POST, "/volumecontent/{id}/dir", e2b_volume_dir),
    VC(GET | DELETE | ROUTE_OTHER, "/volumecontent/{id}/path", e2b_volume_path),
    VC(GET, "/volumecontent/{id}/file", e2b_volume_file_get),
    {.methods = ROUTE_PUT,
     .pattern = "/volumecontent/{id}/file",
     .body = BODY_STREAM,
     .errors = ERRORS_E2B,
     .place = VOL,
     .begin = e2b_volume_file_put_begin,
     .upload = e2b_volume_file_put_upload,
     .handle = e2b_volume_file_put_finish},
    /* E2B: template builds (e2b/routes-templates.h) */
    E2B(POST, "/v3/templates", e2b_build_request),
    E2B(GET, "/templates/aliases/{alias}", e2b_template_alias),
    E2B(POST, "/templates/tags", e2b_template_tags_assign),
    E2B(DELETE, "/templates/tags", e2b_template_tags_remove),
    E2B(GET, "/templates", e2b_template_list),
    E2B(GET, "/templates/{id}", e2b_template_get),
    E2B(GET, "/templates/{id}/tags", e2b_template_tags_list),
    E2B(GET, "/templates/{id}/files/{hash*}", e2b_build_file_link),
    E2B(POST, "/v2/templates/{id}/builds/{build}", e2b_build_start),
    E2B(GET, "/templates/{id}/builds/{build}/status", e2b_build_status),
    {.methods = ROUTE_PUT, /* the upload link: its own token, no API key (the SDK sends none) */
     .pattern = "/build-uploads/{id}/{hash*}",
     .auth = AUTH_NONE,
     .body = BODY_STREAM,
     .errors = ERRORS_E2B,
     .begin = e2b_build_upload_begin,
     .upload = http_upload_data,
     .handle = e2b_build_upload_finish},
    E2B(DELETE, "/templates/{id}", e2b_template_delete), /* snapshots and built templates */
    {.methods = GET,
     .pattern = "/metrics",
     .auth = AUTH_API_KEY_BEARER, /* Prometheus scrapers send a bearer token */
     .body = BODY_JSON,
     .max_body = HTTP_MAX_CONTROL_BODY,
     .errors = ERRORS_E2B,
     .handle = e2b_prometheus},

    /* sbxd's own health, for probes: no key (native/health.h) */
    {.methods = GET,
     .pattern = "/health",
     .auth = AUTH_NONE,
     .body = BODY_NONE,
     .errors = ERRORS_E2B,
     .handle = health_handle},

    /* the native API (native/v1.h) */
    /* cluster mode (cluster/cluster-http.h): 404 without --cluster */
    V1(GET, "/v1/nodes", NULL, cluster_handle_nodes),
    V1(POST | DELETE, "/v1/nodes/{name}/drain", NULL, cluster_handle_drain),
    /* between nodes only (cluster/layer-pull.h, cluster/move.h) */
    V1_AT(PLACE_NODE_ONLY, GET, "/v1/cluster/templates/{name*}", NULL, cluster_handle_template_get),
    V1_AT(PLACE_NODE_ONLY, GET, "/v1/cluster/layers/{hex*}", NULL, cluster_handle_layer_get),
    V1_AT(PLACE_NODE_ONLY, POST, "/v1/cluster/adopt", NULL, cluster_handle_adopt),
    {.methods = GET | POST, /* the signature's query; the hop header is the credential */
     .pattern = CLUSTER_FILES_OWNER_PATH,
     .errors = ERRORS_NATIVE,
     .place = PLACE_NODE_ONLY,
     .handle = owner_find_answer_files},
    V1_AT(PLACE_LIST_NATIVE, GET, "/v1/sandboxes", NULL, v1_handle_list),
    V1_AT(PLACE_LIST_NATIVE, GET, "/v1/sandboxes/", NULL, v1_handle_list),
    V1_AT(PLACE_CREATE_NATIVE, POST, "/v1/sandboxes", NULL, v1_handle_create),
    V1_AT(PLACE_CREATE_NATIVE, POST, "/v1/sandboxes/", NULL, v1_handle_create),
    V1_AT(SBX, GET, "/v1/sandboxes/{id}", v1_check_id_begin, v1_handle_get),
    V1_AT(SBX, GET, "/v1/sandboxes/{id}/", v1_check_id_begin, v1_handle_get),
    V1_AT(SBX, DELETE, "/v1/sandboxes/{id}", v1_check_id_begin, v1_handle_kill),
    V1_AT(SBX, DELETE, "/v1/sandboxes/{id}/", v1_check_id_begin, v1_handle_kill),
    V1_AT(SBX, POST, "/v1/sandboxes/{id}/pause", v1_check_id_begin, v1_handle_pause),
    V1_AT(SBX, POST, "/v1/sandboxes/{id}/resume", v1_check_id_begin, v1_handle_resume),
    {.methods = GET,
     .pattern = "/v1/sandboxes/{id}/terminal",
     .auth = AUTH_BEARER_TOKEN,
     .body = BODY_NONE,
     .errors = ERRORS_NATIVE,
     .place = SBX,
     .begin = ws_terminal_begin,
     .handle = ws_terminal_upgrade},
    {.methods = GET | POST | ROUTE_PUT | DELETE,
     .pattern = "/v1/sandboxes/{id}/{op*}",
     .auth = AUTH_BEARER,
     .body = BODY_STREAM,
     .errors = ERRORS_NATIVE,
     .place = SBX,
     .begin = v1_relay_begin,
     .upload = v1_relay_upload,
     .handle = v1_relay_finish},

    /* images (native/v1-images.h): the archive streams into a temp file, bounded there */
    {.methods = POST,
     .pattern = "/v1/images",
     .auth = AUTH_BEARER,
     .body = BODY_STREAM,
     .errors = ERRORS_NATIVE,
     .begin = v1_images_import_begin,
     .upload = http_upload_data,
     .handle = v1_images_import_finish},
    V1(POST, "/v1/images/pull", NULL, v1_images_pull),
    V1(GET, "/v1/storage", NULL, v1_storage_get),
    V1(POST, "/v1/storage/grow", NULL, v1_storage_grow),
    V1(GET, "/v1/images", NULL, v1_images_list),
    V1(GET, "/v1/images/{id}", NULL, v1_images_get),
    V1(DELETE, "/v1/images/{id}", NULL, v1_images_delete),
    V1(GET, "/v1/templates", NULL, v1_templates_list), /* native/v1-templates.h */

    /* the web console (ui/ui.h): static files, no key (the console's calls carry it) */
    {.methods = GET | ROUTE_HEAD, .pattern = "/", .handle = ui_handle_redirect},
    {.methods = GET | ROUTE_HEAD, .pattern = "/ui", .handle = ui_handle_redirect},
    {.methods = GET | ROUTE_HEAD, .pattern = "/ui/", .handle = ui_handle_file},
    {.methods = GET | ROUTE_HEAD, .pattern = "/ui/{file*}", .handle = ui_handle_file},

    /* MCP (native/mcp-host.h; it answers unsupported methods itself) */
    {.methods = ROUTE_ANY,
     .pattern = "/mcp",
     .auth = AUTH_BEARER,
     .body = BODY_BUFFERED,
     .max_body = V1_MAX_JSON_BODY,
     .errors = ERRORS_NATIVE,
     .place = PLACE_SESSION,
     .handle = mcp_host_handle},
    {.methods = ROUTE_ANY,
     .pattern = "/mcp/",
     .auth = AUTH_BEARER,
     .body = BODY_BUFFERED,
     .max_body = V1_MAX_JSON_BODY,
     .errors = ERRORS_NATIVE,
     .place = PLACE_SESSION,
     .handle = mcp_host_handle},
};

const size_t sbxd_n_routes = ELEMENTSOF(sbxd_routes);
