/* launch.c — starts a scenario script under an interpreter (see
 * launch.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conform.h"
#include "launch.h"
#include "target_sync.h"
#include "util.h"

static int open_log(const char *dir, const char *scen, const char *ext, char *path, size_t pathlen, int *fd)
{
    char name[NAME_MAX];
    char safe[NAME_MAX - 16];
    cf_sanitize_name(scen, safe, sizeof safe);
    snprintf(name, sizeof name, "%s.%s", safe, ext);
    if (cf_path_join(path, pathlen, dir, name))
        return CF_E_LIMIT;
    *fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    return *fd < 0 ? CF_E_IO : CF_OK;
}

int cf_launch_scenario(const cf_launch_req *req, const cf_launched *out, char *err, size_t errlen)
{
    char host_script[PATH_MAX], script[PATH_MAX], dir[PATH_MAX];
    if (cf_path_join(dir, sizeof dir, req->targets_dir, req->subdir) ||
        cf_path_join(host_script, sizeof host_script, dir, req->file)) {
        snprintf(err, errlen, "scenario path too long");
        return CF_E_LIMIT;
    }
    struct stat st;
    if (stat(host_script, &st) != 0) {
        snprintf(err, errlen, "scenario file %s: %s", host_script, strerror(errno));
        return CF_E_IO;
    }
    if (cf_interp_chrooted(req->interp)) {
        /* The chroot runs the copy cf_sync_targets made of this checkout. */
        char chroot_dir[PATH_MAX], inside[CF_CHROOT_TARGETS_MAX];
        cf_chroot_targets(req->targets_dir, inside, sizeof inside);
        if (cf_path_join(chroot_dir, sizeof chroot_dir, inside, req->subdir) ||
            cf_path_join(script, sizeof script, chroot_dir, req->file)) {
            snprintf(err, errlen, "scenario path too long");
            return CF_E_LIMIT;
        }
    } else {
        snprintf(script, sizeof script, "%s", host_script);
    }
    if (open_log(req->log_dir, req->name, "stdout", out->out_path, PATH_MAX, out->out_fd) ||
        open_log(req->log_dir, req->name, "stderr", out->err_path, PATH_MAX, out->err_fd)) {
        snprintf(err, errlen, "cannot create log files in %s: %s", req->log_dir, strerror(errno));
        return CF_E_IO;
    }
    char **argv = NULL;
    const char *extra[] = {script};
    int rc = cf_argv_build(req->interp->root, req->interp->argv, req->interp->argc, extra, 1, &argv);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    /* The entry's environment (the JIT of a "+jit" id) goes to the target
     * only, through chroot, which keeps the environment. */
    cf_spawn_req sreq = {
        .argv = argv, .stdout_fd = *out->out_fd, .stderr_fd = *out->err_fd, .channel = true, .env = req->interp->env};
    char why[CF_ERRMSG_LEN];
    rc = cf_spawn(&sreq, out->child, why, sizeof why);
    cf_argv_free(argv);
    if (rc) {
        snprintf(err, errlen, "cannot start the target: %s", why);
        return rc;
    }
    if (req->pgid_path) {
        char text[32];
        int n = snprintf(text, sizeof text, "%d\n", (int)out->child->pid);
        rc = cf_write_text_file(req->pgid_path, text, (size_t)n, err, errlen);
        if (rc)
            return rc;
    }
    return CF_OK;
}

void cf_launched_close(const cf_launched *l, const char *pgid_path)
{
    cf_child_kill(l->child);
    cf_child_close(l->child);
    if (pgid_path)
        unlink(pgid_path);
    if (*l->out_fd >= 0)
        close(*l->out_fd);
    if (*l->err_fd >= 0)
        close(*l->err_fd);
    *l->out_fd = *l->err_fd = -1;
}

int cf_launched_await_exit(cf_child *child, double deadline, char *err, size_t errlen)
{
    int w = cf_child_wait_exit(child, deadline);
    if (w == CF_E_TIMEOUT || w == CF_E_INTERRUPTED) {
        snprintf(err, errlen, "%s", w == CF_E_TIMEOUT ? "target did not exit after \"done\" (killed)" : "interrupted");
        return w;
    }
    cf_child_kill(child);
    if (!WIFEXITED(child->status) || WEXITSTATUS(child->status) != 0) {
        char status[128];
        cf_describe_status(child->status, status, sizeof status);
        snprintf(err, errlen, "target ended with %s after \"done\"", status);
        return CF_E_UNWINDER;
    }
    return CF_OK;
}
