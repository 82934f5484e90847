/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signed envd file URLs (docs/e2b-wire.md §3.1): GET/POST /files may carry
 * `signature` (and `signature_expiration`) instead of X-Access-Token. The signature is
 * "v1_" + base64-std-no-padding(SHA-256("<path>:<read|write>:<username or "">:<token>[:<exp>]"))
 * over the decoded `path` and `username` query parameters, as envd's auth.go checks it: an
 * X-Access-Token header, when present, must match and wins; an expired signature is refused.
 */
#pragma once

#include <stdbool.h>
#include <time.h>

/*
 * Whether a request for method + path with raw (still percent-encoded) query is authorized by
 * a valid file-URL signature for token at time now. False for anything but GET/POST /files,
 * when header_token is non-empty (the header alone decides then), when token is empty, and for
 * a missing, wrong or expired signature.
 */
bool files_signature_ok(const char *method, const char *path, const char *query,
                        const char *header_token, const char *token, time_t now);

/* The signature string for the given fields (exp < 0: none) into out (at least 48 bytes). */
void files_signature_compute(const char *path, const char *operation, const char *username,
                             const char *token, long long exp, char out[static 48]);

/* The same, taking the raw request target ("/files?path=...") instead of its query. */
bool files_signature_ok_target(const char *method, const char *path, const char *target,
                               const char *header_token, const char *token, time_t now);

struct registry;
/* A signed /files URL carries no sandbox id when the SDK's uploadUrl()/downloadUrl() are
 * fetched as they are (E2B_SANDBOX_URL set): find the running sandbox whose token the signature
 * is valid for. 0 with its id, -ENOENT when none (or no signature), -ENOMEM. One SHA-256 per
 * sandbox. */
int files_signature_find(struct registry *reg, const char *method, const char *path,
                         const char *target, char ret_id[static 64]);
