/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2B's volume content API (docs/e2b-wire.md §2.7), what the SDK's Volume file operations call
 * at E2B_VOLUME_API_URL (sbxd prints it: its own URL), served on the host by sbxd without any
 * sandbox (storage/volume-fs.h for how paths are kept inside the volume):
 *   GET    /volumecontent/{id}/dir?path=&depth=                 200 [VolumeEntryStat]
 *   POST   /volumecontent/{id}/dir?path=&uid=&gid=&mode=&force= 200 VolumeEntryStat
 *   GET    /volumecontent/{id}/path?path=                       200 VolumeEntryStat
 *   PATCH  /volumecontent/{id}/path?path= {uid?,gid?,mode?}     200 VolumeEntryStat
 *   DELETE /volumecontent/{id}/path?path=                       204
 *   GET    /volumecontent/{id}/file?path=                       200 the bytes
 *   PUT    /volumecontent/{id}/file?path=&uid=&gid=&mode=&force= (the bytes) 200 VolumeEntryStat
 * Auth: Authorization: Bearer <the volume's token> (from POST/GET /volumes), or an API key
 * (as a bearer or X-API-KEY); 401 otherwise. Errors in the E2B shape: unknown volume or path
 * 404, exists 409, a bad argument (a non-directory in the path, a directory read as a file,
 * depth outside 1..10, the root deleted) 400, the volume full 507.
 */
#pragma once

#include "http/http.h"

int e2b_volume_dir(struct request *req);
int e2b_volume_path(struct request *req);
int e2b_volume_file_get(struct request *req);
int e2b_volume_file_put_begin(struct request *req);
int e2b_volume_file_put_upload(struct request *req, const char *data, size_t len);
int e2b_volume_file_put_finish(struct request *req);
