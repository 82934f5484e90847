/* SPDX-License-Identifier: Apache-2.0 */
/* Native API pieces that need no running sbxd: its error codes. (Its routes:
 * test-route-table.c; the MCP tools: tests/unit/mcp/.) */
#include "native/v1.h"
#include "unit.h"
#include "native-error.h"

static void test_status_codes(void)
{
        CHECK_STREQ(sbx_native_error_code(400), "bad_request");
        CHECK_STREQ(sbx_native_error_code(401), "unauthorized");
        CHECK_STREQ(sbx_native_error_code(404), "not_found");
        CHECK_STREQ(sbx_native_error_code(413), "payload_too_large");
        CHECK_STREQ(sbx_native_error_code(429), "too_many_requests");
        CHECK_STREQ(sbx_native_error_code(502), "sandbox_unavailable");
        CHECK_STREQ(sbx_native_error_code(504), "timeout");
        CHECK_STREQ(sbx_native_error_code(599), "internal");
}

int main(void)
{
        test_status_codes();
        return unit_finish("test-v1-api");
}
