/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper: a sandbox as the JSON and record tests see one (an E2B-length id, template
 * "base", a 48-hex token, 2 CPUs, 1024 MiB, 512 MiB of disk, ending at 1700000300), started at
 * started_us with metadata parsed from metadata_json. The caller sets what its test is about
 * and drops it with sandbox_unref(). Header-only, static.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>

#include "lifecycle/sandbox.h"

static inline struct sandbox *test_sandbox_new(int64_t started_us, const char *metadata_json)
{
        struct sandbox *s = sandbox_new();
        strcpy(s->id, "abcdefghij0123456789");
        strcpy(s->template_id, "base");
        strcpy(s->token, "00112233445566778899aabbccddeeff0011223344556677");
        s->started_us = started_us;
        sandbox_set_end_at(s, 1700000300);
        s->cpu_count = 2;
        s->memory_mb = 1024;
        s->disk_mb = 512;
        s->metadata = cJSON_Parse(metadata_json);
        return s;
}
