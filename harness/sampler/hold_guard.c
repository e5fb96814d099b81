/* hold_guard.c — the held threads' affinity given back when the sampler
 * dies mid-hold (hold_guard.h): a shared page and a guard process waiting
 * on a pipe. */
#include "hold_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frameproof/frameproof.h"

_Static_assert(sizeof(cpu_set_t) >= sizeof(((fps_held_set *)0)->mask[0]), "a cpu_set_t holds a kept mask");

int fps_hold_guard_open(fps_hold_guard *g, int pid, char *msg, size_t msglen)
{
    *g = (fps_hold_guard){.set = NULL, .pid = -1, .fd = -1};
    void *p = mmap(NULL, sizeof(fps_held_set), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(msg, msglen, "cannot map the record of held threads: %s", strerror(errno));
        return FP_E_NOMEM;
    }
    g->set = p; /* zero-filled: nothing held */
    g->set->pid = pid;
    return FP_OK;
}

/* The guard's whole life, in a child of a process that may have had other
 * threads: system calls only (no locks, no allocation).  Waits for the
 * pipe's end, then gives back what is listed. */
static _Noreturn void guard_main(int fd, const fps_held_set *set)
{
    (void)setsid(); /* out of the sampler's group: Ctrl-C and a kill of the group are the sampler's */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    const int quiet[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
        (void)sigaction(quiet[i], &ign, NULL);
    if (fd > 0)
        (void)syscall(SYS_close_range, 0u, (unsigned)fd - 1, 0u);
    (void)syscall(SYS_close_range, (unsigned)fd + 1, ~0u, 0u); /* no pipe or file of the sampler's kept open */
    char b;
    while (read(fd, &b, 1) < 0 && errno == EINTR)
        ;
    const size_t n = set->n < FPS_HOLD_MAX ? set->n : FPS_HOLD_MAX;
    for (size_t i = 0; i < n; i++) {
        /* A tid that is no longer one of the target's threads may name
         * another process's thread by now: tgkill's check leaves it alone. */
        if (syscall(SYS_tgkill, set->pid, (pid_t)set->tid[i], 0) != 0)
            continue;
        cpu_set_t old;
        CPU_ZERO(&old);
        memcpy(&old, set->mask[i], sizeof set->mask[i]);
        (void)sched_setaffinity((pid_t)set->tid[i], sizeof old, &old);
    }
    _exit(0);
}

int fps_hold_guard_watch(fps_hold_guard *g, char *msg, size_t msglen)
{
    if (g->pid > 0)
        return FP_OK;
    if (!g->set) {
        snprintf(msg, msglen, "hold guard: no record of held threads (not opened)");
        return FP_E_INVALID_ARG;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(msg, msglen, "hold guard: cannot make a pipe: %s", strerror(errno));
        return FP_E_IO;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        snprintf(msg, msglen, "hold guard: cannot start its process: %s", strerror(e));
        return FP_E_IO;
    }
    if (pid == 0)
        guard_main(fds[0], g->set);
    close(fds[0]);
    g->fd = fds[1];
    g->pid = pid;
    return FP_OK;
}

void fps_hold_guard_close(fps_hold_guard *g)
{
    if (g->fd >= 0)
        close(g->fd); /* the guard wakes, gives back what is still listed, and exits */
    if (g->pid > 0)
        while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    if (g->set)
        munmap(g->set, sizeof *g->set);
    *g = (fps_hold_guard){.set = NULL, .pid = -1, .fd = -1};
}
