/* SPDX-License-Identifier: Apache-2.0 */
#include "routes.h"

#include <errno.h>
#include <string.h>

#include "core/config.h"
#include "core/server.h"
#include "envd/envs.h"
#include "envd/files.h"
#include "envd/fs.h"
#include "envd/process-rpc.h"
#include "envd/watch.h"
#include "frame.h"
#include "interp/code.h"
#include "macros.h"
#include "native/native.h"
#include "port/relay.h"
#include "proc/process.h"
#include "sudo/sudo.h"

int agent_handle_init(struct agent_request *r)
{
        _cleanup_free_ uint8_t *body = NULL;
        size_t len;
        int e;

        e = agent_request_read_body_all(r, AGENT_MAX_INIT_BODY, &body, &len);
        if (e == -EMSGSIZE)
                return agent_respond_rest_error(r, 413, "init body too large");
        if (e < 0)
                return e;
        e = agent_config_apply_init((const char *)body, len);
        if (e == -EINVAL)
                return agent_respond_rest_error(r, 400, "invalid init body");
        if (e < 0)
                return agent_respond_rest_error(r, 500, "applying init: %s", strerror(-e));
        /* Code-interpreter templates answer once their default kernel is warm (bounded). */
        agent_code_on_init();
        return agent_respond(r, 204, NULL, NULL, 0);
}

#define P0     SBX_PORT_INTERNAL
#define ENVD   SBX_PORT_ENVD
#define CODE   SBX_PORT_CODE
#define ANY    NULL /* any method */
#define EXACT  AGENT_ROUTE_EXACT
#define PREFIX AGENT_ROUTE_PREFIX
#define UNARY  AGENT_ROUTE_UNARY
/* The native API's routes answer REST errors of shared handlers (envd's /files) in its shape. */
#define V1_ERRORS native_rest_error

