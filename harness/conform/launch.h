/* launch.h — starting a scenario script (parked or live) under an
 * interpreter: its log files, the chroot path, the channel, and the file
 * that records its process group for the scheduler. */
#ifndef CF_LAUNCH_H
#define CF_LAUNCH_H

#include <stddef.h>

#include "manifest.h"
#include "spawn.h"

typedef struct cf_launch_req {
    const cf_interp *interp;
    const char *targets_dir;   /* absolute host path of targets/ */
    const char *subdir;        /* "scenarios" or "live" */
    const char *file;          /* the script, relative to subdir */
    const char *log_dir;       /* where NAME.stdout and NAME.stderr go */
    const char *name;          /* the scenario's name */
    const char *pgid_path;     /* written with the target's process group, or NULL */
} cf_launch_req;

/* The started target and its logs (out_path and err_path hold PATH_MAX
 * bytes each; the descriptors are -1 until opened and stay the caller's). */
typedef struct cf_launched {
    cf_child *child;
    int *out_fd, *err_fd;
    char *out_path, *err_path;
} cf_launched;

/* Opens the logs and starts the script with the ground-truth channel.
 * CF_OK, CF_E_NOMEM, or another code with the reason in err. */
int cf_launch_scenario(const cf_launch_req *req, const cf_launched *out, char *err, size_t errlen);

/* After "done": waits until the monotonic deadline for the target to exit,
 * then kills its group and reaps it.  CF_OK when it exited with status 0;
 * else CF_E_TIMEOUT, CF_E_INTERRUPTED or CF_E_UNWINDER (a bad status),
 * with the reason in err. */
int cf_launched_await_exit(cf_child *child, double deadline, char *err, size_t errlen);

/* Kills and reaps the target's group, closes the channel and the logs and
 * removes the process-group file (pgid_path may be NULL).  Idempotent. */
void cf_launched_close(const cf_launched *l, const char *pgid_path);

#endif
