/* spawn.h — starting interpreter processes for `frameproof
 * conform` (each in its own process group, optionally through chroot, with
 * the ground-truth channel pipes or a stdin pipe) and killing and reaping
 * them. */
#ifndef CF_SPAWN_H
#define CF_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Descriptor numbers the target sees for the channel (FP_GT_RFD, FP_GT_WFD). */
#define CF_TARGET_RFD 3
#define CF_TARGET_WFD 4

typedef struct cf_spawn_req {
    char *const *argv;     /* NULL-terminated; argv[0] is looked up in PATH */
    int stdout_fd;         /* descriptor for the child's stdout, -1 = /dev/null */
    int stderr_fd;         /* descriptor for the child's stderr, -1 = /dev/null */
    bool channel;          /* create the ground-truth pipes and set FP_GT_* */
    int *stdin_writer;     /* non-NULL: the child's stdin is a pipe whose write
                              end (close-on-exec) is stored here; NULL: /dev/null */
    char *const *env;      /* NULL or NULL-terminated NAME=VALUE strings set in
                              the child's environment last (an interpreter
                              entry's "env": PYTHON_JIT=1 for a "+jit" id) */
} cf_spawn_req;

typedef struct cf_child {
    pid_t pid;             /* also the process group id; 0 when none */
    int from_child;        /* channel: harness reads (-1 when none) */
    int to_child;          /* channel: harness writes (-1 when none) */
    bool exited;           /* the child exited (not yet necessarily reaped) */
    bool reaped;
    int status;            /* wait status once reaped */
} cf_child;

/* Builds "[chroot ROOT] ARGV... EXTRA..." (NULL-terminated, malloc'd; free
 * with cf_argv_free).  No chroot prefix when root is "/". */
int cf_argv_build(const char *root, char *const *argv, size_t argc, const char *const *extra,
                  size_t nextra, char ***out);
void cf_argv_free(char **argv);

/* Starts the child in a new process group.  The child gets SIGKILL if the
 * calling process dies (PR_SET_PDEATHSIG), has stdin on /dev/null or on the
 * pipe of req->stdin_writer, and
 * does not see PYTHONPATH, PYTHONHOME, FP_GT_AUTO_CONTINUE or PYTHON_JIT
 * of the harness's environment (whether a target runs with the JIT is its
 * entry's choice, never the caller's shell's), then gets req->env.  Exec
 * failures are reported here (CF_E_IO with the reason in err). */
int cf_spawn(const cf_spawn_req *req, cf_child *out, char *err, size_t errlen);

/* Waits (polling, interruptible) until the child exits or the monotonic
 * deadline passes, without reaping it: CF_OK, CF_E_TIMEOUT or
 * CF_E_INTERRUPTED. */
int cf_child_wait_exit(cf_child *c, double deadline);

/* Kills the child's whole process group with SIGKILL, then reaps the child.
 * Idempotent; safe on a zeroed or already reaped child. */
void cf_child_kill(cf_child *c);

/* Closes the channel descriptors. */
void cf_child_close(cf_child *c);

/* Describes a wait status ("exit status 1", "killed by signal 9 (Killed)"). */
void cf_describe_status(int status, char *buf, size_t len);

#endif
