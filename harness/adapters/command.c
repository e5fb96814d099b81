/* command.c — the `command` adapter (see command.h): substitutes the pid
 * into the --unwinder-cmd template, runs it once per sample with a capped
 * stdout, the end of its stderr and a deadline, and turns its exit status
 * and output into a sample or a distinct failure message. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "conform.h"
#include "interrupt.h"
#include "protocol.h"
#include "registry.h"
#include "spawn.h"
#include "strbuf.h"
#include "util.h"

#define READ_CHUNK 65536u
#define SHELL_NOT_FOUND 127     /* sh: command not found */
#define SHELL_NOT_EXECUTABLE 126 /* sh: found but cannot be executed */
#define SHELL_SIGNAL_BASE 128   /* sh reports a child killed by signal N as 128 + N */

typedef struct command_state {
    char *cmdline;             /* the template with the pid substituted */
    unsigned declared;         /* --unwinder-cmd-fields mask, 0: from the output */
    double timeout;
    cf_strbuf out;             /* stdout of the current run */
    char tail[CF_TAIL_BYTES];  /* the last bytes of its stderr */
    size_t tail_len;
} command_state;

/* How one run ended. */
typedef struct run_result {
    bool timed_out, too_big;
    int status;                /* wait status */
} run_result;

int cf_command_check_opts(const cf_adapter_opts *o, char *err, size_t errlen)
{
    if (!o || !o->command || !*o->command) {
        snprintf(err, errlen, "--unwinder command needs --unwinder-cmd 'COMMAND ... %s'",
                 CF_COMMAND_PID_PLACEHOLDER);
        return CF_E_NOTFOUND;
    }
    if (!strstr(o->command, CF_COMMAND_PID_PLACEHOLDER)) {
        snprintf(err, errlen, "--unwinder-cmd: the command has no %s: it cannot know which process to sample",
                 CF_COMMAND_PID_PLACEHOLDER);
        return CF_E_FORMAT;
    }
    if (o->command_fields) {
        unsigned mask = 0;
        char bad[CF_NAME_SHOWN];
        if (cf_fields_parse(o->command_fields, &mask, bad, sizeof bad) != 0) {
            snprintf(err, errlen, "--unwinder-cmd-fields: unknown field \"%s\"", bad);
            return CF_E_FORMAT;
        }
        if (!(mask & (CF_FIELD_NATIVE_ID | CF_FIELD_THREAD_ID))) {
            snprintf(err, errlen, "--unwinder-cmd-fields: include native_id or thread_id, or threads cannot be "
                                  "matched with the target's threads");
            return CF_E_FORMAT;
        }
    }
    return CF_OK;
}

/* The template with every placeholder replaced by the pid (a number: no
 * user text is ever put into the shell string). */
static char *substitute_pid(const char *tmpl, int pid)
{
    cf_strbuf sb;
    cf_sb_init(&sb);
    const size_t plen = strlen(CF_COMMAND_PID_PLACEHOLDER);
    for (const char *p = tmpl; *p;) {
        const char *hit = strstr(p, CF_COMMAND_PID_PLACEHOLDER);
        if (!hit) {
            cf_sb_puts(&sb, p);
            break;
        }
        cf_sb_append(&sb, p, (size_t)(hit - p));
        cf_sb_printf(&sb, "%d", pid);
        p = hit + plen;
    }
    if (sb.failed || !sb.data) {
        cf_sb_free(&sb);
        return NULL;
    }
    return sb.data;
}

static int command_attach(const cf_adapter_def *d, const cf_target *t, void **state, char *err, size_t errlen)
{
    const cf_adapter_opts *o = d->data;
    *state = NULL;
    int rc = cf_command_check_opts(o, err, errlen);
    if (rc)
        return CF_E_UNWINDER;
    command_state *st = calloc(1, sizeof *st);
    if (!st)
        return CF_E_NOMEM;
    cf_sb_init(&st->out);
    st->timeout = t->timeout;
    if (o->command_fields)
        cf_fields_parse(o->command_fields, &st->declared, NULL, 0);
    st->cmdline = substitute_pid(o->command, t->pid);
    if (!st->cmdline) {
        free(st);
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    *state = st;
    return CF_OK;
}

static void command_detach(void *state)
{
    command_state *st = state;
    if (!st)
        return;
    free(st->cmdline);
    cf_sb_free(&st->out);
    free(st);
}

/* Keeps the last CF_TAIL_BYTES of stderr. */
static void keep_tail(command_state *st, const char *buf, size_t n)
{
    if (n >= sizeof st->tail) {
        memcpy(st->tail, buf + n - sizeof st->tail, sizeof st->tail);
        st->tail_len = sizeof st->tail;
        return;
    }
    if (st->tail_len + n > sizeof st->tail) {
        size_t drop = st->tail_len + n - sizeof st->tail;
        memmove(st->tail, st->tail + drop, st->tail_len - drop);
        st->tail_len -= drop;
    }
    memcpy(st->tail + st->tail_len, buf, n);
    st->tail_len += n;
}

/* Reads what fd has; false at end of file (or a read error). */
static bool drain(int fd, command_state *st, bool is_stdout, run_result *res)
{
    char buf[READ_CHUNK];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return errno == EAGAIN;
        if (got == 0)
            return false;
        if (!is_stdout) {
            keep_tail(st, buf, (size_t)got);
            continue;
        }
        if (st->out.len + (size_t)got > CF_COMMAND_MAX_OUTPUT || cf_sb_append(&st->out, buf, (size_t)got)) {
            res->too_big = st->out.len + (size_t)got > CF_COMMAND_MAX_OUTPUT;
            return false;
        }
    }
}

