/* test_pause.c — stopping a live process (frameproof/pause.h) whose main
 * thread has exited while another thread runs on: the kernel keeps the
 * exited leader as a zombie task that ptrace refuses with EPERM, which is
 * no lack of permission (a regression: `record --blocking` failed with
 * "permission denied" on a target exiting under it).  The live thread
 * must be stopped and resumed, and the refusal must not fail the stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frameproof/frameproof.h"
#include "frameproof/pause.h"

#define WAIT_STEPS 2000        /* 1 ms each: the leader must turn zombie within 2 s */
#define STEP_NS 1000000L
#define ERR_LEN 512

static void *spin(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* The child: one thread waiting for ever, the leader gone. */
static void zombie_leader(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, spin, NULL) != 0)
        _exit(2);
    pthread_exit(NULL);
}

static char leader_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

static void test_exited_leader(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        zombie_leader();
    struct timespec step = {0, STEP_NS};
    int i;
    for (i = 0; i < WAIT_STEPS && leader_state(pid) != 'Z'; i++)
        nanosleep(&step, NULL);
    if (i == WAIT_STEPS) {
        kill(pid, SIGKILL);
        fail_msg("the child's leader thread never became a zombie");
    }
    fp_pause *p = NULL;
    char err[ERR_LEN] = "";
    int rc = fp_pause_new((int)pid, true, &p, err, sizeof err);
    if (rc != FP_OK) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("stopping a process with an exited leader: %s", err);
    }
    assert_int_equal(fp_pause_get_thread_count(p), 2);
    fp_pause_resume(p);
    fp_pause_free(p);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exited_leader),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
