/* replay_main.c — a plain main() for the fuzz targets: feeds every file
 * named on the command line, and every regular file below every directory
 * named (in name order, REPLAY_MAX_DEPTH levels deep), to
 * LLVMFuzzerTestOneInput once.
 * Built with the normal compiler so `meson test` replays the corpora and
 * the regression inputs without clang or a fuzzing engine.  A crash or an
 * oracle violation aborts; otherwise it prints how many inputs ran.
 *
 * Usage: replay_<target> [--allow-missing] PATH...
 *   --allow-missing  skip PATHs that do not exist (e.g. an empty
 *                    regressions directory) instead of failing
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

#define REPLAY_PATH_MAX 4096
#define REPLAY_MAX_INPUT (64u * 1024u * 1024u)
#define REPLAY_READ_CHUNK 65536u
#define REPLAY_MAX_DEPTH 4

static int run_file(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = REPLAY_READ_CHUNK, n = 0;
    uint8_t *buf = malloc(cap);
    int rc = -1;
    while (buf) {
        if (n == cap) {
            if (cap >= REPLAY_MAX_INPUT) {
                fprintf(stderr, "replay: %s is larger than %u bytes\n", path, REPLAY_MAX_INPUT);
                goto out;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb)
                goto out;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (!buf || ferror(f)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        goto out;
    }
    /* An exact-size copy, so ASan sees reads past the input's end. */
    uint8_t *input = malloc(n ? n : 1);
    if (!input)
        goto out;
    memcpy(input, buf, n);
    LLVMFuzzerTestOneInput(input, n);
    free(input);
    (*count)++;
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int depth, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            char **nn = realloc(names, ncap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
            cap = ncap;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char path[REPLAY_PATH_MAX];
        struct stat st;
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (w < 0 || (size_t)w >= sizeof path) {
            rc = -1;
            break;
        }
        if (stat(path, &st) != 0)
            continue;
        if (S_ISREG(st.st_mode))
            rc = run_file(path, count);
        else if (S_ISDIR(st.st_mode) && depth < REPLAY_MAX_DEPTH)
            rc = run_dir(path, depth + 1, count);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    bool allow_missing = false;
    size_t count = 0;
    int status = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--allow-missing") == 0) {
            allow_missing = true;
            continue;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            if (allow_missing && errno == ENOENT)
                continue;
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            status = 1;
            continue;
        }
        int rc = S_ISDIR(st.st_mode) ? run_dir(argv[i], 1, &count) : run_file(argv[i], &count);
        if (rc)
            status = 1;
    }
    printf("replayed %zu inputs\n", count);
    return status;
}
