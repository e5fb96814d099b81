/* record_child.c — the command `frameproof record -- COMMAND` launches:
 * held until its output is open, attached to once its Python runtime is
 * up, ended at the end of the run, and how it ended in words. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interrupt.h"
#include "record_cli.h"
#include "spawn.h"

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * RECORD_NS_PER_S + ts.tv_nsec;
}

static void sleep_ns(long ns)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
    nanosleep(&ts, NULL);
}

pid_t cli_record_launch(char **command, int *gate)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "frameproof record: pipe: %s\n", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "frameproof record: fork: %s\n", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        close(fds[1]);
        char go = 0;
        ssize_t n;
        while ((n = read(fds[0], &go, 1)) < 0 && errno == EINTR)
            ;
        if (n != 1)
            _exit(127); /* not released: the command never runs */
        execvp(command[0], command);
        fprintf(stderr, "frameproof record: cannot run '%s': %s\n", command[0], strerror(errno));
        _exit(127);
    }
    close(fds[0]);
    *gate = fds[1];
    return pid;
}

void cli_record_release(pid_t pid, int gate, bool go)
{
    if (go && write(gate, "g", 1) != 1)
        go = false; /* the child is gone: attaching says so */
    close(gate);
    if (!go)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
}

/* Whether launched child pid has exited; reaps it into *status. */
static bool child_exited(pid_t pid, int *status)
{
    return waitpid(pid, status, WNOHANG) == pid;
}

int cli_record_attach(fp_session *s, pid_t pid, bool launched, int *child_status, bool *child_gone)
{
    const int64_t deadline = mono_ns() + (int64_t)(RECORD_ATTACH_TIMEOUT_S * (double)RECORD_NS_PER_S);
    for (;;) {
        int rc = fp_session_attach_pid(s, (int)pid);
        if (rc == FP_OK)
            return 0;
        if (!launched) {
            fprintf(stderr, "frameproof record: %s\n", fp_session_get_errmsg(s));
            return -1;
        }
        if (child_exited(pid, child_status)) {
            *child_gone = true;
            fprintf(stderr, "frameproof record: the command exited before its Python runtime could be found\n");
            return -1;
        }
        if (cf_interrupted()) {
            fprintf(stderr, "frameproof record: interrupted before the command's Python runtime was found\n");
            return -1;
        }
        if (mono_ns() > deadline) {
            fprintf(stderr, "frameproof record: no Python runtime in the command after %g s: %s\n",
                    RECORD_ATTACH_TIMEOUT_S, fp_session_get_errmsg(s));
            return -1;
        }
        sleep_ns(RECORD_ATTACH_POLL_NS);
    }
}

void cli_record_end_child(pid_t pid, int *status)
{
    if (child_exited(pid, status))
        return;
    kill(pid, SIGTERM);
    const int64_t deadline = mono_ns() + RECORD_CHILD_GRACE_NS;
    while (mono_ns() < deadline) {
        if (child_exited(pid, status))
            return;
        sleep_ns(RECORD_CHILD_POLL_NS);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

void cli_record_describe_child(int status)
{
    char words[RECORD_LABEL_MAX];
    cf_describe_status(status, words, sizeof words);
    fprintf(stderr, "frameproof record: the command ended: %s\n", words);
}
