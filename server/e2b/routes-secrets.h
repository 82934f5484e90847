/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2B's secrets (docs/e2b-wire.md "Secrets"; storage/secret-store.h), rows of the route table
 * with X-API-KEY. No answer ever carries a value:
 *   POST /secrets {"name", "value", "metadata"?}   201 Secret
 *   GET /secrets?limit&nextToken                   200 [Secret], oldest first, X-Next-Token
 *   GET /secrets/{id or name}                      200 Secret
 *   POST /secrets/{id or name} {"value", "metadata"?}  200 Secret (a new version)
 *   DELETE /secrets/{id or name}                   204
 * Secret: {secretID, name, currentVersion, metadata, createdAt, updatedAt}. Errors: bad input
 * 400, a name taken 409, unknown 404, SECRETS_MAX reached 400.
 */
#pragma once

#include "http/http.h"

#define SECRETS_PAGE_MAX 100 /* limit's maximum and default */

int e2b_secret_create(struct request *req);
int e2b_secret_list(struct request *req);
int e2b_secret_get(struct request *req);
int e2b_secret_update(struct request *req);
int e2b_secret_delete(struct request *req);
