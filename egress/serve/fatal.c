/* SPDX-License-Identifier: Apache-2.0 */
#include "serve/fatal.h"

#include <unistd.h>

#include "log.h"

void egress_serve_fatal(const char *what, int error)
{
        log_error_errno(error, "egress: %s: %m; exiting, for sbxd to start sbx-egress again", what);
        _exit(3);
}