/* Reads both pipes until they close, the deadline passes or stdout grows
 * too big; once the command itself has exited, reading goes on for at
 * most CF_COMMAND_DRAIN_S (a background child may keep stdout open). */
static int pump(command_state *st, cf_child *child, int fds[2], run_result *res, char *err, size_t errlen)
{
    double deadline = cf_now() + st->timeout;
    bool open[2] = {true, true};
    while (open[0] || open[1]) {
        if (cf_interrupted())
            return CF_E_INTERRUPTED;
        if (!child->exited && cf_child_wait_exit(child, 0.0) == CF_OK) {
            double drain_end = cf_now() + CF_COMMAND_DRAIN_S;
            if (drain_end < deadline)
                deadline = drain_end;
        }
        double left = deadline - cf_now();
        if (left <= 0) {
            res->timed_out = !child->exited;
            return CF_OK;
        }
        struct pollfd pfd[2];
        nfds_t n = 0;
        for (int i = 0; i < 2; i++)
            if (open[i])
                pfd[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        int ms = left * 1000.0 < CF_POLL_SLICE_MS ? (int)(left * 1000.0) + 1 : CF_POLL_SLICE_MS;
        int r = poll(pfd, n, ms);
        if (r < 0 && errno != EINTR) {
            snprintf(err, errlen, "reading the unwinder command's output: poll: %s", strerror(errno));
            return CF_E_UNWINDER;
        }
        for (nfds_t k = 0; r > 0 && k < n; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int i = pfd[k].fd == fds[0] ? 0 : 1;
            open[i] = drain(fds[i], st, i == 0, res);
            if (res->too_big)
                return CF_OK;
        }
    }
    int rc = cf_child_wait_exit(child, deadline);
    if (rc == CF_E_TIMEOUT) {
        res->timed_out = true;
        return CF_OK;
    }
    return rc;
}

/* Runs the command once; res says how it ended. */
static int run(command_state *st, run_result *res, char *err, size_t errlen)
{
    int out[2] = {-1, -1}, errp[2] = {-1, -1};
    int rc = CF_OK;
    char *argv[] = {CF_COMMAND_SHELL, "-c", st->cmdline, NULL};
    char why[CF_ERRMSG_LEN];
    cf_child child;
    memset(&child, 0, sizeof child);
    memset(res, 0, sizeof *res);
    cf_sb_clear(&st->out);
    st->tail_len = 0;
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot run the unwinder command: pipe: %s", strerror(errno));
        rc = CF_E_UNWINDER;
        goto out;
    }
    cf_spawn_req req = {.argv = argv, .stdout_fd = out[1], .stderr_fd = errp[1], .channel = false};
    if (cf_spawn(&req, &child, why, sizeof why) != CF_OK) {
        snprintf(err, errlen, "cannot run the unwinder command: %s", why);
        rc = CF_E_UNWINDER;
        goto out;
    }
    close(out[1]);
    close(errp[1]);
    out[1] = errp[1] = -1;
    if (fcntl(out[0], F_SETFL, O_NONBLOCK) != 0 || fcntl(errp[0], F_SETFL, O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot run the unwinder command: fcntl: %s", strerror(errno));
        rc = CF_E_UNWINDER;
        goto out;
    }
    rc = pump(st, &child, (int[2]){out[0], errp[0]}, res, err, errlen);
    if (rc == CF_OK && st->out.failed) {
        snprintf(err, errlen, "out of memory");
        rc = CF_E_NOMEM;
    }
out:
    cf_child_kill(&child);  /* the whole group: anything the command left behind */
    res->status = child.status;
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    return rc;
}

/* err = what, then the end of the command's stderr, as much as fits. */
static void with_stderr(const command_state *st, const char *what, char *err, size_t errlen)
{
    size_t n = st->tail_len;
    while (n > 0 && strchr(" \t\r\n", st->tail[n - 1]))
        n--;
    cf_strbuf sb;
    cf_sb_init(&sb);
    cf_sb_append_sanitized(&sb, st->tail, n);
    const char *text = cf_sb_str(&sb);
    size_t len = strlen(text);
    int used = snprintf(err, errlen, "%s; stderr: ", what);
    if (used < 0 || (size_t)used >= errlen) {
        cf_sb_free(&sb);
        return;
    }
    size_t room = errlen - (size_t)used - 1;
    if (n == 0) {
        snprintf(err + used, errlen - (size_t)used, "(empty)");
    } else if (len <= room) {
        snprintf(err + used, errlen - (size_t)used, "%s", text);
    } else if (room > 3) {
        /* The end matters most: cut from the front at a character boundary. */
        size_t from = len - (room - 3);
        while (from < len && ((unsigned char)text[from] & 0xC0) == 0x80)
            from++;
        snprintf(err + used, errlen - (size_t)used, "...%s", text + from);
    }
    cf_sb_free(&sb);
}

static void describe_failure(const command_state *st, const run_result *res, char *err, size_t errlen)
{
    char what[CF_REASON_LEN];
    int s = res->status;
    if (res->timed_out) {
        snprintf(what, sizeof what, "the unwinder command did not finish within %.1f s (killed with its process "
                                    "group)", st->timeout);
    } else if (res->too_big) {
        snprintf(what, sizeof what, "the unwinder command printed more than %u bytes on stdout (killed)",
                 CF_COMMAND_MAX_OUTPUT);
    } else if (WIFSIGNALED(s)) {
        snprintf(what, sizeof what, "the unwinder command was killed by signal %d (%s)", WTERMSIG(s),
                 strsignal(WTERMSIG(s)));
    } else if (WIFEXITED(s)) {
        int code = WEXITSTATUS(s);
        const char *hint = code == SHELL_NOT_FOUND        ? " (the shell's \"command not found\")"
                           : code == SHELL_NOT_EXECUTABLE ? " (the shell's \"cannot execute\")"
                                                          : "";
        if (code > SHELL_SIGNAL_BASE && code - SHELL_SIGNAL_BASE < NSIG)
            snprintf(what, sizeof what, "the unwinder command failed with exit status %d (a shell's report of "
                                        "signal %d, %s)", code, code - SHELL_SIGNAL_BASE,
                     strsignal(code - SHELL_SIGNAL_BASE));
        else
            snprintf(what, sizeof what, "the unwinder command failed with exit status %d%s", code, hint);
    } else {
        char desc[CF_REASON_LEN / 2];
        cf_describe_status(s, desc, sizeof desc);
        snprintf(what, sizeof what, "the unwinder command ended with %s", desc);
    }
    with_stderr(st, what, err, errlen);
}

static int command_sample(void *state, cf_sample *out, char *err, size_t errlen)
{
    command_state *st = state;
    run_result res;
    int rc = run(st, &res, err, errlen);
    if (rc)
        return rc;
    if (res.timed_out) {
        describe_failure(st, &res, err, errlen);
        return CF_E_TIMEOUT;
    }
    if (res.too_big || !WIFEXITED(res.status) || WEXITSTATUS(res.status) != 0) {
        describe_failure(st, &res, err, errlen);
        return CF_E_UNWINDER;
    }
    char why[CF_ERRMSG_LEN];
    cf_sample_reset(out, out->fields);
    /* cf_sb_str is "" for an empty buffer: give the parser a writable one. */
    if (!st->out.data && cf_sb_append(&st->out, "", 0) != CF_OK)
        return CF_E_NOMEM;
    rc = cf_protocol_parse(st->out.data, st->out.len, st->declared, out, why, sizeof why);
    if (rc == CF_E_NOMEM)
        return rc;
    if (rc) {
        char what[CF_ERRMSG_LEN + 64];
        snprintf(what, sizeof what, "the unwinder command's output is not a protocol document: %s", why);
        with_stderr(st, what, err, errlen);
        return CF_E_UNWINDER;
    }
    return CF_OK;
}

size_t cf_command_defs(cf_adapter_def *out, size_t cap, const cf_adapter_opts *o)
{
    char err[CF_ERRMSG_LEN];
    if (cap == 0 || cf_command_check_opts(o, err, sizeof err) != CF_OK)
        return 0;
    unsigned fields = CF_PROTOCOL_FIELDS;
    if (o->command_fields)
        cf_fields_parse(o->command_fields, &fields, NULL, 0);
    out[0] = (cf_adapter_def){
        .unwinder = "command",
        .config = "",
        .fields = fields,
        .samples_per_checkpoint = CF_SAMPLES_PER_CHECKPOINT,
        .applies = NULL,
        .attach = command_attach,
        .sample = command_sample,
        .detach = command_detach,
        .data = o,
    };
    return 1;
}