/* Port, method, path, match, flags, handler, REST error shape; the first match wins. */
static const struct agent_route routes[] = {
    /* Port 0: sbxd's own calls, then its native API. */
    {P0, "POST", "/init", EXACT, 0, agent_handle_init, NULL},
    {P0, "GET", "/health", EXACT, 0, agent_handle_health, NULL},
    {P0, "POST", "/v1/exec", EXACT, 0, native_handle_exec, V1_ERRORS},
    {P0, "POST", "/v1/run-code", EXACT, 0, native_handle_run_code, V1_ERRORS},
    {P0, "GET", "/v1/files", EXACT, 0, native_files_handle_get, V1_ERRORS},
    {P0, "PUT", "/v1/files", EXACT, 0, native_files_handle_put, V1_ERRORS},
    {P0, "POST", "/v1/files", EXACT, 0, native_files_handle_put, V1_ERRORS},
    {P0, "GET", "/v1/terminal", EXACT, 0, native_handle_terminal, V1_ERRORS},
    {P0, "GET", "/v1/fs/list", EXACT, 0, native_fs_handle_list, V1_ERRORS},
    {P0, "GET", "/v1/fs/stat", EXACT, 0, native_fs_handle_stat, V1_ERRORS},
    {P0, "POST", "/v1/fs/mkdir", EXACT, 0, native_fs_handle_mkdir, V1_ERRORS},
    {P0, "POST", "/v1/fs/move", EXACT, 0, native_fs_handle_move, V1_ERRORS},
    {P0, "DELETE", "/v1/fs", EXACT, 0, native_fs_handle_remove, V1_ERRORS},
    {P0, "DELETE", "/v1/fs/", EXACT, 0, native_fs_handle_remove, V1_ERRORS},
    {P0, "GET", "/v1/fs/search", EXACT, 0, native_fs_handle_search, V1_ERRORS},
    {P0, "GET", "/v1/fs/watch", EXACT, 0, native_fs_handle_watch, V1_ERRORS},
    {P0, "POST", "/v1/processes", EXACT, 0, native_proc_handle_start, V1_ERRORS},
    {P0, "POST", "/v1/processes/", EXACT, 0, native_proc_handle_start, V1_ERRORS},
    {P0, "GET", "/v1/processes", EXACT, 0, native_proc_handle_list, V1_ERRORS},
    {P0, "GET", "/v1/processes/", EXACT, 0, native_proc_handle_list, V1_ERRORS},
    {P0, ANY, "/v1/processes", PREFIX, 0, native_proc_handle_item, V1_ERRORS},
    {P0, ANY, "/v1/", PREFIX, 0, native_handle_not_found, V1_ERRORS},

    /* Port 49983: envd. */
    {ENVD, "GET", "/health", EXACT, 0, agent_handle_health, NULL},
    {ENVD, "POST", "/process.Process/Start", EXACT, 0, agent_process_handle_start, NULL},
    {ENVD, "POST", "/process.Process/Connect", EXACT, 0, agent_process_handle_connect, NULL},
    {ENVD, "POST", "/process.Process/List", EXACT, UNARY, agent_process_handle_list, NULL},
    {ENVD, "POST", "/process.Process/SendSignal", EXACT, UNARY, agent_process_handle_send_signal,
     NULL},
    {ENVD, "POST", "/process.Process/SendInput", EXACT, UNARY, agent_process_handle_send_input,
     NULL},
    {ENVD, "POST", "/process.Process/CloseStdin", EXACT, UNARY, agent_process_handle_close_stdin,
     NULL},
    {ENVD, "POST", "/process.Process/Update", EXACT, UNARY, agent_process_handle_update, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/Stat", EXACT, 0, agent_fs_handle_stat, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/MakeDir", EXACT, 0, agent_fs_handle_make_dir, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/Move", EXACT, 0, agent_fs_handle_move, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/ListDir", EXACT, 0, agent_fs_handle_list_dir, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/Remove", EXACT, 0, agent_fs_handle_remove, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/WatchDir", EXACT, 0, agent_watch_handle_dir, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/CreateWatcher", EXACT, 0, agent_watch_handle_create,
     NULL},
    {ENVD, "POST", "/filesystem.Filesystem/GetWatcherEvents", EXACT, 0,
     agent_watch_handle_get_events, NULL},
    {ENVD, "POST", "/filesystem.Filesystem/RemoveWatcher", EXACT, 0, agent_watch_handle_remove,
     NULL},
    {ENVD, "GET", "/envs", EXACT, 0, agent_envs_handle_get, NULL},
    {ENVD, "GET", "/files", EXACT, 0, agent_files_handle_get, NULL},
    {ENVD, "POST", "/files", EXACT, 0, agent_files_handle_post, NULL},
    /* Every other method of the two services, StreamInput among them. */
    {ENVD, ANY, "/process.Process/", PREFIX, 0, agent_connect_handle_unimplemented, NULL},
    {ENVD, ANY, "/filesystem.Filesystem/", PREFIX, 0, agent_connect_handle_unimplemented, NULL},

    /* Port 49999: the code interpreter (interp/code.h). */
    {CODE, "POST", "/execute", EXACT, 0, agent_code_handle_execute, NULL},
    {CODE, "POST", "/contexts", EXACT, 0, agent_code_handle_create, NULL},
    {CODE, "GET", "/contexts", EXACT, 0, agent_code_handle_list, NULL},
    {CODE, "GET", "/health", EXACT, 0, agent_code_handle_health, NULL},
    {CODE, ANY, "/contexts/", PREFIX, 0, agent_code_handle_context, NULL},
    {CODE, ANY, "", PREFIX, 0, agent_code_handle_not_found, NULL},
};

/* Every port the table does not serve is a user port: relayed to whatever listens on it in the
 * sandbox (port/relay.h). */
static int handle_unrouted(struct agent_request *r)
{
        if (agent_port_is_user(r->head.port))
                return agent_port_handle(r);
        return agent_handle_not_found(r);
}

const struct agent_route_table agent_routes = {
    .routes = routes,
    .n_routes = ELEMENTSOF(routes),
    .not_found = handle_unrouted,
};

/* A reaped child is either the process table's or a sudo command's (each ignores the other's). */
static void child_exited(pid_t pid, int code, int status)
{
        agent_proc_on_exit(pid, code, status);
        agent_sudo_on_exit(pid, code, status);
}

static void stop(int sig)
{
        agent_proc_signal_all(sig);
        agent_sudo_signal_all(sig);
}

const struct agent_init_hooks agent_init_hooks = {
    .child_exited = child_exited,
    .timers = agent_proc_enforce_deadlines,
    .stop = stop,
};
