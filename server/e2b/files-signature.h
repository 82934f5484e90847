/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signed envd file URLs (docs/e2b-wire.md §3.1): GET/POST /files may carry `signature` (and
 * `signature_expiration`) instead of X-Access-Token. The signature is
 * "v1_" + base64-std-no-padding(SHA-256("<path>:<read|write>:<username or "">:<token>[:<exp>]"))
 * over the decoded `path` and `username` query parameters (the first of each).
 *
 * envd decides such a request in this order (its auth.go and its generated parameter
 * binding): a `signature_expiration` that is not an integer is 400; an
 * X-Access-Token header, when present, alone decides; else the signature must be there, match,
 * and not be expired. Each refusal has its own message (files_auth_message()).
 */
#pragma once

#include <stdbool.h>
#include <time.h>

/* The verdict on a GET/POST /files request. */
enum files_auth {
        FILES_AUTH_HEADER,         /* X-Access-Token present and right */
        FILES_AUTH_SIGNATURE,      /* no header; a valid, unexpired signature */
        FILES_AUTH_BAD_EXPIRATION, /* 400: signature_expiration is not an integer */
        FILES_AUTH_HEADER_MISMATCH,
        FILES_AUTH_MISSING,
        FILES_AUTH_INVALID,
        FILES_AUTH_EXPIRED,
};

/* Whether method + path is one of envd's signable routes (GET or POST of exactly "/files"). */
bool files_auth_applies(const char *method, const char *path);

/*
 * The verdict for a signable request (files_auth_applies()) with raw request target (the query
 * still percent-encoded) against sandbox token at time now. header_token: the X-Access-Token
 * header or NULL. An empty token matches no signature.
 */
enum files_auth files_auth_check(const char *method, const char *target, const char *header_token,
                                 const char *token, time_t now);

/* envd's message for a refusal ("invalid signature", ...); NULL for the two accepted verdicts. */
const char *files_auth_message(enum files_auth a);
/* envd's status for a refusal as the errno http_reply_error() maps to it: -EINVAL (400) for
 * FILES_AUTH_BAD_EXPIRATION, else -EACCES (401). */
int files_auth_errno(enum files_auth a);

/* The signature string for the given fields (exp < 0: none) into out (at least 48 bytes). */
void files_signature_compute(const char *path, const char *operation, const char *username,
                             const char *token, long long exp, char out[static 48]);

struct registry;
/* A signed /files URL carries no sandbox id when the SDK's uploadUrl()/downloadUrl() are
 * fetched as they are (E2B_SANDBOX_URL set): find the registered sandbox (running or paused)
 * whose token the signature is valid for. 0 with its id, -ENOENT when none (or no signature),
 * -ENOMEM. One SHA-256 per sandbox. */
int files_signature_find(struct registry *reg, const char *method, const char *path,
                         const char *target, char ret_id[static 64]);

/* Why a signed /files URL that names no sandbox found none: FILES_AUTH_EXPIRED when its
 * signature is right for some sandbox but expired, FILES_AUTH_BAD_EXPIRATION, else
 * FILES_AUTH_INVALID. FILES_AUTH_MISSING when the request is no signed URL at all (not a
 * signable route, or no `signature` parameter). */
enum files_auth files_signature_refusal(struct registry *reg, const char *method, const char *path,
                                        const char *target);
