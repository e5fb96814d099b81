/* proc_state.c — process liveness and per-thread scheduler state from /proc. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc_state.h"

#define STAT_BUF 512
#define PF_EXITING_FLAG 0x4ul /* the kernel's PF_EXITING in the flags field of /proc/.../stat */
#define FLAGS_FIELD 6         /* fields after the state letter: ppid pgrp session tty_nr tpgid flags */

/* The fields of a stat file after the command name ("S 1 2 ..."), in
 * buf; NULL if it cannot be read. */
static const char *read_stat_tail(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = 0;
    /* The command name is in parentheses and may itself contain ") ". */
    char *close_paren = strrchr(buf, ')');
    if (!close_paren || close_paren[1] != ' ' || close_paren[2] == 0)
        return NULL;
    return close_paren + 2;
}

static char read_state_letter(const char *path)
{
    char buf[STAT_BUF];
    const char *tail = read_stat_tail(path, buf, sizeof buf);
    return tail ? tail[0] : 0;
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

bool fpi_proc_thread_exiting(int pid, long tid)
{
    char path[96], buf[STAT_BUF];
    snprintf(path, sizeof path, "/proc/%d/task/%ld/stat", pid, tid);
    const char *tail = read_stat_tail(path, buf, sizeof buf);
    if (!tail)
        return true; /* gone from /proc: exited */
    if (tail[0] == 'Z' || tail[0] == 'X')
        return true;
    const char *f = tail;
    for (int field = 0; field < FLAGS_FIELD && f; field++) {
        f = strchr(f, ' ');
        if (f)
            f++;
    }
    unsigned long flags;
    return f && sscanf(f, "%lu", &flags) == 1 && (flags & PF_EXITING_FLAG);
}
