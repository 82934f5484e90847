/* SPDX-License-Identifier: Apache-2.0 */
/* Lexical path cleaning (pure string work, no file system access), for the agent's envd paths
 * and sbxd's volume paths. */
#pragma once

#include <stddef.h>

/*
 * The cleaned absolute form of path, as Go's filepath.Clean of "/" + path: empty and "."
 * components dropped, ".." drops the component before it and never climbs above "/", no
 * trailing '/' ("/" itself for nothing left). A relative path is taken from "/". Into out (len
 * bytes, NUL included): 0, or -ENAMETOOLONG. out may be path itself when path is absolute
 * (cleaning never lengthens it).
 */
int path_clean(const char *path, char *out, size_t len);
