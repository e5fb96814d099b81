/* target_sync.c — recursive, idempotent copy of the in-target files into
 * a chroot (see conform_sync.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target_sync.h"
#include "conform.h"
#include "util.h"

#define COPY_CHUNK 65536u
#define MAX_DEPTH 16 /* directory nesting below groundtruth/, scenarios/ and live/ */
#define FNV_OFFSET 0xcbf29ce484222325ull /* FNV-1a, 64 bits: a stable name, not a secret */
#define FNV_PRIME 0x100000001b3ull

static const char *const SYNCED_DIRS[] = {"groundtruth", "scenarios", "live"};

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static int copy_file(const char *src, const char *dst, const struct stat *st, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    char buf[COPY_CHUNK];
    int rc = CF_E_IO;
    int in = -1, out = -1;
    int n = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", dst, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", dst);
        return CF_E_LIMIT;
    }
    in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        snprintf(err, errlen, "cannot open %s: %s", src, strerror(errno));
        goto out;
    }
    out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (st->st_mode & 0111) ? 0755 : 0644);
    if (out < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t got = read(in, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(err, errlen, "cannot read %s: %s", src, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        for (ssize_t done = 0; done < got;) {
            ssize_t w = write(out, buf + done, (size_t)(got - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
                goto out;
            }
            done += w;
        }
    }
    struct timespec times[2] = {st->st_atim, st->st_mtim};
    if (futimens(out, times) != 0 || close(out) != 0) {
        out = -1;
        snprintf(err, errlen, "cannot finish %s: %s", tmp, strerror(errno));
        goto out;
    }
    out = -1;
    if (rename(tmp, dst) != 0) {
        snprintf(err, errlen, "cannot rename %s: %s", tmp, strerror(errno));
        goto out;
    }
    rc = CF_OK;
out:
    if (out >= 0)
        close(out);
    if (in >= 0)
        close(in);
    if (rc != CF_OK)
        unlink(tmp);
    return rc;
}

static int sync_dir(const char *src, const char *dst, int depth, char *err, size_t errlen)
{
    if (depth > MAX_DEPTH) {
        snprintf(err, errlen, "%s: directories nested too deeply", src);
        return CF_E_LIMIT;
    }
    if (cf_mkdir_p(dst) != CF_OK) {
        snprintf(err, errlen, "cannot create %s: %s", dst, strerror(errno));
        return CF_E_IO;
    }
    DIR *d = opendir(src);
    if (!d) {
        snprintf(err, errlen, "cannot open %s: %s", src, strerror(errno));
        return CF_E_IO;
    }
    int rc = CF_OK;
    struct dirent *de;
    while (rc == CF_OK && (de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, "__pycache__") == 0)
            continue;
        char s[PATH_MAX], t[PATH_MAX];
        if (cf_path_join(s, sizeof s, src, name) || cf_path_join(t, sizeof t, dst, name)) {
            snprintf(err, errlen, "%s/%s: path too long", src, name);
            rc = CF_E_LIMIT;
            break;
        }
        struct stat st, dt;
        if (stat(s, &st) != 0)
            continue; /* dangling link or vanished file */
        if (S_ISDIR(st.st_mode)) {
            rc = sync_dir(s, t, depth + 1, err, errlen);
        } else if (S_ISREG(st.st_mode)) {
            if (stat(t, &dt) == 0 && S_ISREG(dt.st_mode) && same_file(&st, &dt))
                continue;
            rc = copy_file(s, t, &st, err, errlen);
        }
    }
    closedir(d);
    return rc;
}

void cf_chroot_targets(const char *targets_dir, char *out, size_t outlen)
{
    char canon[PATH_MAX];
    const char *name = realpath(targets_dir, canon) ? canon : targets_dir;
    uint64_t h = FNV_OFFSET;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * FNV_PRIME;
    snprintf(out, outlen, "%s-%016" PRIx64, CF_CHROOT_TARGETS, h);
}

int cf_sync_targets(const char *targets_dir, const char *root, char *err, size_t errlen)
{
    char top[PATH_MAX], inside[CF_CHROOT_TARGETS_MAX];
    cf_chroot_targets(targets_dir, inside, sizeof inside);
    if (cf_path_join(top, sizeof top, root, &inside[1])) {
        snprintf(err, errlen, "%s: path too long", root);
        return CF_E_LIMIT;
    }
    for (size_t i = 0; i < sizeof SYNCED_DIRS / sizeof SYNCED_DIRS[0]; i++) {
        char src[PATH_MAX], dst[PATH_MAX];
        if (cf_path_join(src, sizeof src, targets_dir, SYNCED_DIRS[i]) ||
            cf_path_join(dst, sizeof dst, top, SYNCED_DIRS[i])) {
            snprintf(err, errlen, "%s: path too long", targets_dir);
            return CF_E_LIMIT;
        }
        int rc = sync_dir(src, dst, 0, err, errlen);
        if (rc)
            return rc;
    }
    return CF_OK;
}
