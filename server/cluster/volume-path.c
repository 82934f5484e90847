/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/volume-path.h"

#include <string.h>

#include "macros.h"

bool cluster_volume_path_id(const char *path, char id[static VOLUME_ID_LEN + 1])
{
        static const char *const prefixes[] = {"/volumes/", "/volumecontent/"};
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
                size_t pl = strlen(prefixes[i]);
                if (strncmp(path, prefixes[i], pl) != 0)
                        continue;
                const char *s = path + pl;
                size_t l = strcspn(s, "/");
                /* /volumes/<id> or /volumes/<id>/; /volumecontent/<id>/<what> */
                bool shape = i == 0 ? (s[l] == 0 || strcmp(s + l, "/") == 0) : s[l] == '/';
                if (l == 0 || l > VOLUME_ID_LEN || !shape)
                        return false;
                memcpy(id, s, l);
                id[l] = 0;
                return true;
        }
        return false;
}
