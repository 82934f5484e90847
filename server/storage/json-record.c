/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/json-record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"

int json_record_write(const char *path, const cJSON *o, mode_t mode)
{
        _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
        if (!text)
                return -ENOMEM;
        size_t len = strlen(text);
        int r = len > JSON_RECORD_MAX ? -EMSGSIZE : write_file_atomic(path, text, len, mode);
        explicit_bzero(text, len);
        return r;
}

int json_record_read(const char *path, cJSON **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_all(fd, JSON_RECORD_MAX, &text, &len);
        if (r < 0)
                return r;
        cJSON *o = cJSON_ParseWithLength(text, len);
        explicit_bzero(text, len);
        if (!cJSON_IsObject(o)) {
                cJSON_Delete(o);
                return -EBADMSG;
        }
        *ret = o;
        return 0;
}

cJSON *json_file_read(const char *path, size_t max)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        _cleanup_free_ char *text = NULL;
        size_t len;
        if (read_all(fd, max, &text, &len) < 0)
                return NULL;
        return cJSON_ParseWithLength(text, len);
}
