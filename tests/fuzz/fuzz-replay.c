/* SPDX-License-Identifier: Apache-2.0 */
/* Replays fuzz inputs (files or directories of files) through LLVMFuzzerTestOneInput, so the
 * corpus and every committed crasher run in the normal (and sanitizer) unit suite. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
        FILE *f = fopen(path, "rbe");
        if (!f)
                return -1;
        uint8_t *buf = malloc(1 << 20);
        size_t n = fread(buf, 1, 1 << 20, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
        return 0;
}

int main(int argc, char **argv)
{
        int count = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        perror(argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        count += replay_file(argv[i]) == 0;
                        continue;
                }
                DIR *d = opendir(argv[i]);
                struct dirent *e;
                while (d && (e = readdir(d))) {
                        if (e->d_name[0] == '.')
                                continue;
                        char p[4096];
                        snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
                        count += replay_file(p) == 0;
                }
                if (d)
                        closedir(d);
        }
        fprintf(stderr, "replayed %d inputs\n", count);
        return count > 0 ? 0 : 1;
}
