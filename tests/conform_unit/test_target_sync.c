/* test_target_sync.c — where the in-target files are copied inside a
 * chroot: one directory per targets directory (two checkouts sharing a
 * root never share a copy, two spellings of one checkout do, a known path
 * has the name the Python runner gives it), and the copy lands there. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conform.h"
#include "target_sync.h"
#include "util.h"

#define PREFIX CF_CHROOT_TARGETS "-"
#define HEX_DIGITS 16u

#define TOP_LEN 64u /* the temporary directory's name */

/* One path and its name, asserted of the Python spelling too
 * (tests/facts/test_chroot_name.py): the two must agree byte for byte. */
#define KNOWN_PATH "/frameproof/no-such-checkout/targets"
#define KNOWN_NAME "/tmp/frameproof-targets-b454cbd606347065"

typedef struct fixture {
    char top[TOP_LEN];   /* a temporary directory holding the rest */
    char a[PATH_MAX];    /* top/a: one checkout's targets */
    char b[PATH_MAX];    /* top/b: another's */
    char root[PATH_MAX]; /* top/root: the chroot both copy into */
} fixture;

static void put(const char *dir, const char *sub, const char *name, const char *text)
{
    char d[PATH_MAX], p[PATH_MAX + NAME_MAX];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    assert_int_equal(cf_mkdir_p(d), 0);
    snprintf(p, sizeof p, "%s/%s", d, name);
    char err[CF_ERRMSG_LEN];
    assert_int_equal(cf_write_text_file(p, text, strlen(text), err, sizeof err), CF_OK);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->top, sizeof f->top, "/tmp/fp-sync-XXXXXX");
    if (!mkdtemp(f->top))
        return -1;
    snprintf(f->a, sizeof f->a, "%s/a", f->top);
    snprintf(f->b, sizeof f->b, "%s/b", f->top);
    snprintf(f->root, sizeof f->root, "%s/root", f->top);
    for (int i = 0; i < 2; i++) {
        const char *dir = i ? f->b : f->a;
        put(dir, "groundtruth", "fpgt.py", i ? "b\n" : "a\n");
        put(dir, "scenarios", "s.py", i ? "b\n" : "a\n");
        put(dir, "live", "l.py", i ? "b\n" : "a\n");
    }
    assert_int_equal(cf_mkdir_p(f->root), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->top);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

static void test_names(void **state)
{
    fixture *f = *state;
    char na[CF_CHROOT_TARGETS_MAX], nb[CF_CHROOT_TARGETS_MAX], again[CF_CHROOT_TARGETS_MAX];
    cf_chroot_targets(f->a, na, sizeof na);
    cf_chroot_targets(f->b, nb, sizeof nb);
    assert_int_equal(strlen(na), strlen(PREFIX) + HEX_DIGITS);
    assert_memory_equal(na, PREFIX, strlen(PREFIX));
    assert_int_equal(strspn(na + strlen(PREFIX), "0123456789abcdef"), HEX_DIGITS);
    assert_string_not_equal(na, nb); /* two checkouts, two copies */
    char spelled[PATH_MAX + 8];
    snprintf(spelled, sizeof spelled, "%s/../a/", f->b);
    cf_chroot_targets(spelled, again, sizeof again);
    assert_string_equal(na, again); /* one checkout however it is named */
    char link[PATH_MAX + 8];
    snprintf(link, sizeof link, "%s/link", f->top);
    assert_int_equal(symlink(f->a, link), 0);
    cf_chroot_targets(link, again, sizeof again);
    assert_string_equal(na, again);
    cf_chroot_targets(KNOWN_PATH, again, sizeof again);
    assert_string_equal(again, KNOWN_NAME);
}

static void read_back(const char *root, const char *inside, const char *rel, const char *want)
{
    char p[2 * PATH_MAX], got[16] = "";
    snprintf(p, sizeof p, "%s%s/%s", root, inside, rel);
    FILE *fh = fopen(p, "r");
    if (!fh)
        fail_msg("%s was not copied", p);
    if (!fgets(got, sizeof got, fh))
        got[0] = 0;
    fclose(fh);
    assert_string_equal(got, want);
}

static void test_copies_apart(void **state)
{
    fixture *f = *state;
    char err[CF_ERRMSG_LEN], na[CF_CHROOT_TARGETS_MAX], nb[CF_CHROOT_TARGETS_MAX];
    assert_int_equal(cf_sync_targets(f->a, f->root, err, sizeof err), CF_OK);
    assert_int_equal(cf_sync_targets(f->b, f->root, err, sizeof err), CF_OK);
    cf_chroot_targets(f->a, na, sizeof na);
    cf_chroot_targets(f->b, nb, sizeof nb);
    static const char *const files[] = {"groundtruth/fpgt.py", "scenarios/s.py", "live/l.py"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        read_back(f->root, na, files[i], "a\n"); /* b's sync left a's copy alone */
        read_back(f->root, nb, files[i], "b\n");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copies_apart, setup, teardown),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests_name("conform_unit_target_sync", tests, NULL, NULL);
}
