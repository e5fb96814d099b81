/* test_images.c — memory images: replays every image file
 * corpora/images/<id>/<scenario>.fpimg with `frameproof replay --json` and compares the output byte for byte
 * with the stored .json (one test case per image; test_image_format.c
 * tests the format's parser, builder and recorder on hand-made images).  An image
 * named refused_*.fpimg holds a state no stack may be returned for (a
 * process stopped in the middle of an update of its own): its replay must
 * exit 1, its stored .json saying which thread failed.  An image named
 * async_*.fpimg holds an asyncio task graph (`snapshot --async`, checked
 * against the target's own capture_call_graph() when it was captured): it
 * is replayed with `replay --async --json`.
 *
 * Usage: test_images FRAMEPROOF_EXE IMAGES_DIR   (TAP on stdout)
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fp_facts.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"

#define MAX_IMAGES 4096
#define PATH_MAX_LEN 4096
#define OUT_MAX (64u * 1024u * 1024u)
#define READ_CHUNK 65536
#define REFUSED_PREFIX "refused_"
#define ASYNC_PREFIX "async_"

typedef struct image_case {
    const char *exe; /* the frameproof CLI */
    char path[PATH_MAX_LEN];
    char json[PATH_MAX_LEN];
    char name[PATH_MAX_LEN];
    bool refused; /* refused_*.fpimg: the replay must fail (exit 1) */
    bool async;   /* async_*.fpimg: its task graph is replayed */
} image_case;

/* ---- helpers ------------------------------------------------------------ */

static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = READ_CHUNK, n = 0;
    uint8_t *buf = malloc(cap);
    int rc = -1;
    if (!buf)
        goto out;
    for (;;) {
        if (n == cap) {
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
    if (ferror(f))
        goto out;
    *out = buf;
    *len = n;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}

/* Runs argv, collecting stdout; returns the exit status or -1. */
static int run_capture(char *const argv[], uint8_t **out, size_t *len)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = READ_CHUNK, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        if (n == cap) {
            uint8_t *nb = cap < OUT_MAX ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(fds[0], buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (!buf)
        return -1;
    *out = buf;
    *len = n;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int cmp_case(const void *a, const void *b)
{
    return strcmp(((const image_case *)a)->name, ((const image_case *)b)->name);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Collects IMAGES_DIR/<id>/<scenario>.fpimg. */
static size_t find_images(const char *exe, const char *dir, image_case *cases, size_t max)
{
    size_t n = 0;
    DIR *top = opendir(dir);
    if (!top)
        return 0;
    struct dirent *de;
    while ((de = readdir(top)) && n < max) {
        if (de->d_name[0] == '.')
            continue;
        char sub[PATH_MAX_LEN];
        int w = snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        if (w < 0 || (size_t)w >= sizeof sub)
            continue;
        DIR *d = opendir(sub);
        if (!d)
            continue;
        struct dirent *fe;
        while ((fe = readdir(d)) && n < max) {
            if (!ends_with(fe->d_name, ".fpimg"))
                continue;
            image_case *c = &cases[n];
            c->exe = exe;
            c->refused = strncmp(fe->d_name, REFUSED_PREFIX, strlen(REFUSED_PREFIX)) == 0;
            c->async = strncmp(fe->d_name, ASYNC_PREFIX, strlen(ASYNC_PREFIX)) == 0;
            int a = snprintf(c->path, sizeof c->path, "%s/%s", sub, fe->d_name);
            int b = snprintf(c->name, sizeof c->name, "replay %s/%s", de->d_name, fe->d_name);
            if (a < 0 || (size_t)a >= sizeof c->path || b < 0 || (size_t)b >= sizeof c->name)
                continue;
            size_t plen = strlen(c->path) - strlen(".fpimg");
            int j = snprintf(c->json, sizeof c->json, "%.*s.json", (int)plen, c->path);
            if (j < 0 || (size_t)j >= sizeof c->json)
                continue;
            n++;
        }
        closedir(d);
    }
    closedir(top);
    qsort(cases, n, sizeof *cases, cmp_case);
    return n;
}

/* ---- replay test cases -------------------------------------------------- */

static void test_replay_image(void **state)
{
    const image_case *c = *state;
    char *argv[] = {(char *)(uintptr_t)c->exe, (char *)"replay", (char *)"--json", (char *)c->path,
                    c->async ? (char *)"--async" : NULL, NULL};
    uint8_t *got = NULL, *want = NULL;
    size_t ngot = 0, nwant = 0;
    int status = run_capture(argv, &got, &ngot);
    assert_int_equal(status, c->refused ? 1 : 0);
    assert_int_equal(read_file(c->json, &want, &nwant), 0);
    if (ngot != nwant || memcmp(got, want, ngot) != 0) {
        size_t i = 0;
        while (i < ngot && i < nwant && got[i] == want[i])
            i++;
        print_error("%s: replay output differs from %s at byte %zu (%zu vs %zu bytes)\n", c->path, c->json, i, ngot,
                    nwant);
        free(got);
        free(want);
        fail();
    }
    free(got);
    free(want);
}

static void test_images_present(void **state)
{
    const char *dir = *state;
    print_error("no memory images (*/*.fpimg) found under %s\n", dir);
    fail();
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FRAMEPROOF_EXE IMAGES_DIR\n", argv[0]);
        return 2;
    }
    cmocka_set_message_output(CM_OUTPUT_TAP);
    static image_case cases[MAX_IMAGES];
    size_t n = find_images(argv[1], argv[2], cases, MAX_IMAGES);
    size_t ncases = n ? n : 1; /* no image: one failing case says so */
    struct CMUnitTest *tests = calloc(ncases, sizeof *tests);
    if (!tests)
        return 1;
    for (size_t i = 0; i < n; i++) {
        tests[i].name = cases[i].name;
        tests[i].test_func = test_replay_image;
        tests[i].initial_state = &cases[i];
    }
    if (n == 0) {
        tests[0].name = "memory images present";
        tests[0].test_func = test_images_present;
        tests[0].initial_state = argv[2];
    }
    int failed = _cmocka_run_group_tests("images", tests, ncases, NULL, NULL);
    free(tests);
    return failed ? 1 : 0;
}
