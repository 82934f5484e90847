/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API's error body (api/openapi/sbx-v1.yaml, "Error"):
 *   {"error":{"code":"<snake_case>","message":"<text>"}}
 * sbxd answers its own /v1 errors in it and the agent answers the ones it sends through the
 * relay in it too, so that sbxd passes them on verbatim. This is the code each sends for a status
 * when it has no more precise one.
 */
#pragma once

const char *sbx_native_error_code(int status);
