/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The detail behind a failing step. Library functions that know more than "-errno" (which
 * bind, which layer) record it here and still return -errno; the step runner sends it to the
 * parent with the step name. One slot per process (the jailer has no threads).
 */
#pragma once

#include "macros.h"

/* Records "fmt..." (with %m expanded to strerror(r)) and returns -abs(r). */
int jail_errorf(int r, const char *fmt, ...) _printf_(2, 3);
/* The last recorded message, or NULL. */
const char *jail_error_message(void);
