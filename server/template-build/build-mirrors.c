/* SPDX-License-Identifier: Apache-2.0 */
#include "template-build/build-mirrors.h"

#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void add_host(char ***v, size_t *n, const char *h, size_t len)
{
        if (len == 0 || len > 253 || *n >= BUILD_MIRRORS_MAX)
                return;
        for (size_t i = 0; i < *n; i++)
                if (strlen((*v)[i]) == len && strncasecmp((*v)[i], h, len) == 0)
                        return;
        char **nv = realloc(*v, (*n + 1) * sizeof(char *));
        if (!nv)
                return;
        *v = nv;
        if ((nv[*n] = strndup(h, len))) {
                for (char *p = nv[*n]; *p; p++)
                        *p = (char)tolower((unsigned char)*p);
                (*n)++;
        }
}

static void scan_file(const char *path, char ***v, size_t *n)
{
        FILE *f = fopen(path, "re");
        char line[4096];
        while (f && fgets(line, sizeof(line), f)) {
                char *hash = strchr(line, '#');
                if (hash)
                        *hash = 0;
                for (char *p = line; (p = strstr(p, "://"));) {
                        char *start = p;
                        while (start > line && isalnum((unsigned char)start[-1]))
                                start--;
                        bool web = (p - start == 4 && strncmp(start, "http", 4) == 0) ||
                                   (p - start == 5 && strncmp(start, "https", 5) == 0);
                        p += 3;
                        size_t len = strcspn(p, "/:] \t\r\n");
                        if (web)
                                add_host(v, n, p, len);
                }
        }
        if (f)
                fclose(f);
}

int build_mirror_hosts(char ***ret, size_t *ret_n)
{
        char **v = NULL;
        size_t n = 0;
        const char *env = getenv(BUILD_MIRRORS_ENV);
        if (env) {
                for (const char *p = env; *p;) {
                        size_t len = strcspn(p, ",");
                        add_host(&v, &n, p, len);
                        p += len + (p[len] == ',');
                }
        } else {
                scan_file("/etc/apt/sources.list", &v, &n);
                DIR *d = opendir("/etc/apt/sources.list.d");
                struct dirent *de;
                while (d && (de = readdir(d))) {
                        size_t l = strlen(de->d_name);
                        char path[512];
                        if ((l > 5 && strcmp(de->d_name + l - 5, ".list") == 0) ||
                            (l > 8 && strcmp(de->d_name + l - 8, ".sources") == 0)) {
                                snprintf(path, sizeof(path), "/etc/apt/sources.list.d/%s",
                                         de->d_name);
                                scan_file(path, &v, &n);
                        }
                }
                if (d)
                        closedir(d);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}
