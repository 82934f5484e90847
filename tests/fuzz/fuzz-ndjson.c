/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for MCP's reader of the code interpreter's NDJSON (mcp/mcp-ndjson.c):
 * everything a sandbox's code prints reaches it. The input is fed in two pieces cut where its
 * first byte says, and the CallToolResult built from it must be a JSON object whose texts stay
 * within MCP_MAX_OUTPUT. Build with clang -fsanitize=fuzzer; the normal suite replays
 * tests/fuzz/corpus/ndjson through fuzz-replay. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-internal.h"
#include "mcp-ndjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const int stops[] = {0, -ETIMEDOUT, -ECANCELED};
        struct mcp_exec x;
        if (size < 1 || mcp_exec_init(&x) < 0)
                return 0;
        size_t cut = size > 1 ? data[0] % size : 0;
        const char *text = (const char *)data + 1;
        size -= 1;
        cut = cut > size ? size : cut;
        mcp_exec_feed(&x, text, cut);
        mcp_exec_feed(&x, text + cut, size - cut);
        if (x.out[0].len + x.out[1].len + x.results.len > MCP_MAX_OUTPUT ||
            cJSON_GetArraySize(x.images) > CODE_MAX_IMAGES)
                abort();
        cJSON *r = mcp_exec_result(&x, (data[0] & 1) ? "note\n" : NULL, "python",
                                   stops[data[0] % 3], 1000);
        char *out = r ? cJSON_PrintUnformatted(r) : NULL;
        if (r && (!out || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "content"))))
                abort();
        free(out);
        cJSON_Delete(r);
        mcp_exec_done(&x);
        return 0;
}
