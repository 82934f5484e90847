/* SPDX-License-Identifier: Apache-2.0 */
/* MCP tools: see mcp.h (filled in by the next commit). */
#include "mcp.h"
