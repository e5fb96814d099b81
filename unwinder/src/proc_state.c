/* proc_state.c — process liveness and per-thread scheduler state from /proc. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc_state.h"

#define STAT_BUF 512

static char read_state_letter(const char *path)
{
    char buf[STAT_BUF];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* The command name is in parentheses and may itself contain ") ". */
    char *close_paren = strrchr(buf, ')');
    if (!close_paren || close_paren[1] != ' ' || close_paren[2] == 0)
        return 0;
    return close_paren[2];
}

bool fpi_proc_is_gone(int pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    char st = read_state_letter(path);
    return st == 0 || st == 'Z' || st == 'X';
}

char fpi_proc_thread_state(int pid, long tid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%ld/stat", pid, tid);
    return read_state_letter(path);
}
