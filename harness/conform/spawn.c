/* spawn.c — fork/exec of interpreters in their own process group,
 * channel pipes, the stdin pipe, exec-failure reporting, kill and reap (see
 * spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interrupt.h"
#include "spawn.h"
#include "conform.h"
#include "util.h"

#define FD_SCRATCH_MIN 10   /* where channel descriptors are parked in the child */
#define WAIT_POLL_NS 5000000L

void cf_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

int cf_argv_build(const char *root, char *const *argv, size_t argc, const char *const *extra,
                  size_t nextra, char ***out)
{
    bool chrooted = strcmp(root, "/") != 0;
    size_t n = (chrooted ? 2 : 0) + argc + nextra;
    char **v = calloc(n + 1, sizeof *v);
    if (!v)
        return CF_E_NOMEM;
    size_t k = 0;
    if (chrooted) {
        v[k++] = strdup("chroot");
        v[k++] = strdup(root);
    }
    for (size_t i = 0; i < argc; i++)
        v[k++] = strdup(argv[i]);
    for (size_t i = 0; i < nextra; i++)
        v[k++] = strdup(extra[i]);
    for (size_t i = 0; i < n; i++) {
        if (!v[i]) {
            for (size_t j = 0; j < n; j++)
                free(v[j]);
            free(v);
            return CF_E_NOMEM;
        }
    }
    *out = v;
    return CF_OK;
}

void cf_describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "wait status 0x%x", (unsigned)status);
}

/* In the child only: report errno on the exec-error pipe and exit. */
static void child_fail(int errfd, int code)
{
    int e = errno;
    ssize_t w = write(errfd, &e, sizeof e);
    (void)w;
    _exit(code);
}

static void child_setup_and_exec(const cf_spawn_req *req, pid_t parent, int rfd, int wfd, int infd, int errfd)
{
    /* New process group, so that the whole target can be killed at once. */
    if (setpgid(0, 0) != 0)
        child_fail(errfd, 126);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        child_fail(errfd, 126);
    if (getppid() != parent)
        _exit(126); /* the harness died before prctl took effect */

    /* Default dispositions and an empty mask for the new program. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0)
        child_fail(errfd, 126);
    int out = req->stdout_fd >= 0 ? req->stdout_fd : devnull;
    int errout = req->stderr_fd >= 0 ? req->stderr_fd : devnull;
    int in = infd >= 0 ? infd : devnull;
    /* Park the channel ends above the standard and target descriptors. */
    if (req->channel) {
        rfd = fcntl(rfd, F_DUPFD_CLOEXEC, FD_SCRATCH_MIN);
        wfd = fcntl(wfd, F_DUPFD_CLOEXEC, FD_SCRATCH_MIN);
        if (rfd < 0 || wfd < 0)
            child_fail(errfd, 126);
    }
    if (in < 3 && in != 0)
        in = fcntl(in, F_DUPFD_CLOEXEC, FD_SCRATCH_MIN);
    if (out < 3 && out != 1)
        out = fcntl(out, F_DUPFD_CLOEXEC, FD_SCRATCH_MIN);
    if (errout < 3 && errout != 2)
        errout = fcntl(errout, F_DUPFD_CLOEXEC, FD_SCRATCH_MIN);
    if (in < 0 || out < 0 || errout < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errout, 2) < 0)
        child_fail(errfd, 126);
    if (req->channel) {
        if (dup2(rfd, CF_TARGET_RFD) < 0 || dup2(wfd, CF_TARGET_WFD) < 0)
            child_fail(errfd, 126);
        if (setenv("FP_GT_RFD", "3", 1) || setenv("FP_GT_WFD", "4", 1))
            child_fail(errfd, 126);
    }
    /* Everything else (log files, libframeproof's descriptors) stays
     * behind; errors are harmless since our own descriptors are CLOEXEC. */
    (void)close_range(req->channel ? CF_TARGET_WFD + 1 : 3, ~0U, CLOSE_RANGE_CLOEXEC);
    unsetenv("FP_GT_AUTO_CONTINUE");
    unsetenv("PYTHONPATH");
    unsetenv("PYTHONHOME");
    unsetenv("PYTHON_JIT");
    for (char *const *kv = req->env; kv && *kv; kv++)
        if (putenv(*kv) != 0)
            child_fail(errfd, 126);
    execvp(req->argv[0], req->argv);
    child_fail(errfd, 127);
}

int cf_spawn(const cf_spawn_req *req, cf_child *out, char *err, size_t errlen)
{
    int to[2] = {-1, -1}, from[2] = {-1, -1}, in[2] = {-1, -1}, ep[2] = {-1, -1};
    int rc = CF_E_IO;
    memset(out, 0, sizeof *out);
    out->from_child = out->to_child = -1;
    if (req->channel && (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (req->stdin_writer && pipe2(in, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (pipe2(ep, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        close(ep[0]);
        child_setup_and_exec(req, parent, to[0], from[1], in[0], ep[1]);
    }
    /* Also from this side, so that the group exists before any killpg. */
    (void)setpgid(pid, pid);
    out->pid = pid;
    close(ep[1]);
    ep[1] = -1;
    int child_errno = 0;
    ssize_t got;
    do
        got = read(ep[0], &child_errno, sizeof child_errno);
    while (got < 0 && errno == EINTR);
    if (got > 0) {
        snprintf(err, errlen, "cannot execute %s: %s", req->argv[0], strerror(child_errno));
        cf_child_kill(out);
        goto fail;
    }
    if (req->channel) {
        close(to[0]);
        close(from[1]);
        out->to_child = to[1];
        out->from_child = from[0];
    }
    if (req->stdin_writer) {
        close(in[0]);
        *req->stdin_writer = in[1];
    }
    close(ep[0]);
    return CF_OK;
fail:
    for (int i = 0; i < 2; i++) {
        if (to[i] >= 0)
            close(to[i]);
        if (from[i] >= 0)
            close(from[i]);
        if (in[i] >= 0)
            close(in[i]);
        if (ep[i] >= 0)
            close(ep[i]);
    }
    memset(out, 0, sizeof *out);
    out->from_child = out->to_child = -1;
    return rc;
}

int cf_child_wait_exit(cf_child *c, double deadline)
{
    for (;;) {
        if (c->pid <= 0 || c->exited || c->reaped)
            return CF_OK;
        siginfo_t info;
        memset(&info, 0, sizeof info);
        int r = waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOHANG | WNOWAIT);
        if (r == 0 && info.si_pid == c->pid) {
            c->exited = true;
            return CF_OK;
        }
        if (r != 0 && errno == ECHILD) {
            c->exited = c->reaped = true;
            return CF_OK;
        }
        if (cf_interrupted())
            return CF_E_INTERRUPTED;
        if (cf_now() >= deadline)
            return CF_E_TIMEOUT;
        struct timespec ts = {0, WAIT_POLL_NS};
        nanosleep(&ts, NULL);
    }
}

void cf_child_kill(cf_child *c)
{
    if (c->pid <= 0 || c->reaped)
        return;
    /* The unreaped leader keeps the group id from being reused. */
    (void)killpg(c->pid, SIGKILL);
    int status;
    pid_t r;
    do
        r = waitpid(c->pid, &status, 0);
    while (r < 0 && errno == EINTR);
    c->reaped = true;
    c->exited = true;
    c->status = r == c->pid ? status : 0;
}

void cf_child_close(cf_child *c)
{
    if (c->from_child >= 0)
        close(c->from_child);
    if (c->to_child >= 0)
        close(c->to_child);
    c->from_child = c->to_child = -1;
}
