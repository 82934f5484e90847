/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 (FIPS 180-4), streaming. Used to name content-addressed layers. No allocation. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct sha256 {
        uint32_t h[8];
        uint64_t len; /* bytes hashed so far */
        uint8_t buf[64];
        size_t n; /* bytes in buf */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final(struct sha256 *c, uint8_t out[32]);
/* Final digest as 64 lowercase hex digits + NUL. */
void sha256_final_hex(struct sha256 *c, char out[65]);
