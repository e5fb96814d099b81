/* install_paths.c — the default targets directory of `frameproof conform`,
 * found next to the running executable (see install_paths.h). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "install_paths.h"
#include "conform.h"
#include "util.h"

/* Directory of the running executable, symlinks resolved. */
static int exe_dir(char *out, size_t len, char *err, size_t errlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) {
        snprintf(err, errlen, "cannot read /proc/self/exe: %s", strerror(errno));
        return CF_E_IO;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash || slash == exe) {
        snprintf(err, errlen, "executable path %s has no directory", exe);
        return CF_E_FORMAT;
    }
    *slash = '\0';
    if ((size_t)snprintf(out, len, "%s", exe) >= len) {
        snprintf(err, errlen, "executable directory too long");
        return CF_E_LIMIT;
    }
    return CF_OK;
}

int cf_default_targets_describe(char *out, size_t len, const char *indent)
{
    char dir[PATH_MAX], err[CF_ERRMSG_LEN], used[PATH_MAX], real[PATH_MAX], cand[PATH_MAX];
    if (exe_dir(dir, sizeof dir, err, sizeof err) != CF_OK)
        snprintf(dir, sizeof dir, "<directory of the executable>");
    if (cf_default_targets_dir(used, sizeof used, err, sizeof err) != CF_OK)
        used[0] = '\0';
    const char *const rel[] = {CF_BUILD_TARGETS_LINK, CF_INSTALLED_TARGETS_REL};
    const char *const what[] = {"a build tree's link to the source", "the installed data"};
    size_t pos = 0;
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        bool chosen = cf_path_join(cand, sizeof cand, dir, rel[i]) == CF_OK && realpath(cand, real) &&
                      used[0] && strcmp(real, used) == 0;
        int n = snprintf(out + pos, len - pos, "%s%s%s/%s (%s%s)", i ? "\n" : "", indent, dir, rel[i], what[i],
                         chosen ? ", used now" : "");
        if (n < 0 || (size_t)n >= len - pos)
            return CF_E_LIMIT;
        pos += (size_t)n;
    }
    return CF_OK;
}

int cf_default_targets_dir(char *out, size_t len, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    int rc = exe_dir(dir, sizeof dir, err, errlen);
    if (rc != CF_OK)
        return rc;
    const char *const rel[] = {CF_BUILD_TARGETS_LINK, CF_INSTALLED_TARGETS_REL};
    char cand[PATH_MAX], marker[PATH_MAX], real[PATH_MAX];
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        if (cf_path_join(cand, sizeof cand, dir, rel[i]) || cf_path_join(marker, sizeof marker, cand, CF_TARGETS_MARKER)) {
            snprintf(err, errlen, "%s: path too long", dir);
            return CF_E_LIMIT;
        }
        if (access(marker, R_OK) != 0 || !realpath(cand, real))
            continue;
        if ((size_t)snprintf(out, len, "%s", real) >= len) {
            snprintf(err, errlen, "%s: path too long", real);
            return CF_E_LIMIT;
        }
        return CF_OK;
    }
    snprintf(err, errlen, "no targets directory (with " CF_TARGETS_MARKER ") at %s/" CF_BUILD_TARGETS_LINK
             " or %s/" CF_INSTALLED_TARGETS_REL "; pass --targets DIR or set FRAMEPROOF_TARGETS", dir, dir);
    return CF_E_NOTFOUND;
}
