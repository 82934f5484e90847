/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for the agent-channel codec (api/frame.c): everything a sandbox can send
 * to sbxd goes through these parsers first. Build with clang -fsanitize=fuzzer; the normal
 * suite replays tests/fuzz/corpus/frame through fuzz-replay. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint8_t type;
        uint32_t len;
        if (size >= SBX_FRAME_HEADER_SIZE)
                (void)sbx_frame_header_parse(data, &type, &len);

        struct sbx_resp_head rh;
        if (sbx_resp_head_decode(data, size, &rh) == 0) {
                /* A decoded head re-encodes to the same bytes. */
                uint8_t *buf = NULL;
                size_t n = 0;
                if (sbx_resp_head_encode(&rh, &buf, &n) == 0) {
                        if (n != size || memcmp(buf, data, n) != 0)
                                abort();
                        free(buf);
                }
                (void)sbx_header_get(rh.headers, rh.n_headers, "content-length");
                sbx_resp_head_free(&rh);
        }

        struct sbx_req_head qh;
        if (sbx_req_head_decode(data, size, &qh) == 0) {
                uint8_t *buf = NULL;
                size_t n = 0;
                if (sbx_req_head_encode(&qh, &buf, &n) == 0) {
                        if (n != size || memcmp(buf, data, n) != 0)
                                abort();
                        free(buf);
                }
                sbx_req_head_free(&qh);
        }

        uint8_t flags;
        const uint8_t *msg;
        uint32_t mlen;
        long used = connect_envelope_parse(data, size, CONNECT_MAX_MESSAGE, &flags, &msg, &mlen);
        if (used > 0 && ((size_t)used > size || msg + mlen > data + size))
                abort();
        return 0;
}
